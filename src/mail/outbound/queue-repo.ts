/**
 * The outbound queue: the only SQL on `outbound_queue`. Rows are claimed in batches (PostgreSQL
 * FOR UPDATE SKIP LOCKED; SQLite's single writer); a claim moves `run_at` to the end of the lease, so a
 * crashed node's messages simply become due again. A row is deleted in the transaction that records the
 * message's final outcome, and rescheduled in the one that records a deferral.
 *
 * Why a queue of its own and not rows of the job queue (jobs/queue.ts):
 * - A row is an email, not a job: keyed by email id, inserted in batches in the transaction that creates
 *   the emails (a send of 50 recipients, a campaign batch of thousands) and deleted with the outcome. A
 *   job row carries a JSON payload, a status, a result and progress, and stays after it ends.
 * - Another claim: a batch of up to 100 for a 1,000-slot pipeline, transactional mail (priority 0)
 *   before bulk (10), the emails marked SENDING in the same transaction, skipping the recipient domains
 *   whose destination already holds its share of the pipeline. `attempts` counts SMTP
 *   verdicts, not claims, and a deferral is retried when the server asked. `run_at` doubles as the lease
 *   end, so the one index (priority, run_at) finds both due rows and expired leases.
 * - The cost (bench/queues.ts, 2,000 rows, three runs on this 2-core machine while other work loaded it,
 *   so read the ratios): queueing a message as a job (`enqueue`, one statement each) took 150-350 µs on
 *   SQLite and 1,700-1,900 µs on PostgreSQL, a queue row in a batch 5-12 µs and 150-180 µs; a claim took
 *   50-125 µs per job and 17-50 µs per queue row on SQLite, 260-290 and 180-235 µs on PostgreSQL. At
 *   ~1,000 delivered messages/s, the job path would add a fifth to two fifths of a core on SQLite.
 * What both queues share is jobs/lease.ts: holder ids, renewal, release of a dead holder's leases and
 * of what a stopping worker holds, and the wake-up signal.
 */
import { inJsonList } from '../../db/dialect'
import { insertAll } from '../../db/insert-all'
import { and, asc, count, eq, gt, isNull, lte, min, sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'
import { heldBy, leaseEnd, liveLease, type LeasedTable } from '../../jobs/lease'
import { mayClaim } from '../../jobs/nodes'
import { columnList, fromRaw } from '../../db/sqlite-statements'

export type QueueRow = typeof import('../../db/schema').pgSchema.outboundQueue.$inferSelect
type QueueTable = Store['t']['outboundQueue']

/**
 * The leases of `outbound_queue` (renewed, released and judged dead by jobs/lease.ts). `run_at` follows
 * the lease end, so a row whose lease runs out is simply due again; a released row is due now.
 */
export function outboundLeases(store: Store): LeasedTable<QueueTable> {
  const q = store.t.outboundQueue
  return {
    table: q, key: q.emailId, lockedBy: q.lockedBy, lockedUntil: q.lockedUntil,
    renewed: (until) => ({ runAt: until, lockedUntil: until }),
    released: (now) => ({ runAt: now, lockedBy: null, lockedUntil: null }),
  }
}

/** Queues rows inside the caller's transaction (they commit with the emails they belong to). */
export async function insertQueueRows(store: Store, db: Db, rows: QueueRow[]): Promise<void> {
  if (!rows.length) return
  await insertAll(store, db, store.t.outboundQueue, rows)
}

/**
 * Claims up to `limit` due rows for `workerId` and marks their emails SENDING. Rows of `skipDomains`
 * are left in the queue: the pipeline names the recipient domains whose destination already holds its
 * share (deliver.ts), so that a backlog to one destination cannot fill every claimed batch. Nothing
 * while the holder's node has no recent heartbeat (jobs/nodes.ts, mayClaim).
 */
export async function claimDue(store: Store, workerId: string, limit: number, leaseMs: number, now: Date, skipDomains: string[] = []): Promise<QueueRow[]> {
  if (!mayClaim(workerId)) return []
  const q = store.t.outboundQueue
  const until = leaseEnd(now, leaseMs)
  return store.tx(async (db) => {
    // dialect: SQLite claims with statements compiled once under its single writer; PostgreSQL with SKIP LOCKED
    if (store.dialect === 'sqlite') {
      // The single writer holds the transaction: no other claim can interleave.
      const client = sqliteConnection(db)
      const skip = skipDomains.length ? 'AND domain NOT IN (SELECT value FROM json_each(?5))' : ''
      const params = [until.getTime(), workerId, now.getTime(), limit, ...(skipDomains.length ? [JSON.stringify(skipDomains)] : [])]
      const raw = client.query(`UPDATE outbound_queue SET run_at = ?1, locked_by = ?2, locked_until = ?1
        WHERE email_id IN (SELECT email_id FROM outbound_queue WHERE run_at <= ?3 ${skip} ORDER BY priority, run_at LIMIT ?4)
        RETURNING ${columnList(q)}`).all(...params) as Array<Record<string, unknown>>
      const rows = raw.map((r) => fromRaw<QueueRow>(q, r))
      if (rows.length) {
        client.query(`UPDATE emails SET status = 'SENDING', updated_at = ? WHERE id IN (SELECT value FROM json_each(?)) AND status = 'PENDING'`)
          .run(now.getTime(), JSON.stringify(rows.map((r) => r.emailId)))
      }
      return rows
    }
    // PostgreSQL: one statement (the due rows locked, skipping those another node holds locked, leased
    // and their emails marked SENDING) instead of three awaited in turn.
    const skip = skipDomains.length ? sql`AND domain <> ALL(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(skipDomains)}::jsonb)))` : sql``
    const raw = await store.rows<Record<string, unknown>>(sql`WITH due AS (
        SELECT email_id FROM outbound_queue WHERE run_at <= ${now.toISOString()}::timestamptz ${skip}
        ORDER BY priority, run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
      ), claimed AS (
        UPDATE outbound_queue AS q SET run_at = ${until.toISOString()}::timestamptz, locked_by = ${workerId}, locked_until = ${until.toISOString()}::timestamptz
        FROM due WHERE q.email_id = due.email_id RETURNING ${sql.raw(columnList(q, 'q'))}
      ), sending AS (
        UPDATE emails SET status = 'SENDING', updated_at = ${now.toISOString()}::timestamptz
        WHERE id IN (SELECT email_id FROM claimed) AND status = 'PENDING'
      )
      SELECT * FROM claimed`, db)
    return raw.map((r) => fromRaw<QueueRow>(q, r))
    // A claim lost in a crash leaves the rows due and the emails PENDING, as an expired lease does: it
    // does not wait for the disk (the outcome's commit, which does, makes it durable with it).
  }, { durable: false })
}

/**
 * Reschedules a claimed row after a deferral. Only the lease holder may (a row whose lease expired and
 * was claimed again belongs to the new holder); returns false when this worker no longer holds it.
 */
export async function rescheduleRow(store: Store, db: Db, r: { emailId: string; workerId: string; runAt: Date; attempts: number; lastError: string | null }): Promise<boolean> {
  const q = store.t.outboundQueue
  const rows = await db.update(q).set({ runAt: r.runAt, attempts: r.attempts, lastError: r.lastError, lockedBy: null, lockedUntil: null })
    .where(heldBy(outboundLeases(store), r.workerId, [r.emailId])).returning({ id: q.emailId })
  return rows.length > 0
}

/**
 * rescheduleRow of many rows (a recorder batch's deferrals); returns the ids this worker still held, which
 * alone were rescheduled. One statement on PostgreSQL.
 */
export async function rescheduleRows(store: Store, db: Db, workerId: string, rows: Array<{ emailId: string; runAt: Date; attempts: number; lastError: string | null }>): Promise<Set<string>> {
  // dialect: PostgreSQL reschedules a batch in one statement; SQLite row by row (no round trips)
  if (store.dialect === 'sqlite' || rows.length <= 1) {
    const mine = new Set<string>()
    for (const r of rows) if (await rescheduleRow(store, db, { ...r, workerId })) mine.add(r.emailId)
    return mine
  }
  const payload = JSON.stringify(rows.map((r) => ({ email_id: r.emailId, run_at: r.runAt.toISOString(), attempts: r.attempts, last_error: r.lastError })))
  const done = await store.rows<{ email_id: string }>(sql`UPDATE outbound_queue SET run_at = x.run_at, attempts = x.attempts, last_error = x.last_error, locked_by = NULL, locked_until = NULL
    FROM jsonb_to_recordset(${payload}::jsonb) AS x(email_id text, run_at timestamptz, attempts integer, last_error text)
    WHERE outbound_queue.email_id = ANY(ARRAY(SELECT jsonb_array_elements(${payload}::jsonb) ->> 'email_id'))
      AND outbound_queue.email_id = x.email_id AND outbound_queue.locked_by = ${workerId}
    RETURNING outbound_queue.email_id`, db)
  return new Set(done.map((r) => r.email_id))
}

/** Deletes rows (final outcomes); returns the ids actually deleted, so an outcome is applied once. */
export async function deleteRows(store: Store, db: Db, emailIds: string[]): Promise<string[]> {
  if (!emailIds.length) return []
  // The ids as one JSON parameter on both stores (a batch of outcomes can name hundreds).
  const rows = await store.rows<{ email_id: string }>(sql`DELETE FROM outbound_queue WHERE ${inJsonList(store, sql.raw('email_id'), emailIds)} RETURNING email_id`, db)
  return rows.map((r) => r.email_id)
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

export async function queueStats(store: Store, now: Date): Promise<QueueStats> {
  const q = store.t.outboundQueue
  const db = store.db
  const [[all], [due], [leased], [deferred]] = await Promise.all([
    db.select({ n: count(), oldest: min(q.createdAt) }).from(q),
    db.select({ n: count() }).from(q).where(lte(q.runAt, now)),
    db.select({ n: count() }).from(q).where(liveLease(outboundLeases(store), now)),
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

/**
 * Where one email is in delivery, read from its queue row (the email's `status` stays SENDING from its
 * first claim to its outcome, as the API's status values are the contract):
 * - QUEUED: waiting for its first attempt (due now, or at `nextAttemptAt`);
 * - SENDING: claimed by a node: an attempt is under way;
 * - WAITING_RETRY: deferred (a 4xx, a connection that failed, throttling): tried again at `nextAttemptAt`;
 * - DONE: no longer queued: the status is its outcome.
 */
export type DeliveryStateName = 'QUEUED' | 'SENDING' | 'WAITING_RETRY' | 'DONE'
export interface DeliveryState { state: DeliveryStateName; nextAttemptAt: Date | null }

export async function deliveryStateOf(store: Store, projectId: string, emailId: string, now: Date): Promise<DeliveryState> {
  const q = store.t.outboundQueue
  const [row] = await store.db.select({ runAt: q.runAt, attempts: q.attempts, lockedBy: q.lockedBy, lockedUntil: q.lockedUntil })
    .from(q).where(and(eq(q.projectId, projectId), eq(q.emailId, emailId)))
  if (!row) return { state: 'DONE', nextAttemptAt: null }
  if (row.lockedBy && row.lockedUntil && row.lockedUntil > now) return { state: 'SENDING', nextAttemptAt: null }
  const later = row.runAt > now ? row.runAt : null
  return { state: row.attempts > 0 ? 'WAITING_RETRY' : 'QUEUED', nextAttemptAt: later }
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
export async function deferredEntries(store: Store, limit: number, now: Date): Promise<DeferredEntry[]> {
  const { outboundQueue: q, emails: e } = store.t
  return store.db.select({
    emailId: q.emailId, projectId: q.projectId, to: e.toAddress, attempts: q.attempts, nextAttemptAt: q.runAt,
    lastError: q.lastError, queuedAt: q.createdAt, expiresAt: q.expiresAt,
  }).from(q).innerJoin(e, eq(e.id, q.emailId))
    .where(and(gt(q.attempts, 0), gt(q.runAt, now), isNull(q.lockedBy)))
    .orderBy(asc(q.runAt)).limit(limit)
}
