import { and, count, desc, eq, inArray, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../db/client'
import { INLINE_NAMES } from '../modules/events/inline'
import type { FilterTree } from './types'

/** The SQL of the filter engine that is not the compiled condition itself. Every function takes the project id. */

export type ContactRow = typeof import('../db/schema').pgSchema.contacts.$inferSelect

export interface SegmentDef { id: string; type: 'DYNAMIC' | 'STATIC'; condition: FilterTree | null }

export async function loadSegments(store: Store, projectId: string, ids: string[], db?: Db): Promise<SegmentDef[]> {
  if (!ids.length) return []
  const s = store.t.segments
  return (db ?? store.db).select({ id: s.id, type: s.type, condition: s.condition }).from(s)
    .where(and(eq(s.projectId, projectId), inArray(s.id, ids)))
}

const inProject = (store: Store, projectId: string, where: SQL) => and(eq(store.t.contacts.projectId, projectId), where)

export async function countWhere(store: Store, projectId: string, where: SQL, db?: Db): Promise<number> {
  const c = store.t.contacts
  const [row] = await (db ?? store.db).select({ n: count() }).from(c).where(inProject(store, projectId, where))
  return Number(row?.n ?? 0)
}

/** A page of matching contacts, newest first. */
export async function pageWhere(store: Store, projectId: string, where: SQL, offset: number, limit: number, db?: Db): Promise<ContactRow[]> {
  const c = store.t.contacts
  return (db ?? store.db).select().from(c).where(inProject(store, projectId, where))
    .orderBy(desc(c.createdAt), desc(c.id)).limit(limit).offset(offset)
}

/** Ids of the matching contacts among `ids` (a chunk). */
export async function idsWhereAmong(store: Store, projectId: string, where: SQL, ids: string[], db?: Db): Promise<string[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  const rows = await (db ?? store.db).select({ id: c.id }).from(c).where(and(inProject(store, projectId, where), inArray(c.id, ids)))
  return rows.map((r) => r.id)
}

/**
 * Distinct event names of the project (at most `limit`), read from the (project_id, name, created_at) index
 * as a loose index scan, so the cost grows with the number of names, not of events.
 */
export async function eventNames(store: Store, projectId: string, limit: number): Promise<string[]> {
  const rows = await store.rows<{ name: string | null }>(sql`
    WITH RECURSIVE n(name, k) AS (
      SELECT (SELECT min(name) FROM events WHERE project_id = ${projectId}), 1
      UNION ALL
      SELECT (SELECT min(name) FROM events WHERE project_id = ${projectId} AND name > n.name), k + 1
      FROM n WHERE n.name IS NOT NULL AND k < ${limit}
    )
    SELECT name FROM n WHERE name IS NOT NULL`)
  const names = rows.map((r) => r.name as string)
  // email.sent and email.delivery may be only emails' rows (src/modules/events/inline.ts).
  const [inline] = await store.rows(sql`SELECT 1 AS x FROM emails WHERE inline_events IS NOT NULL AND project_id = ${projectId} LIMIT 1`)
  const missing = INLINE_NAMES.filter((n) => !names.includes(n))
  if (!inline || !missing.length) return names
  return [...names, ...missing].sort().slice(0, limit)
}

/** The data of the project's most recently updated contacts (a sample to infer custom fields from). */
export async function recentContactData(store: Store, projectId: string, limit: number): Promise<Array<Record<string, unknown>>> {
  const c = store.t.contacts
  const rows = await store.db.select({ data: c.data }).from(c).where(eq(c.projectId, projectId))
    .orderBy(desc(c.createdAt)).limit(limit)
  return rows.map((r) => r.data ?? {})
}
