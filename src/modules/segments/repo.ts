import { and, count, desc, eq, inArray, like, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { inJsonList, locked, moment, rowsOfIds } from '../../db/dialect'

/** The only SQL of the segments module. Every function takes the project id. */

export type SegmentRow = typeof import('../../db/schema').pgSchema.segments.$inferSelect
export type ContactRow = typeof import('../../db/schema').pgSchema.contacts.$inferSelect

/** A timestamp as a bound parameter of raw SQL (SQLite: epoch ms; PostgreSQL: timestamptz). */
const ts = moment

/**
 * With `db` (a transaction) the row is locked on PostgreSQL until it commits: `update` excludes every other
 * locker, `share` only writers of the row (membership chunks of one compute run side by side).
 */
export async function findById(store: Store, projectId: string, id: string, db?: Db, lock: 'update' | 'share' = 'update'): Promise<SegmentRow | null> {
  const s = store.t.segments
  let q = (db ?? store.db).select().from(s).where(and(eq(s.projectId, projectId), eq(s.id, id))).limit(1)
  if (db) q = locked(store, q, lock)
  const [row] = await q
  return row ?? null
}

/** Newest first. */
export async function listByProject(store: Store, projectId: string): Promise<SegmentRow[]> {
  const s = store.t.segments
  return store.db.select().from(s).where(eq(s.projectId, projectId)).orderBy(desc(s.createdAt), desc(s.id))
}

/** Slugs of the project equal to `base` or `base-<n>`. */
export async function slugsLike(store: Store, projectId: string, base: string, db: Db): Promise<string[]> {
  const s = store.t.segments
  const rows = await db.select({ slug: s.slug }).from(s).where(and(eq(s.projectId, projectId), or(eq(s.slug, base), like(s.slug, `${base}-%`))))
  return rows.map((r) => r.slug)
}

/** Inserts unless the slug (or id) is taken; the row, or null on a conflict. */
export async function insertIfFree(store: Store, db: Db, row: SegmentRow): Promise<SegmentRow | null> {
  const [out] = await db.insert(store.t.segments).values(row).onConflictDoNothing().returning()
  return out ?? null
}

export async function update(store: Store, db: Db, projectId: string, id: string, set: Partial<SegmentRow>): Promise<SegmentRow | null> {
  const s = store.t.segments
  const [row] = await db.update(s).set(set).where(and(eq(s.projectId, projectId), eq(s.id, id))).returning()
  return row ?? null
}

/** Deletes the segment and its member rows (segment_members has no foreign key to cascade from). */
export async function remove(store: Store, db: Db, projectId: string, id: string): Promise<boolean> {
  const s = store.t.segments
  await clearMembers(store, db, projectId, id)
  const rows = await db.delete(s).where(and(eq(s.projectId, projectId), eq(s.id, id))).returning({ id: s.id })
  return rows.length > 0
}

/** Stores a fresh count of the member rows (STATIC lists, tracked membership). */
export async function recountMembers(store: Store, db: Db, projectId: string, id: string, now: Date, computed = false): Promise<number> {
  const s = store.t.segments
  const [row] = await db.update(s).set({
    memberCount: sql`(SELECT count(*) FROM segment_members WHERE segment_id = ${id})`,
    countedAt: now,
    ...(computed ? { computedAt: now } : {}),
  }).where(and(eq(s.projectId, projectId), eq(s.id, id))).returning({ n: s.memberCount })
  return Number(row?.n ?? 0)
}

export async function setCount(store: Store, projectId: string, id: string, n: number, now: Date): Promise<void> {
  const s = store.t.segments
  await store.tx((db) => db.update(s).set({ memberCount: n, countedAt: now }).where(and(eq(s.projectId, projectId), eq(s.id, id))))
}

export async function countMembers(store: Store, projectId: string, id: string): Promise<number> {
  const m = store.t.segmentMembers
  const [row] = await store.db.select({ n: count() }).from(m).where(and(eq(m.projectId, projectId), eq(m.segmentId, id)))
  return Number(row?.n ?? 0)
}

/** A page of a member list (STATIC segments), newest contacts first. */
export async function memberPage(store: Store, projectId: string, id: string, offset: number, limit: number): Promise<ContactRow[]> {
  const c = store.t.contacts
  const m = store.t.segmentMembers
  const rows = await store.db.select({ contact: c }).from(m).innerJoin(c, eq(c.id, m.contactId))
    .where(and(eq(m.projectId, projectId), eq(m.segmentId, id), eq(c.projectId, projectId)))
    .orderBy(desc(c.createdAt), desc(c.id)).limit(limit).offset(offset)
  return rows.map((r) => r.contact)
}

export async function contactsByEmail(store: Store, db: Db, projectId: string, emails: string[]): Promise<Array<{ id: string; email: string }>> {
  if (!emails.length) return []
  const c = store.t.contacts
  return db.select({ id: c.id, email: c.email }).from(c).where(and(eq(c.projectId, projectId), inArray(c.email, emails)))
}

/** Adds members; returns the contact ids that were not members yet. */
export async function addMembers(store: Store, db: Db, projectId: string, id: string, contactIds: string[], now: Date): Promise<string[]> {
  if (!contactIds.length) return []
  const m = store.t.segmentMembers
  const rows = await db.insert(m).values(contactIds.map((contactId) => ({ segmentId: id, contactId, projectId, createdAt: now })))
    .onConflictDoNothing().returning({ contactId: m.contactId })
  return rows.map((r) => r.contactId)
}

/** Removes members; returns the contact ids that were members. */
export async function removeMembers(store: Store, db: Db, projectId: string, id: string, contactIds: string[]): Promise<string[]> {
  if (!contactIds.length) return []
  const m = store.t.segmentMembers
  const rows = await db.delete(m).where(and(eq(m.projectId, projectId), eq(m.segmentId, id), inArray(m.contactId, contactIds)))
    .returning({ contactId: m.contactId })
  return rows.map((r) => r.contactId)
}

export async function clearMembers(store: Store, db: Db, projectId: string, id: string): Promise<void> {
  const m = store.t.segmentMembers
  await db.delete(m).where(and(eq(m.projectId, projectId), eq(m.segmentId, id)))
}

// ---- tracked membership: the diff between the condition (set form) and the member rows ----


/**
 * The membership diff in one query that evaluates the condition (`where`, set form) once per contact:
 * contacts that match and are not members (`enter`), and members that no longer match.
 */
export async function membershipDiff(store: Store, projectId: string, id: string, where: SQL): Promise<{ entering: string[]; leaving: string[] }> {
  const rows = await store.rows<{ id: string; enter: number | boolean }>(sql`
    WITH matched AS MATERIALIZED (
      SELECT contacts.id AS id FROM contacts WHERE contacts.project_id = ${projectId} AND ${where}
    ), members AS MATERIALIZED (
      SELECT m.contact_id AS id FROM segment_members m WHERE m.segment_id = ${id}
    )
    SELECT matched.id AS id, 1 AS enter FROM matched LEFT JOIN members ON members.id = matched.id WHERE members.id IS NULL
    UNION ALL
    SELECT members.id AS id, 0 AS enter FROM members LEFT JOIN matched ON matched.id = members.id WHERE matched.id IS NULL`)
  const entering: string[] = []
  const leaving: string[] = []
  for (const r of rows) (Number(r.enter) === 1 ? entering : leaving).push(r.id)
  return { entering, leaving }
}

/**
 * Inside `db`'s transaction: makes members of the contacts among `ids` (those that still exist) and returns
 * those actually inserted: a concurrent compute that got there first inserts them, not this one.
 */
export async function enter(store: Store, db: Db, projectId: string, id: string, ids: string[], now: Date): Promise<string[]> {
  if (!ids.length) return []
  // Each id is one primary-key look-up, never a pass over the project's contacts.
  const from = rowsOfIds(store, 'contacts', ids)
  const rows = await store.rows<{ contact_id: string }>(sql`
    INSERT INTO segment_members (segment_id, contact_id, project_id, created_at)
    SELECT ${id}, contacts.id, ${projectId}, ${ts(store, now)} FROM ${from} AND contacts.project_id = ${projectId}
    ON CONFLICT DO NOTHING
    RETURNING contact_id`, db)
  return rows.map((r) => r.contact_id)
}

/** Inside `db`'s transaction: removes the members among `ids`; returns those actually removed. */
export async function leave(store: Store, db: Db, id: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return []
  const rows = await store.rows<{ contact_id: string }>(sql`
    DELETE FROM segment_members WHERE segment_id = ${id} AND ${inJsonList(store, sql.raw('contact_id'), ids)}
    RETURNING contact_id`, db)
  return rows.map((r) => r.contact_id)
}

/** Every segment of every project (the 5-minute sweep only: it queues one job per segment, each project-scoped). */
export async function allSegmentsForSweep(store: Store): Promise<Array<Pick<SegmentRow, 'id' | 'projectId' | 'type' | 'trackMembership'>>> {
  const s = store.t.segments
  return store.db.select({ id: s.id, projectId: s.projectId, type: s.type, trackMembership: s.trackMembership }).from(s)
}

/** The project ($1) has a tracked DYNAMIC segment, as SQL (events/interest.ts). */
export const TRACKED_SEGMENT_SQL = "SELECT 1 FROM segments WHERE project_id = $1 AND type = 'DYNAMIC' AND track_membership = true"

/** Tracked DYNAMIC segments of the project (recompute hints). */
export async function trackedDynamic(store: Store, projectId: string): Promise<SegmentRow[]> {
  const s = store.t.segments
  return store.db.select().from(s).where(and(eq(s.projectId, projectId), eq(s.type, 'DYNAMIC'), eq(s.trackMembership, true)))
}
