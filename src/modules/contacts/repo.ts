import { and, eq } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

export type ContactRow = typeof import('../../db/schema').pgSchema.contacts.$inferSelect

/**
 * The contact row of (project, email); on PostgreSQL the row is locked (FOR UPDATE) so that a
 * read-modify-write of its data and subscription inside `db`'s transaction is not lost to a concurrent
 * writer. SQLite has one writer, so the transaction already excludes others.
 */
export async function findByEmailForUpdate(store: Store, db: Db, projectId: string, email: string): Promise<ContactRow | null> {
  const c = store.t.contacts
  let q = db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.email, email))).limit(1)
  if (store.dialect === 'pg') q = q.for('update') as typeof q
  const [row] = await q
  return row ?? null
}

/** Inserts the contact unless (project, email) exists; null when another writer got there first. */
export async function insertIfAbsent(store: Store, db: Db, row: ContactRow): Promise<ContactRow | null> {
  const c = store.t.contacts
  const rows = await db.insert(c).values(row).onConflictDoNothing({ target: [c.projectId, c.email] }).returning()
  return rows[0] ?? null
}

export async function updateById(store: Store, db: Db, projectId: string, id: string, set: Partial<Pick<ContactRow, 'email' | 'subscribed' | 'data' | 'updatedAt'>>): Promise<ContactRow | null> {
  const c = store.t.contacts
  const [row] = await db.update(c).set(set).where(and(eq(c.projectId, projectId), eq(c.id, id))).returning()
  return row ?? null
}

export async function findById(store: Store, db: Db, projectId: string, id: string, forUpdate = false): Promise<ContactRow | null> {
  const c = store.t.contacts
  let q = db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.id, id))).limit(1)
  if (forUpdate && store.dialect === 'pg') q = q.for('update') as typeof q
  const [row] = await q
  return row ?? null
}

