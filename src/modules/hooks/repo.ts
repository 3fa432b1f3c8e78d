import { and, asc, desc, eq, gte, inArray, isNotNull, lt, lte, notInArray, or, sql, type SQL } from 'drizzle-orm'
import { compiledRead, type Db, type Store } from '../../db/client'
import { skipLocked } from '../../db/dialect'
import { heldBy, leaseEnd, type LeasedTable } from '../../jobs/lease'
import { mayClaim } from '../../jobs/nodes'

/**
 * The only SQL on `webhook_endpoints`, `webhook_deliveries` and `webhook_attempts`. Every function that
 * reads or writes one project's rows takes its id; the delivery queue's claim and outcome writes work on
 * rows the caller holds (by lease), across projects, as the outbound queue does.
 */

export type EndpointRow = typeof import('../../db/schema').pgSchema.webhookEndpoints.$inferSelect
export type DeliveryRow = typeof import('../../db/schema').pgSchema.webhookDeliveries.$inferSelect
export type AttemptRow = typeof import('../../db/schema').pgSchema.webhookAttempts.$inferSelect
type DeliveriesTable = Store['t']['webhookDeliveries']

// ---- endpoints ----

export async function insertEndpoint(store: Store, row: EndpointRow): Promise<void> {
  await store.tx((db) => db.insert(store.t.webhookEndpoints).values(row))
}

export async function listEndpoints(store: Store, projectId: string): Promise<EndpointRow[]> {
  const e = store.t.webhookEndpoints
  return store.db.select().from(e).where(eq(e.projectId, projectId)).orderBy(asc(e.createdAt), asc(e.id))
}

export async function findEndpoint(store: Store, projectId: string, id: string, db: Db = store.db): Promise<EndpointRow | null> {
  const e = store.t.webhookEndpoints
  const [row] = await db.select().from(e).where(and(eq(e.projectId, projectId), eq(e.id, id))).limit(1)
  return row ?? null
}

/** The project ($1) has an enabled endpoint, as SQL (also events/interest.ts). */
export const ENABLED_ENDPOINT_SQL = 'SELECT 1 FROM webhook_endpoints WHERE project_id = $1 AND enabled = true'
const anyEnabled = compiledRead(`${ENABLED_ENDPOINT_SQL} LIMIT 1`)

/** Whether the project has an enabled endpoint (asked first for every batch of the event stream). */
export async function hasEnabledEndpoint(store: Store, projectId: string): Promise<boolean> {
  return (await anyEnabled(store)(projectId)).length > 0
}

/** The enabled endpoints of a project (the event consumer's look-up). */
export async function enabledEndpoints(store: Store, projectId: string, db: Db = store.db): Promise<EndpointRow[]> {
  const e = store.t.webhookEndpoints
  return db.select().from(e).where(and(eq(e.projectId, projectId), eq(e.enabled, true)))
}

export async function updateEndpoint(store: Store, db: Db, projectId: string, id: string, set: Partial<EndpointRow>): Promise<EndpointRow | null> {
  const e = store.t.webhookEndpoints
  const [row] = await db.update(e).set(set).where(and(eq(e.projectId, projectId), eq(e.id, id))).returning()
  return row ?? null
}

export async function deleteEndpoint(store: Store, projectId: string, id: string): Promise<boolean> {
  const e = store.t.webhookEndpoints
  const rows = await store.tx((db) => db.delete(e).where(and(eq(e.projectId, projectId), eq(e.id, id))).returning({ id: e.id }))
  return rows.length > 0
}

/** Endpoints by id, of any project (the dispatcher loads those of the deliveries it claimed). */
export async function endpointsByIds(store: Store, ids: string[]): Promise<EndpointRow[]> {
  if (!ids.length) return []
  const e = store.t.webhookEndpoints
  return store.db.select().from(e).where(inArray(e.id, ids))
}

// ---- deliveries: creation ----

/** Inserts deliveries; one per (endpoint, event) ever, so an event handled twice adds nothing. Returns how many were new. */
export async function insertDeliveries(store: Store, db: Db, rows: DeliveryRow[]): Promise<number> {
  const d = store.t.webhookDeliveries
  let n = 0
  for (let i = 0; i < rows.length; i += 200) {
    const got = await db.insert(d).values(rows.slice(i, i + 200)).onConflictDoNothing({ target: [d.endpointId, d.eventId] }).returning({ id: d.id })
    n += got.length
  }
  return n
}

// ---- deliveries: the queue ----

/** The leases of `webhook_deliveries`: `next_attempt_at` follows the lease end, so a lost lease is simply due again. */
export function deliveryLeases(store: Store): LeasedTable<DeliveriesTable> {
  const d = store.t.webhookDeliveries
  return {
    table: d, key: d.id, lockedBy: d.lockedBy, lockedUntil: d.lockedUntil,
    renewed: (until) => ({ nextAttemptAt: until, lockedUntil: until }),
    released: (now) => ({ nextAttemptAt: now, lockedBy: null, lockedUntil: null }),
  }
}

/**
 * Claims due deliveries for `holder`: at most `limit`, and at most `room(endpointId)` of each endpoint
 * (the dispatcher's per-endpoint cap, minus what it already holds). Endpoints in `skip` (full) are not
 * looked at, so a backlog to one endpoint never fills a claim. PostgreSQL locks the candidates with
 * SKIP LOCKED; the claim re-checks due-ness, so two nodes never claim one row.
 */
export async function claimDue(store: Store, holder: string, limit: number, room: (endpointId: string) => number, leaseMs: number, now: Date, skip: string[]): Promise<DeliveryRow[]> {
  // Nothing while the holder's node has no recent heartbeat (jobs/nodes.ts).
  if (limit <= 0 || !mayClaim(holder)) return []
  const d = store.t.webhookDeliveries
  const until = leaseEnd(now, leaseMs)
  const due = and(eq(d.status, 'pending'), lte(d.nextAttemptAt, now))
  return store.tx(async (db) => {
    const where = skip.length ? and(due, notInArray(d.endpointId, skip)) : due
    const q = db.select({ id: d.id, endpointId: d.endpointId }).from(d).where(where).orderBy(asc(d.nextAttemptAt)).limit(limit * 2)
    const candidates = await skipLocked(store, q)
    const taken = new Map<string, number>()
    const ids: string[] = []
    for (const c of candidates) {
      const n = taken.get(c.endpointId) ?? 0
      if (n >= room(c.endpointId)) continue
      taken.set(c.endpointId, n + 1)
      ids.push(c.id)
      if (ids.length >= limit) break
    }
    if (!ids.length) return []
    return db.update(d).set({ nextAttemptAt: until, lockedBy: holder, lockedUntil: until, updatedAt: now })
      .where(and(inArray(d.id, ids), due)).returning()
  })
}

/** What one attempt changed, written by the holder of the delivery's lease. */
export interface Outcome {
  delivery: DeliveryRow
  holder: string
  /** The attempt's log row; none when no request was made (the endpoint was disabled meanwhile). */
  attempt: AttemptRow | null
  /** The delivery's new state. */
  set: Pick<DeliveryRow, 'status' | 'nextAttemptAt' | 'lastStatus' | 'lastError' | 'deliveredAt' | 'attempts' | 'firstAttemptAt'>
}

/**
 * Writes outcomes in the caller's transaction: each attempt row, and each delivery's new state where the
 * writer still holds its lease (returns the ids it could write; another holder's work is left alone).
 */
export async function recordOutcomes(store: Store, db: Db, outcomes: Outcome[], now: Date): Promise<Set<string>> {
  const d = store.t.webhookDeliveries
  const written = new Set<string>()
  // Successes of one holder with the same status share one statement (the common case: a whole batch).
  const groups = new Map<string, Outcome[]>()
  const single: Outcome[] = []
  for (const o of outcomes) {
    if (o.set.status !== 'delivered' || o.set.attempts !== o.delivery.attempts + 1) { single.push(o); continue }
    const key = `${o.holder}\n${o.set.lastStatus}`
    const g = groups.get(key)
    if (g) g.push(o)
    else groups.set(key, [o])
  }
  for (const g of groups.values()) {
    for (let i = 0; i < g.length; i += 500) {
      const chunk = g.slice(i, i + 500)
      const rows = await db.update(d).set({
        status: 'delivered', nextAttemptAt: null, lastStatus: chunk[0].set.lastStatus, lastError: null, deliveredAt: now,
        attempts: sql`${d.attempts} + 1`, firstAttemptAt: sql`COALESCE(${d.firstAttemptAt}, ${d.updatedAt})`,
        lockedBy: null, lockedUntil: null, updatedAt: now,
      }).where(heldBy(deliveryLeases(store), chunk[0].holder, chunk.map((o) => o.delivery.id))).returning({ id: d.id })
      for (const r of rows) written.add(r.id)
    }
  }
  for (const o of single) {
    const rows = await db.update(d).set({ ...o.set, lockedBy: null, lockedUntil: null, updatedAt: now })
      .where(heldBy(deliveryLeases(store), o.holder, [o.delivery.id])).returning({ id: d.id })
    if (rows.length) written.add(o.delivery.id)
  }
  const attempts = outcomes.flatMap((o) => (o.attempt && written.has(o.delivery.id) ? [o.attempt] : []))
  for (let i = 0; i < attempts.length; i += 200) await db.insert(store.t.webhookAttempts).values(attempts.slice(i, i + 200))
  return written
}

/** After a success: the endpoint is no longer failing. */
export async function markSucceeded(store: Store, db: Db, endpointIds: string[]): Promise<void> {
  if (!endpointIds.length) return
  const e = store.t.webhookEndpoints
  await db.update(e).set({ failingSince: null }).where(and(inArray(e.id, endpointIds), isNotNull(e.failingSince)))
}

/** After a failure: the endpoint's run of failures starts now unless it already runs. Returns the endpoints' rows. */
export async function markFailing(store: Store, db: Db, endpointIds: string[], now: Date): Promise<EndpointRow[]> {
  if (!endpointIds.length) return []
  const e = store.t.webhookEndpoints
  await db.update(e).set({ failingSince: now }).where(and(inArray(e.id, endpointIds), sql`${e.failingSince} IS NULL`))
  return db.select().from(e).where(inArray(e.id, endpointIds))
}

/**
 * Disables an endpoint (410 Gone, five days of failures) with the reason the project sees, and fails its
 * pending deliveries that nobody holds. True when it was enabled.
 */
export async function disableEndpoint(store: Store, db: Db, endpointId: string, reason: string, now: Date): Promise<boolean> {
  const e = store.t.webhookEndpoints
  const rows = await db.update(e).set({ enabled: false, disabledReason: reason, disabledAt: now, updatedAt: now })
    .where(and(eq(e.id, endpointId), eq(e.enabled, true))).returning({ id: e.id })
  await failPending(store, db, endpointId, 'The endpoint is disabled', now)
  return rows.length > 0
}

/** Fails the pending deliveries of an endpoint that no worker holds now (disabled endpoints). */
export async function failPending(store: Store, db: Db, endpointId: string, why: string, now: Date): Promise<number> {
  const d = store.t.webhookDeliveries
  const free = or(sql`${d.lockedBy} IS NULL`, lt(d.lockedUntil, now))
  const rows = await db.update(d).set({ status: 'failed', nextAttemptAt: null, lastError: why, lockedBy: null, lockedUntil: null, updatedAt: now })
    .where(and(eq(d.endpointId, endpointId), eq(d.status, 'pending'), free)).returning({ id: d.id })
  return rows.length
}

// ---- deliveries: the log and replays ----

export async function findDelivery(store: Store, projectId: string, endpointId: string, id: string): Promise<DeliveryRow | null> {
  const d = store.t.webhookDeliveries
  const [row] = await store.db.select().from(d).where(and(eq(d.projectId, projectId), eq(d.endpointId, endpointId), eq(d.id, id))).limit(1)
  return row ?? null
}

/** Newest first, keyset on (createdAt, id). */
export async function listDeliveries(store: Store, projectId: string, endpointId: string, f: { status?: string }, limit: number, before: { at: Date; id: string } | null): Promise<DeliveryRow[]> {
  const d = store.t.webhookDeliveries
  const conds: SQL[] = [eq(d.projectId, projectId), eq(d.endpointId, endpointId)]
  if (f.status) conds.push(eq(d.status, f.status))
  if (before) conds.push(or(lt(d.createdAt, before.at), and(eq(d.createdAt, before.at), lt(d.id, before.id))) as SQL)
  return store.db.select().from(d).where(and(...conds)).orderBy(desc(d.createdAt), desc(d.id)).limit(limit)
}

/** An endpoint's attempts, newest first (keyset on createdAt, id); of one delivery when given. */
export async function listAttempts(store: Store, projectId: string, endpointId: string, f: { deliveryId?: string }, limit: number, before: { at: Date; id: string } | null): Promise<AttemptRow[]> {
  const a = store.t.webhookAttempts
  const conds: SQL[] = [eq(a.projectId, projectId), eq(a.endpointId, endpointId)]
  if (f.deliveryId) conds.push(eq(a.deliveryId, f.deliveryId))
  if (before) conds.push(or(lt(a.createdAt, before.at), and(eq(a.createdAt, before.at), lt(a.id, before.id))) as SQL)
  return store.db.select().from(a).where(and(...conds)).orderBy(desc(a.createdAt), desc(a.id)).limit(limit)
}

/**
 * Makes deliveries of an endpoint due again now, with a fresh retry window: one (`ids`), or every failed
 * one created since `since`. A delivery in flight (pending and held) is left alone. Returns the ids.
 */
export async function requeue(store: Store, db: Db, projectId: string, endpointId: string, which: { ids: string[] } | { failedSince: Date }, now: Date): Promise<string[]> {
  const d = store.t.webhookDeliveries
  const conds: SQL[] = [eq(d.projectId, projectId), eq(d.endpointId, endpointId)]
  if ('ids' in which) {
    conds.push(inArray(d.id, which.ids), or(sql`${d.status} <> 'pending'`, sql`${d.lockedBy} IS NULL`, lt(d.lockedUntil, now)) as SQL)
  } else {
    conds.push(eq(d.status, 'failed'), gte(d.createdAt, which.failedSince))
  }
  const rows = await db.update(d).set({ status: 'pending', nextAttemptAt: now, firstAttemptAt: null, lockedBy: null, lockedUntil: null, updatedAt: now })
    .where(and(...conds)).returning({ id: d.id })
  return rows.map((r) => r.id)
}

// ---- housekeeping ----

/** Deletes finished deliveries (and their attempts, by cascade) created before `before`. Returns how many. */
export async function pruneFinished(store: Store, before: Date, max = 5000): Promise<number> {
  const d = store.t.webhookDeliveries
  return store.tx(async (db) => {
    const old = db.select({ id: d.id }).from(d).where(and(inArray(d.status, ['delivered', 'failed']), lt(d.createdAt, before))).limit(max)
    const rows = await db.delete(d).where(inArray(d.id, old)).returning({ id: d.id })
    return rows.length
  })
}
