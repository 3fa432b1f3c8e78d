import { and, eq, isNull } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** Users are not tenant data: they reach projects through `members`. */
export type UserRow = typeof import('../../db/schema').pgSchema.users.$inferSelect

export async function byEmail(store: Store, db: Db, email: string): Promise<UserRow | undefined> {
  const { users } = store.t
  const [row] = await db.select().from(users).where(eq(users.email, email)).limit(1)
  return row
}

export async function byId(store: Store, db: Db, id: string): Promise<UserRow | undefined> {
  const { users } = store.t
  const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1)
  return row
}

/** Whether any account exists (the dashboard's first-run state). */
export async function anyUser(store: Store, db: Db): Promise<boolean> {
  const { users } = store.t
  const rows = await db.select({ id: users.id }).from(users).limit(1)
  return rows.length > 0
}

export async function insert(store: Store, db: Db, row: UserRow): Promise<void> {
  await db.insert(store.t.users).values(row)
}

export async function setPassword(store: Store, db: Db, id: string, passwordHash: string, now: Date): Promise<void> {
  const { users } = store.t
  await db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, id))
}

/** Marks the address verified; false when it already was. */
export async function markVerified(store: Store, db: Db, id: string, now: Date): Promise<boolean> {
  const { users } = store.t
  const rows = await db.update(users).set({ emailVerifiedAt: now, updatedAt: now })
    .where(and(eq(users.id, id), isNull(users.emailVerifiedAt))).returning({ id: users.id })
  return rows.length > 0
}
