/**
 * The outbound queue: the only SQL on `outbound_queue`. Rows are claimed in batches (PostgreSQL
 * FOR UPDATE SKIP LOCKED; SQLite's single writer); a claim moves `run_at` to the end of the lease, so a
 * crashed node's messages simply become due again. A row is deleted in the transaction that records the
 * message's final outcome, and rescheduled in the one that records a deferral.
 */
import { and, asc, count, eq, gt, inArray, isNotNull, isNull, lte, min } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'
import { columnList, fromRaw, insertRows } from '../../db/sqlite-statements'

export type QueueRow = typeof import('../../db/schema').pgSchema.outboundQueue.$inferSelect

/** Queues rows inside the caller's transaction (they commit with the emails they belong to). */
export async function insertQueueRows(store: Store, db: Db, rows: QueueRow[]): Promise<void> {
  if (!rows.length) return
  const q = store.t.outboundQueue
  if (store.dialect === 'sqlite') return insertRows(db, q, rows)
  for (let i = 0; i < rows.length; i += 500) await db.insert(q).values(rows.slice(i, i + 500))
}

/** Claims up to `limit` due rows for `workerId` and marks their emails SENDING. */
export async function claimDue(store: Store, workerId: string, limit: number, leaseMs: number, now = new Date()): Promise<QueueRow[]> {
  const { outboundQueue: q, emails: e } = store.t
  const until = new Date(now.getTime() + leaseMs)
  return store.tx(async (db) => {
    if (store.dialect === 'sqlite') {
      // The single writer holds the transaction: no other claim can interleave.
      const client = sqliteConnection(db)
      const raw = client.query(`UPDATE outbound_queue SET run_at = ?1, locked_by = ?2, locked_until = ?1
        WHERE email_id IN (SELECT email_id FROM outbound_queue WHERE run_at <= ?3 ORDER BY priority, run_at LIMIT ?4)
        RETURNING ${columnList(q)}`).all(until.getTime(), workerId, now.getTime(), limit) as Array<Record<string, unknown>>
      const rows = raw.map((r) => fromRaw<QueueRow>(q, r))
      if (rows.length) {
        client.query(`UPDATE emails SET status = 'SENDING', updated_at = ? WHERE id IN (SELECT value FROM json_each(?)) AND status = 'PENDING'`)
          .run(now.getTime(), JSON.stringify(rows.map((r) => r.emailId)))
      }
      return rows
    }
    let due = db.select({ id: q.emailId }).from(q).where(lte(q.runAt, now)).orderBy(asc(q.priority), asc(q.runAt)).limit(limit)
    due = due.for('update', { skipLocked: true }) as typeof due
    const rows = await db.update(q).set({ runAt: until, lockedBy: workerId, lockedUntil: until })
      .where(inArray(q.emailId, due)).returning()
    if (rows.length) {
      await db.update(e).set({ status: 'SENDING', updatedAt: now })
        .where(and(inArray(e.id, rows.map((r) => r.emailId)), eq(e.status, 'PENDING')))
    }
    return rows
  })
}

/** Extends the lease of rows this worker is still delivering (a heartbeat); returns how many. */
export async function renewLeases(store: Store, workerId: string, emailIds: string[], leaseMs: number, now = new Date()): Promise<number> {
  if (!emailIds.length) return 0
  const q = store.t.outboundQueue
  const until = new Date(now.getTime() + leaseMs)
  let n = 0
  for (let i = 0; i < emailIds.length; i += 500) {
    const rows = await store.tx((db) => db.update(q).set({ runAt: until, lockedUntil: until })
      .where(and(eq(q.lockedBy, workerId), inArray(q.emailId, emailIds.slice(i, i + 500)))).returning({ id: q.emailId }))
    n += rows.length
  }
  return n
}

/**
 * Releases the leases of workers on this host whose process is gone (a crash or kill -9), so their
 * messages are retried now instead of when the lease expires. Worker ids are `host:pid:random`; a pid
 * that is alive (even if reused by another process) keeps its leases until they expire.
 */
export async function releaseDeadLeases(store: Store, host: string, isAlive: (pid: number) => boolean, now = new Date()): Promise<number> {
  const q = store.t.outboundQueue
  const holders = await store.db.selectDistinct({ by: q.lockedBy }).from(q).where(and(isNotNull(q.lockedBy), gt(q.lockedUntil, now)))
  const dead = holders.map((h) => h.by!).filter((by) => {
    const [h, pid] = by.split(':')
    return h === host && /^\d+$/.test(pid ?? '') && Number(pid) !== process.pid && !isAlive(Number(pid))
  })
  if (!dead.length) return 0
  const rows = await store.tx((db) => db.update(q).set({ runAt: now, lockedBy: null, lockedUntil: null })
    .where(inArray(q.lockedBy, dead)).returning({ id: q.emailId }))
  return rows.length
}

/**
 * Reschedules a claimed row after a deferral. Only the lease holder may (a row whose lease expired and
 * was claimed again belongs to the new holder); returns false when this worker no longer holds it.
 */
export async function rescheduleRow(store: Store, db: Db, r: { emailId: string; workerId: string; runAt: Date; attempts: number; lastError: string | null }): Promise<boolean> {
  const q = store.t.outboundQueue
  const rows = await db.update(q).set({ runAt: r.runAt, attempts: r.attempts, lastError: r.lastError, lockedBy: null, lockedUntil: null })
    .where(and(eq(q.emailId, r.emailId), eq(q.lockedBy, r.workerId))).returning({ id: q.emailId })
  return rows.length > 0
}

/** Deletes rows (final outcomes); returns the ids actually deleted, so an outcome is applied once. */
export async function deleteRows(store: Store, db: Db, emailIds: string[]): Promise<string[]> {
  if (!emailIds.length) return []
  if (store.dialect === 'sqlite') {
    const rows = sqliteConnection(db).query('DELETE FROM outbound_queue WHERE email_id IN (SELECT value FROM json_each(?)) RETURNING email_id')
      .all(JSON.stringify(emailIds)) as Array<{ email_id: string }>
    return rows.map((r) => r.email_id)
  }
  const q = store.t.outboundQueue
  const rows = await db.delete(q).where(inArray(q.emailId, emailIds)).returning({ id: q.emailId })
  return rows.map((r) => r.id)
}

export interface QueueStats {
  /** Messages not yet finished (queued, deferred or being delivered). */
  depth: number
  /** Due now and not claimed. */
  due: number
  /** Claimed by a worker (lease not expired). */
  inFlight: number
  /** Waiting for a retry after at least one failed attempt. */
  deferred: number
  /** The oldest message still queued. */
  oldestQueuedAt: Date | null
  /** When the next deferred message is retried. */
  nextRetryAt: Date | null
}

export async function queueStats(store: Store, now = new Date()): Promise<QueueStats> {
  const q = store.t.outboundQueue
  const db = store.db
  const [[all], [due], [leased], [deferred]] = await Promise.all([
    db.select({ n: count(), oldest: min(q.createdAt) }).from(q),
    db.select({ n: count() }).from(q).where(lte(q.runAt, now)),
    db.select({ n: count() }).from(q).where(and(isNotNull(q.lockedBy), gt(q.lockedUntil, now))),
    db.select({ n: count(), next: min(q.runAt) }).from(q).where(and(gt(q.attempts, 0), gt(q.runAt, now), isNull(q.lockedBy))),
  ])
  const asDate = (v: unknown) => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(typeof v === 'number' ? v : String(v)))
  return {
    depth: Number(all.n),
    due: Number(due.n),
    inFlight: Number(leased.n),
    deferred: Number(deferred.n),
    oldestQueuedAt: asDate(all.oldest),
    nextRetryAt: asDate(deferred.next),
  }
}

export interface DeferredEntry {
  emailId: string
  projectId: string
  to: string
  attempts: number
  nextAttemptAt: Date
  lastError: string | null
  queuedAt: Date
  expiresAt: Date
}

/** Deferred messages, soonest retry first. */
export async function deferredEntries(store: Store, limit: number, now = new Date()): Promise<DeferredEntry[]> {
  const { outboundQueue: q, emails: e } = store.t
  return store.db.select({
    emailId: q.emailId, projectId: q.projectId, to: e.toAddress, attempts: q.attempts, nextAttemptAt: q.runAt,
    lastError: q.lastError, queuedAt: q.createdAt, expiresAt: q.expiresAt,
  }).from(q).innerJoin(e, eq(e.id, q.emailId))
    .where(and(gt(q.attempts, 0), gt(q.runAt, now), isNull(q.lockedBy)))
    .orderBy(asc(q.runAt)).limit(limit)
}
