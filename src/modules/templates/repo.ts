import { and, asc, count, desc, eq, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** The only SQL of the templates module. Every function takes the project id. */

export type TemplateRow = typeof import('../../db/schema').pgSchema.templates.$inferSelect

export type SortKey = 'createdAt' | 'updatedAt' | 'name'

export interface ListFilter {
  type?: string
  search?: string
  sort: SortKey
  dir: 'asc' | 'desc'
  limit: number
  offset: number
}

export async function insert(store: Store, db: Db, row: TemplateRow): Promise<void> {
  await db.insert(store.t.templates).values(row)
}

export async function findById(store: Store, db: Db, projectId: string, id: string): Promise<TemplateRow | null> {
  const { templates } = store.t
  const [row] = await db.select().from(templates).where(and(eq(templates.projectId, projectId), eq(templates.id, id))).limit(1)
  return row ?? null
}

export async function update(store: Store, db: Db, projectId: string, id: string, set: Partial<Omit<TemplateRow, 'id' | 'projectId' | 'createdAt'>>): Promise<TemplateRow | null> {
  const { templates } = store.t
  const [row] = await db.update(templates).set(set).where(and(eq(templates.projectId, projectId), eq(templates.id, id))).returning()
  return row ?? null
}

export async function remove(store: Store, db: Db, projectId: string, id: string): Promise<boolean> {
  const { templates } = store.t
  const rows = await db.delete(templates).where(and(eq(templates.projectId, projectId), eq(templates.id, id))).returning({ id: templates.id })
  return rows.length > 0
}

/** LIKE pattern for a literal substring (`\` escapes % and _ on both stores with ESCAPE). */
function likePattern(s: string): string {
  return `%${s.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

export async function list(store: Store, db: Db, projectId: string, f: ListFilter): Promise<{ rows: TemplateRow[]; total: number }> {
  const { templates } = store.t
  const where: SQL[] = [eq(templates.projectId, projectId)]
  if (f.type) where.push(eq(templates.type, f.type))
  if (f.search) {
    const p = likePattern(f.search)
    // lower() on both sides: case-insensitive on both stores (SQLite's lower() folds ASCII only).
    const matches = or(
      sql`lower(${templates.name}) LIKE ${p} ESCAPE '\\'`,
      sql`lower(coalesce(${templates.description}, '')) LIKE ${p} ESCAPE '\\'`,
      sql`lower(${templates.subject}) LIKE ${p} ESCAPE '\\'`,
    )
    if (matches) where.push(matches)
  }
  const cond = and(...where)
  const order = f.dir === 'asc' ? asc : desc
  const key = f.sort === 'name' ? sql`lower(${templates.name})` : f.sort === 'updatedAt' ? templates.updatedAt : templates.createdAt
  const [rows, [{ n }]] = await Promise.all([
    db.select().from(templates).where(cond).orderBy(order(key), order(templates.id)).limit(f.limit).offset(f.offset),
    db.select({ n: count() }).from(templates).where(cond),
  ])
  return { rows, total: Number(n) }
}
