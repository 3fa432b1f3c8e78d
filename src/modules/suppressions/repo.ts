import { and, count, desc, eq, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { columnList, fromRaw } from '../../db/sqlite-statements'
import { statementRows } from '../../db/statement'

/** The only SQL on `suppressions`. Every function takes the project id. */

export type SuppressionRow = typeof import('../../db/schema').pgSchema.suppressions.$inferSelect

/** The suppressed addresses among `emails` (already normalised). */
export async function findAmong(store: Store, db: Db, projectId: string, emails: string[]): Promise<SuppressionRow[]> {
  if (!emails.length) return []
  const s = store.t.suppressions
  // Every send request: one text, compiled once on SQLite's connection (sending hot path, src/db/statement.ts).
  const raw = await statementRows<Record<string, unknown>>(store, db, `SELECT ${columnList(s)} FROM suppressions WHERE project_id = $1 AND email IN $2[]`, projectId, emails)
  return raw.map((r) => fromRaw<SuppressionRow>(s, r))
}

/** Inserts unless the address is already suppressed (the first reason is kept); true when inserted. */
export async function insertIfAbsent(store: Store, db: Db, row: SuppressionRow): Promise<boolean> {
  const s = store.t.suppressions
  const rows = await db.insert(s).values(row).onConflictDoNothing({ target: [s.projectId, s.email] }).returning({ email: s.email })
  return rows.length > 0
}

export async function find(store: Store, projectId: string, email: string): Promise<SuppressionRow | null> {
  const s = store.t.suppressions
  const [row] = await store.db.select().from(s).where(and(eq(s.projectId, projectId), eq(s.email, email))).limit(1)
  return row ?? null
}

export async function remove(store: Store, db: Db, projectId: string, email: string): Promise<boolean> {
  const s = store.t.suppressions
  const rows = await db.delete(s).where(and(eq(s.projectId, projectId), eq(s.email, email))).returning({ email: s.email })
  return rows.length > 0
}

export interface ListFilter { reason?: string; search?: string }

function filterConds(store: Store, projectId: string, f: ListFilter): SQL[] {
  const s = store.t.suppressions
  const conds: SQL[] = [eq(s.projectId, projectId)]
  if (f.reason) conds.push(eq(s.reason, f.reason))
  if (f.search) {
    const pattern = `%${f.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    conds.push(sql`${s.email} LIKE ${pattern} ESCAPE '\\'`)
  }
  return conds
}

/** Newest first, keyset on (createdAt, email). */
export async function list(store: Store, projectId: string, f: ListFilter, limit: number, after: { createdAt: Date; email: string } | null): Promise<SuppressionRow[]> {
  const s = store.t.suppressions
  const conds = filterConds(store, projectId, f)
  const older = after && or(lt(s.createdAt, after.createdAt), and(eq(s.createdAt, after.createdAt), lt(s.email, after.email)))
  if (older) conds.push(older)
  return store.db.select().from(s).where(and(...conds)).orderBy(desc(s.createdAt), desc(s.email)).limit(limit)
}

export async function total(store: Store, projectId: string, f: ListFilter): Promise<number> {
  const s = store.t.suppressions
  const [row] = await store.db.select({ n: count() }).from(s).where(and(...filterConds(store, projectId, f)))
  return Number(row?.n ?? 0)
}
