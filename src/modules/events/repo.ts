import { and, asc, count, desc, eq, gte, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { compiledRead, sqliteConnection, type Db, type Store } from '../../db/client'
import { statementRows } from '../../db/statement'
import { deleteCounted, inJsonList, jsonArrayRows, jsonElement, jsonValue, moment, momentParam, noIndex, rowsOfIds, skipLocked, tryTxLock, utcDay, writerSlot } from '../../db/dialect'
import { columnList, fromRaw } from '../../db/sqlite-statements'
import { activityHour, isCountedEvent } from './counted'
import { carriesBase, emailBase, lacksBase, withBase, type EmailBase } from './email-base'
import { allEventsOf, countInline, inlinePage, newestFirst } from './inline'
import type { EventRow } from './stream'

/** The only SQL of the events module. Every function takes the project id. */

export interface EventWithContact extends EventRow { contactEmail: string | null }

/**
 * Inserts event rows in `db`'s transaction: the one insert path of events (insertSameEvents below is its
 * bulk form). It also sets `campaign_id` to the campaign of the event's email and adds the counted types
 * to `activity_counts` (addToActivityCounts), on both stores: insert triggers did it on PostgreSQL until migration
 * 0032; on SQLite an insert trigger, even one whose WHEN was false, made every event insert cost about a
 * quarter more (migration 0026). The delete and update triggers stay (a contact's cascade, a moved event).
 * The statement differs by store for speed: SQLite (the hot path of every track, on the writer thread)
 * runs one statement compiled once on the connection per row; PostgreSQL one statement for the batch,
 * the rows as one JSON parameter (one round trip, and no statement text that grows with the batch).
 */
export async function insertEvents(store: Store, db: Db, rows: EventRow[]): Promise<void> {
  if (!rows.length) return
  // dialect: SQLite inserts per row with a statement compiled once; PostgreSQL one statement for the batch
  if (store.dialect === 'sqlite') {
    const insert = sqliteConnection(db).query(`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at, campaign_id)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE WHEN ?6 IS NULL THEN NULL ELSE (SELECT campaign_id FROM emails WHERE id = ?6) END)`)
    for (const r of rows) insert.run(r.id, r.projectId, r.contactId, r.name, JSON.stringify(r.data), r.emailId, r.createdAt.getTime())
  } else {
    const json = JSON.stringify(rows.map((r) => ({ id: r.id, p: r.projectId, c: r.contactId, n: r.name, d: r.data, e: r.emailId, t: r.createdAt.toISOString() })))
    await store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at, campaign_id)
      SELECT r.id, r.p, r.c, r.n, r.d, r.e, r.t, CASE WHEN r.e IS NULL THEN NULL ELSE (SELECT m.campaign_id FROM emails m WHERE m.id = r.e) END
      FROM jsonb_to_recordset(${json}::jsonb) AS r(id text, p text, c text, n text, d jsonb, e text, t timestamptz)`, db)
  }
  await addToActivityCounts(store, db, rows)
}

/**
 * Inserts events that share name, data and time (a membership change of many contacts), one per contact,
 * in one statement with one JSON parameter: the rows `insertEvents` writes, at a fraction of the cost per
 * row for tens of thousands of them, counted as insertEvents counts them.
 */
export async function insertSameEvents(store: Store, db: Db, projectId: string, name: string, data: Record<string, unknown>, contactIds: string[], at: Date): Promise<EventRow[]> {
  if (!contactIds.length) return []
  const rows: EventRow[] = contactIds.map((contactId) => ({ id: Bun.randomUUIDv7(), projectId, contactId, name, data, emailId: null, createdAt: at }))
  const pairs = JSON.stringify(rows.map((r) => [r.id, r.contactId]))
  const payload = JSON.stringify(data)
  await store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)
    SELECT ${jsonElement(store, 'r', 0)}, ${projectId}, ${jsonElement(store, 'r', 1)}, ${name}, ${jsonValue(store, payload)}, NULL, ${moment(store, at)}
    FROM ${jsonArrayRows(store, pairs, 'r')}`, db)
  await addToActivityCounts(store, db, rows)
  return rows
}

/**
 * Adds the counted types among `rows` to `activity_counts`, one row per (project, type, hour), in key
 * order (two transactions lock shared counters in the same order), on a counter slot of the writer
 * (writerSlot: PostgreSQL's concurrent writers of one hour spread over 8 rows; readers sum them).
 */
async function addToActivityCounts(store: Store, db: Db, rows: EventRow[]): Promise<void> {
  let counts: Map<string, { projectId: string; name: string; hour: number; n: number }> | null = null
  for (const r of rows) {
    if (!isCountedEvent(r.name)) continue
    counts ??= new Map()
    const hour = activityHour(r.createdAt.getTime())
    const key = `${r.projectId}\u0000${r.name}\u0000${String(hour).padStart(16, '0')}`
    const c = counts.get(key)
    if (c) c.n++
    else counts.set(key, { projectId: r.projectId, name: r.name, hour, n: 1 })
  }
  if (!counts) return
  for (const key of [...counts.keys()].sort()) {
    const c = counts.get(key) as { projectId: string; name: string; hour: number; n: number }
    await store.exec(sql`INSERT INTO activity_counts AS a (project_id, kind, hour, slot, n) VALUES (${c.projectId}, ${c.name}, ${c.hour}, ${writerSlot(store)}, ${c.n})
      ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = a.n + excluded.n`, db)
  }
}

// ---------------------------------------------------------------------------------------------------
// The email's base of email.* events (email-base.ts): stored on the email's row, put back on every read.

/**
 * The base of each of these emails of `projectId`: one statement per 500 ids, the ids as one JSON
 * parameter (as eventsByIds: 500 bound parameters cost more to parse and plan than the look-ups), each
 * email found by its primary key.
 */
export async function emailBases(store: Store, projectId: string, ids: string[]): Promise<Map<string, EmailBase>> {
  const out = new Map<string, EmailBase>()
  for (let i = 0; i < ids.length; i += 500) {
    // noIndex: SQLite would otherwise walk the project's index over every email of the project.
    const among = sql`${noIndex(store, sql.raw('project_id'))} = ${projectId} AND ${inJsonList(store, sql.raw('id'), ids.slice(i, i + 500))}`
    const rows = await store.rows<{ id: string; message_id: string; subject: string; from_address: string; to_address: string; template_id: string | null; campaign_id: string | null; source_type: string }>(sql`
      SELECT id, message_id, subject, from_address, to_address, template_id, campaign_id, source_type FROM emails WHERE ${among}`)
    for (const r of rows) {
      out.set(r.id, emailBase({
        id: r.id, messageId: r.message_id, subject: r.subject, fromAddress: r.from_address, toAddress: r.to_address,
        templateId: r.template_id, campaignId: r.campaign_id, sourceType: r.source_type,
      }))
    }
  }
  return out
}

/**
 * Puts the email's base back into the data of `rows` (events of `projectId`) that were stored without it,
 * in place, with one look-up of their emails; returns `rows`. Rows stored with it (before migration 0025)
 * cost nothing. Every read of events that returns or uses their data goes through here.
 */
export async function hydrateEmailEvents<R extends { name: string; emailId: string | null; data: Record<string, unknown> | null }>(store: Store, projectId: string, rows: R[]): Promise<R[]> {
  const ids = new Set<string>()
  for (const r of rows) if (carriesBase(r) && lacksBase(r.data ?? {})) ids.add(r.emailId as string)
  if (!ids.size) return rows
  const bases = await emailBases(store, projectId, [...ids])
  for (const r of rows) {
    const base = carriesBase(r) ? bases.get(r.emailId as string) : undefined
    if (base) r.data = withBase(r.data ?? {}, base)
  }
  return rows
}

export interface EventFilter { name?: string; contactId?: string }
export interface After { at: number; id: string }

function conds(store: Store, projectId: string, f: EventFilter): SQL[] {
  const e = store.t.events
  const out: SQL[] = [eq(e.projectId, projectId)]
  if (f.name !== undefined) out.push(eq(e.name, f.name))
  if (f.contactId !== undefined) out.push(eq(e.contactId, f.contactId))
  return out
}

/** Newest first, keyed on (created_at, id): pages are stable while events keep arriving. */
export async function listPage(store: Store, projectId: string, f: EventFilter, limit: number, after: After | null): Promise<EventWithContact[]> {
  const { events: e, contacts: c } = store.t
  const where = conds(store, projectId, f)
  if (after) {
    const at = new Date(after.at)
    const older = or(lt(e.createdAt, at), lt(e.id, after.id))
    if (older) where.push(lte(e.createdAt, at), older)
  }
  const rows = await store.db.select({
    id: e.id, projectId: e.projectId, contactId: e.contactId, name: e.name, data: e.data, emailId: e.emailId,
    createdAt: e.createdAt, contactEmail: c.email,
  }).from(e).leftJoin(c, eq(c.id, e.contactId)).where(and(...where)).orderBy(desc(e.createdAt), desc(e.id)).limit(limit)
  // A direct delivery's two events may be its email's row's (inline.ts): both reads, merged.
  const inline = await inlinePage(store, projectId, { names: f.name === undefined ? undefined : [f.name], contactId: f.contactId }, limit, after)
  const page = inline.length ? [...rows, ...inline].sort(newestFirst).slice(0, limit) : rows
  return hydrateEmailEvents(store, projectId, page)
}

export async function countEvents(store: Store, projectId: string, f: EventFilter = {}, since?: Date): Promise<number> {
  const e = store.t.events
  const where = conds(store, projectId, f)
  if (since) where.push(gte(e.createdAt, since))
  const [[row], inline] = await Promise.all([
    store.db.select({ n: count() }).from(e).where(and(...where)),
    countInline(store, projectId, { names: f.name === undefined ? undefined : [f.name], contactId: f.contactId, since }),
  ])
  return Number(row?.n ?? 0) + inline
}

/** Over every event of the project from `since` on, stored and inline (inline.ts, allEventsOf). */
export async function periodStats(store: Store, projectId: string, since: Date) {
  const all = sql`${allEventsOf(store, projectId, since)} a`
  const [totals] = await store.rows<{ n: number | string; names: number | string; contacts: number | string }>(sql`
    SELECT count(*) AS n, count(DISTINCT name) AS names, count(DISTINCT contact_id) AS contacts FROM ${all}`)
  const top = await store.rows<{ name: string; count: number | string }>(sql`
    SELECT name, count(*) AS count FROM ${all} GROUP BY name ORDER BY count(*) DESC, name LIMIT 20`)
  const day = utcDay(store, sql.raw('created_at'))
  const daily = await store.rows<{ date: string; count: number | string }>(sql`
    SELECT ${day} AS date, count(*) AS count FROM ${all} GROUP BY 1 ORDER BY 1`)
  return {
    eventsInPeriod: Number(totals?.n ?? 0),
    uniqueNames: Number(totals?.names ?? 0),
    uniqueContacts: Number(totals?.contacts ?? 0),
    topEvents: top.map((r) => ({ name: r.name, count: Number(r.count) })),
    daily: daily.map((r) => ({ date: String(r.date), count: Number(r.count) })),
  }
}

export async function names(store: Store, projectId: string): Promise<Array<{ name: string; count: number; lastSeenAt: Date }>> {
  const rows = await store.rows<{ name: string; count: number | string; last: unknown }>(sql`
    SELECT name, count(*) AS count, max(created_at) AS last FROM ${allEventsOf(store, projectId)} a GROUP BY name ORDER BY count(*) DESC, name`)
  return rows.map((r) => ({ name: r.name, count: Number(r.count), lastSeenAt: toDate(r.last) }))
}

/** max() over a timestamp comes back raw from SQLite (ms) and as a string or Date from PostgreSQL. */
function toDate(v: unknown): Date {
  if (v instanceof Date) return v
  if (typeof v === 'number') return new Date(v)
  return new Date(String(v))
}

export async function deleteByName(store: Store, db: Db, projectId: string, name: string): Promise<number> {
  return deleteCounted(store, db, sql`DELETE FROM events WHERE project_id = ${projectId} AND name = ${name}`)
}

// ---------------------------------------------------------------------------------------------------
// The outbox (outbox.ts)

export type OutboxRow = typeof import('../../db/schema').pgSchema.eventOutbox.$inferSelect

/** A new outbox row: events of one project committed in one transaction, owed to every consumer. */
export interface NewOutbox { id: string; projectId: string; eventIds: string[] }

/**
 * Inserts outbox rows in `db`'s transaction, due at `now`. On SQLite one statement compiled once: it runs
 * in every track transaction of the writer thread.
 */
export async function insertOutbox(store: Store, db: Db, rows: NewOutbox[], now: Date): Promise<void> {
  if (!rows.length) return
  // dialect: SQLite inserts with a statement compiled once (every track transaction); PostgreSQL through drizzle
  if (store.dialect === 'sqlite') {
    const insert = sqliteConnection(db).query('INSERT INTO event_outbox (id, project_id, consumer, event_ids, attempts, due_at, created_at) VALUES (?, ?, NULL, ?, 0, ?, ?)')
    const at = now.getTime()
    for (const r of rows) insert.run(r.id, r.projectId, JSON.stringify(r.eventIds), at, at)
    return
  }
  const o = store.t.eventOutbox
  await db.insert(o).values(rows.map((r) => ({ ...r, consumer: null, attempts: 0, dueAt: now, createdAt: now })))
}

/** `claimable` as SQL text ($1: now for due_at, $2: now for locked_until), for the compiled statements. */
const CLAIMABLE_SQL = 'failed_at IS NULL AND due_at <= $1 AND (locked_until IS NULL OR locked_until < $2)'

/** `now` as the stores bind a timestamp in raw statements (epoch ms on SQLite, ISO text on PostgreSQL), twice. */
const claimParams = (store: Store, now: Date): [string | number, string | number] => {
  const v = momentParam(store, now)
  return [v, v]
}

/** The projects of the oldest claimable rows (up to 64 rows). */
const headsOf = compiledRead<{ project_id: string }>(`SELECT project_id FROM event_outbox WHERE ${CLAIMABLE_SQL} ORDER BY id LIMIT 64`)

/** Rows that may be claimed at `now`: not given up, due, and not leased (or the lease ran out). */
function claimable(store: Store, now: Date): SQL | undefined {
  const o = store.t.eventOutbox
  return and(isNull(o.failedAt), lte(o.dueAt, now), or(isNull(o.lockedUntil), lt(o.lockedUntil, now)))
}

/**
 * Deletes `ids` among the rows `holder` holds (delivered to every consumer); returns the ids deleted. One
 * statement compiled once on SQLite, the ids as one JSON parameter.
 */
async function deleteHeld(store: Store, db: Db, holder: string, ids: readonly string[]): Promise<Set<string>> {
  const rows = await statementRows<{ id: string }>(store, db, 'DELETE FROM event_outbox WHERE locked_by = $1 AND id IN $2[] RETURNING id', holder, ids)
  return new Set(rows.map((r) => r.id))
}

/**
 * Claims for `holder`, until `until`, up to `maxRows` claimable rows of ONE project, oldest first: the
 * project of the oldest claimable row among those not in `skip` and with no row leased now. One project
 * has one holder at a time, so its batches are delivered in order:
 * - PostgreSQL: a transaction-scoped advisory lock on the project, taken before the lease check, orders
 *   two nodes claiming it at once (the second sees the first's lease once it commits); the rows are
 *   taken FOR UPDATE SKIP LOCKED.
 * - SQLite: the single writer orders claims.
 * `settle`: rows of `holder` delivered to every consumer, deleted in the same transaction (the drainer's
 * settlement carried by its next claim: one write transaction per batch instead of two).
 */
export async function claimOutbox(store: Store, holder: string, now: Date, until: Date, maxRows: number, skip: ReadonlySet<string>, settle: readonly string[] = []): Promise<OutboxRow[]> {
  const candidates = await outboxCandidates(store, now, skip)
  if (!candidates.length && !settle.length) return []
  return claimAmong(store, holder, now, until, maxRows, candidates, settle)
}

/** `claimOutboxIn` in a transaction of its own, among `candidates` already read (outboxCandidates). */
export async function claimAmong(store: Store, holder: string, now: Date, until: Date, maxRows: number, candidates: readonly string[], settle: readonly string[]): Promise<OutboxRow[]> {
  // A lease lost in a crash is only a row claimed again: the claim does not wait for the disk.
  return store.tx((db) => claimOutboxIn(store, db, holder, now, until, maxRows, candidates, settle), { durable: false })
}

/**
 * The projects a claim at `now` may take rows of, oldest row first, but those in `skip`. Read outside any
 * transaction: an empty outbox (most polls and wake-ups) costs no write lock. A statement compiled once:
 * the drainer asks at every wake-up (tens a second under load), and drizzle's query building cost about
 * 0.1 ms each time.
 */
export async function outboxCandidates(store: Store, now: Date, skip: ReadonlySet<string>): Promise<string[]> {
  const heads = await headsOf(store)(...claimParams(store, now))
  return [...new Set(heads.map((h) => h.project_id))].filter((p) => !skip.has(p))
}

/**
 * A claim in the write transaction `db`: the settlement of `settle` (deleted), then up to `maxRows` rows of
 * the first of `candidates` (outboxCandidates) that has no row leased now. It runs in claimOutbox's own
 * transaction, or in a commit of SQLite's track writer thread (outbox.ts, OutboxLocal).
 */
export async function claimOutboxIn(store: Store, db: Db, holder: string, now: Date, until: Date, maxRows: number, candidates: readonly string[], settle: readonly string[]): Promise<OutboxRow[]> {
  const o = store.t.eventOutbox
  // The settlement of the holder's delivered rows goes first: their project is claimable again after it.
  if (settle.length) await deleteHeld(store, db, holder, settle)
  // dialect: SQLite claims with statements compiled once under its single writer; PostgreSQL with SKIP LOCKED
  if (store.dialect === 'sqlite') {
    // The same claim in statements compiled once on the connection (0.56 ms through drizzle, ~0.1 ms so).
    const c = sqliteConnection(db)
    const at = now.getTime()
    for (const projectId of candidates) {
      if (c.query('SELECT 1 FROM event_outbox WHERE project_id = ? AND locked_until >= ? LIMIT 1').get(projectId, at)) continue
      const raw = c.query(`UPDATE event_outbox SET locked_by = ?, locked_until = ? WHERE id IN (
          SELECT id FROM event_outbox WHERE project_id = ? AND ${CLAIMABLE_SQL.replaceAll('$1', '?').replaceAll('$2', '?')} ORDER BY id LIMIT ?)
        RETURNING ${columnList(o)}`).all(holder, until.getTime(), projectId, at, at, maxRows) as Record<string, unknown>[]
      if (raw.length) return raw.map((r) => fromRaw<OutboxRow>(o, r)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    }
    return []
  }
  for (const projectId of candidates) {
    if (!(await tryTxLock(store, db, `mailctl.outbox.${projectId}`))) continue
    const held = await db.select({ id: o.id }).from(o).where(and(eq(o.projectId, projectId), gte(o.lockedUntil, now))).limit(1)
    if (held.length) continue
    const ids = db.select({ id: o.id }).from(o).where(and(eq(o.projectId, projectId), claimable(store, now))).orderBy(asc(o.id)).limit(maxRows)
    const rows = await db.update(o).set({ lockedBy: holder, lockedUntil: until })
      .where(inArray(o.id, skipLocked(store, ids))).returning()
    if (rows.length) return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }
  return []
}

/** The events of `projectId` among `ids` (those deleted since are missing), oldest first, with their full data. */
export async function eventsByIds(store: Store, projectId: string, ids: string[]): Promise<EventRow[]> {
  const e = store.t.events
  const out: EventRow[] = []
  for (let i = 0; i < ids.length; i += 500) {
    // By primary key, one look-up per id (rowsOfIds): never a walk over the project's events.
    const rows = await store.rows<Record<string, unknown>>(sql`
      SELECT ${sql.raw(columnList(e, 'events'))} FROM ${rowsOfIds(store, 'events', ids.slice(i, i + 500))} AND events.project_id = ${projectId}`)
    for (const r of rows) out.push(fromRaw<EventRow>(e, r))
  }
  return hydrateEmailEvents(store, projectId, byTime(out))
}

/** Sorts events oldest first (created_at, then id), in place. */
export function byTime<R extends { id: string; createdAt: Date }>(rows: R[]): R[] {
  return rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** What became of a claimed row: delivered to all it owed (deleted), or owed again to some consumers. */
export interface OutboxOutcome {
  row: OutboxRow
  /** Consumers that failed on it, with the error: empty when it is done. */
  failed: Array<{ consumer: string; error: string }>
}

/**
 * Records the outcomes of `holder`'s claimed rows in one transaction, only for rows it still holds:
 * a done row is deleted; a failed row owed to every consumer is deleted and a row per failed consumer
 * takes its place (attempt 1); a failed row of one consumer is due again after its backoff, or given up
 * (`failed_at`) after `maxAttempts`. `backoffMs(attempt)` is the delay after failed attempt `attempt`.
 */
export async function finishOutbox(store: Store, holder: string, outcomes: OutboxOutcome[], now: Date, backoffMs: (attempt: number) => number, maxAttempts: number): Promise<{ retried: number; givenUp: number }> {
  const o = store.t.eventOutbox
  const mine = (ids: string[]) => and(eq(o.lockedBy, holder), inArray(o.id, ids))
  let retried = 0
  let givenUp = 0
  await store.tx(async (db) => {
    const gone = outcomes.filter((x) => !x.failed.length || x.row.consumer === null).map((x) => x.row.id)
    const deleted = gone.length ? await deleteHeld(store, db, holder, gone) : new Set<string>()
    const fanned = outcomes.filter((x) => x.failed.length && x.row.consumer === null && deleted.has(x.row.id)).flatMap((x) => x.failed.map((f) => ({
      id: Bun.randomUUIDv7(), projectId: x.row.projectId, consumer: f.consumer, eventIds: x.row.eventIds, attempts: 1,
      dueAt: new Date(now.getTime() + backoffMs(1)), lastError: f.error, createdAt: now,
    })))
    if (fanned.length) await db.insert(o).values(fanned)
    retried += fanned.length
    for (const x of outcomes) {
      if (!x.failed.length || x.row.consumer === null) continue
      const attempts = x.row.attempts + 1
      const final = attempts >= maxAttempts
      const error = x.failed[0]?.error ?? null
      await db.update(o).set(final
        ? { attempts, lastError: error, failedAt: now, lockedBy: null, lockedUntil: null }
        : { attempts, lastError: error, dueAt: new Date(now.getTime() + backoffMs(attempts)), lockedBy: null, lockedUntil: null }).where(mine([x.row.id]))
      if (final) givenUp++
      else retried++
    }
    // Lost in a crash, a settlement is redone: the events are delivered again (consumers are idempotent).
  }, { durable: false })
  return { retried, givenUp }
}

/** Deletes `holder`'s rows `ids`, delivered to every consumer (a settlement no claim carried). */
export async function settleOutbox(store: Store, holder: string, ids: readonly string[]): Promise<void> {
  // Lost in a crash, a settlement is redone: the events are delivered again (consumers are idempotent).
  await store.tx(async (db) => { await deleteHeld(store, db, holder, ids) }, { durable: false })
}

/** Rows due at `now` (claimable or leased): what is left to deliver now (settleEvents). */
export async function outboxDue(store: Store, now: Date): Promise<number> {
  const o = store.t.eventOutbox
  const [row] = await store.db.select({ n: count() }).from(o).where(and(isNull(o.failedAt), lte(o.dueAt, now)))
  return Number(row?.n ?? 0)
}
