import { and, asc, eq } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

function columns(store: Store) {
  const { projects, members } = store.t
  return {
    id: projects.id, name: projects.name, publicKey: projects.publicKey, disabled: projects.disabled,
    trackingEnabled: projects.trackingEnabled, role: members.role, createdAt: projects.createdAt, updatedAt: projects.updatedAt,
  }
}

/** The projects a user is a member of, with their role (never the secret key hash). */
export async function forUser(store: Store, db: Db, userId: string) {
  const { projects, members } = store.t
  return db.select(columns(store)).from(members).innerJoin(projects, eq(projects.id, members.projectId))
    .where(eq(members.userId, userId)).orderBy(asc(projects.createdAt), asc(projects.id))
}

export async function oneForUser(store: Store, db: Db, userId: string, projectId: string) {
  const { projects, members } = store.t
  const [row] = await db.select(columns(store)).from(members).innerJoin(projects, eq(projects.id, members.projectId))
    .where(and(eq(members.userId, userId), eq(members.projectId, projectId))).limit(1)
  return row
}

export async function update(store: Store, db: Db, projectId: string, patch: { name?: string; trackingEnabled?: boolean }, now: Date): Promise<void> {
  const { projects } = store.t
  await db.update(projects).set({ ...patch, updatedAt: now }).where(eq(projects.id, projectId))
}

export async function remove(store: Store, db: Db, projectId: string): Promise<void> {
  const { projects } = store.t
  await db.delete(projects).where(eq(projects.id, projectId))
}
