import { and, count, countDistinct, desc, eq, gte, lt, lte, max, or, sql, type SQL } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'
import type { EventRow } from './stream'

/** The only SQL of the events module. Every function takes the project id. */

export interface EventWithContact extends EventRow { contactEmail: string | null }

/**
 * Inserts event rows in `db`'s transaction. On SQLite, the hot path of every track: one statement compiled
 * once on the writer, off drizzle's builder.
 */
export async function insertEvents(store: Store, db: Db, rows: EventRow[]): Promise<void> {
  if (store.dialect === 'sqlite') {
    const insert = sqliteConnection(db).query('INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    for (const r of rows) insert.run(r.id, r.projectId, r.contactId, r.name, JSON.stringify(r.data), r.emailId, r.createdAt.getTime())
    return
  }
  await db.insert(store.t.events).values(rows)
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
  return rows
}

export async function countEvents(store: Store, projectId: string, f: EventFilter = {}, since?: Date): Promise<number> {
  const e = store.t.events
  const where = conds(store, projectId, f)
  if (since) where.push(gte(e.createdAt, since))
  const [row] = await store.db.select({ n: count() }).from(e).where(and(...where))
  return Number(row?.n ?? 0)
}

export async function periodStats(store: Store, projectId: string, since: Date) {
  const e = store.t.events
  const where = and(eq(e.projectId, projectId), gte(e.createdAt, since))
  const [totals] = await store.db.select({ n: count(), names: countDistinct(e.name), contacts: countDistinct(e.contactId) }).from(e).where(where)
  const top = await store.db.select({ name: e.name, count: count() }).from(e).where(where).groupBy(e.name).orderBy(desc(count()), e.name).limit(20)
  const day = store.dialect === 'pg'
    ? sql<string>`to_char(${e.createdAt} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`
    : sql<string>`strftime('%Y-%m-%d', ${e.createdAt} / 1000, 'unixepoch')`
  const daily = await store.db.select({ date: day, count: count() }).from(e).where(where).groupBy(day).orderBy(day)
  return {
    eventsInPeriod: Number(totals?.n ?? 0),
    uniqueNames: Number(totals?.names ?? 0),
    uniqueContacts: Number(totals?.contacts ?? 0),
    topEvents: top.map((r) => ({ name: r.name, count: Number(r.count) })),
    daily: daily.map((r) => ({ date: String(r.date), count: Number(r.count) })),
  }
}

export async function names(store: Store, projectId: string): Promise<Array<{ name: string; count: number; lastSeenAt: Date }>> {
  const e = store.t.events
  const rows = await store.db.select({ name: e.name, count: count(), last: max(e.createdAt) }).from(e)
    .where(eq(e.projectId, projectId)).groupBy(e.name).orderBy(desc(count()), e.name)
  return rows.map((r) => ({ name: r.name, count: Number(r.count), lastSeenAt: toDate(r.last) }))
}

/** max() over a timestamp comes back raw from SQLite (ms) and as a string or Date from PostgreSQL. */
function toDate(v: unknown): Date {
  if (v instanceof Date) return v
  if (typeof v === 'number') return new Date(v)
  return new Date(String(v))
}

export async function deleteByName(store: Store, db: Db, projectId: string, name: string): Promise<number> {
  if (store.dialect === 'pg') {
    const [row] = await store.rows<{ n: string | number }>(sql`
      WITH d AS (DELETE FROM events WHERE project_id = ${projectId} AND name = ${name} RETURNING 1)
      SELECT count(*) AS n FROM d`, db)
    return Number(row?.n ?? 0)
  }
  await store.exec(sql`DELETE FROM events WHERE project_id = ${projectId} AND name = ${name}`, db)
  const [row] = await store.rows<{ n: number }>(sql`SELECT changes() AS n`, db)
  return Number(row?.n ?? 0)
}
