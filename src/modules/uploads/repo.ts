import { eq } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** The only SQL of the uploads module. */
export type UploadRow = typeof import('../../db/schema').pgSchema.uploads.$inferSelect

export async function insert(store: Store, db: Db, row: UploadRow): Promise<void> {
  await db.insert(store.t.uploads).values(row)
}

/** An upload by its (unguessable, public) name: served to anyone who has the URL, so not scoped by project. */
export async function byName(store: Store, name: string): Promise<UploadRow | null> {
  const u = store.t.uploads
  const [row] = await store.db.select().from(u).where(eq(u.name, name)).limit(1)
  return row ?? null
}
