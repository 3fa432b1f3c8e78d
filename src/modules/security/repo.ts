import { and, desc, eq, isNull } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** The only SQL of the security module. Every function takes the project id. */
export type SuspensionRow = typeof import('../../db/schema').pgSchema.projectSuspensions.$inferSelect

export async function suspensions(store: Store, projectId: string, limit = 20): Promise<SuspensionRow[]> {
  const s = store.t.projectSuspensions
  return store.db.select().from(s).where(eq(s.projectId, projectId)).orderBy(desc(s.at), desc(s.id)).limit(limit)
}

export async function projectState(store: Store, projectId: string, db?: Db): Promise<{ disabled: boolean } | null> {
  const p = store.t.projects
  const [row] = await (db ?? store.db).select({ disabled: p.disabled }).from(p).where(eq(p.id, projectId)).limit(1)
  return row ?? null
}

/** Disables the project and records why, unless it is disabled already; true when it did. */
export async function suspend(store: Store, db: Db, projectId: string, reason: string, now: Date): Promise<boolean> {
  const p = store.t.projects
  const changed = await db.update(p).set({ disabled: true, updatedAt: now }).where(and(eq(p.id, projectId), eq(p.disabled, false))).returning({ id: p.id })
  if (!changed.length) return false
  await db.insert(store.t.projectSuspensions).values({ id: Bun.randomUUIDv7(), projectId, reason, at: now, liftedAt: null, liftedBy: null })
  return true
}

/** Enables the project and marks its open suspensions lifted; true when it was disabled. */
export async function lift(store: Store, db: Db, projectId: string, by: string, now: Date): Promise<boolean> {
  const p = store.t.projects
  const s = store.t.projectSuspensions
  const changed = await db.update(p).set({ disabled: false, updatedAt: now }).where(and(eq(p.id, projectId), eq(p.disabled, true))).returning({ id: p.id })
  await db.update(s).set({ liftedAt: now, liftedBy: by }).where(and(eq(s.projectId, projectId), isNull(s.liftedAt)))
  return changed.length > 0
}

/** When the project's last suspension was lifted (the rates count from then on). */
export async function lastLiftedAt(store: Store, projectId: string): Promise<Date | null> {
  const s = store.t.projectSuspensions
  const [row] = await store.db.select({ at: s.liftedAt }).from(s).where(eq(s.projectId, projectId)).orderBy(desc(s.liftedAt)).limit(1)
  return row?.at ?? null
}

export async function enabledProjectIds(store: Store): Promise<string[]> {
  const p = store.t.projects
  return (await store.db.select({ id: p.id }).from(p).where(eq(p.disabled, false))).map((r) => r.id)
}
