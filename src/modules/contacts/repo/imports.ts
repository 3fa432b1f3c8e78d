import { and, eq } from 'drizzle-orm'
import type { Db, Store } from '../../../db/client'

/** CSV uploads awaiting their import job. */

export type ImportRow = typeof import('../../../db/schema').pgSchema.contactImports.$inferSelect

export async function insertImport(store: Store, db: Db, row: ImportRow): Promise<void> {
  await db.insert(store.t.contactImports).values(row)
}

export async function findImport(store: Store, projectId: string, id: string): Promise<ImportRow | null> {
  const t = store.t.contactImports
  const [row] = await store.db.select().from(t).where(and(eq(t.projectId, projectId), eq(t.id, id))).limit(1)
  return row ?? null
}

export async function deleteImport(store: Store, db: Db, projectId: string, id: string): Promise<void> {
  const t = store.t.contactImports
  await db.delete(t).where(and(eq(t.projectId, projectId), eq(t.id, id)))
}
