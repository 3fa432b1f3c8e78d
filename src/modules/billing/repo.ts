import { and, eq, sql } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** The only SQL of the billing module. Every function takes the project id. */

export const CATEGORIES = ['transactional', 'campaigns', 'workflows', 'inbound'] as const
export type Category = (typeof CATEGORIES)[number]
export type Limits = Record<Category, number | null>

export async function limits(store: Store, projectId: string, db?: Db): Promise<Limits | null> {
  const l = store.t.billingLimits
  const [row] = await (db ?? store.db).select().from(l).where(eq(l.projectId, projectId)).limit(1)
  if (!row) return null
  return { transactional: row.transactional, campaigns: row.campaigns, workflows: row.workflows, inbound: row.inbound }
}

export async function setLimits(store: Store, db: Db, projectId: string, next: Limits, now: Date): Promise<void> {
  const l = store.t.billingLimits
  await db.insert(l).values({ projectId, ...next, updatedAt: now }).onConflictDoUpdate({ target: l.projectId, set: { ...next, updatedAt: now } })
}

/** Used per category in one period. */
export async function usage(store: Store, projectId: string, period: string, db?: Db): Promise<Record<Category, number>> {
  const u = store.t.usageCounters
  const rows = await (db ?? store.db).select({ category: u.category, used: u.used }).from(u).where(and(eq(u.projectId, projectId), eq(u.period, period)))
  const out: Record<Category, number> = { transactional: 0, campaigns: 0, workflows: 0, inbound: 0 }
  for (const r of rows) if (r.category in out) out[r.category as Category] = Number(r.used)
  return out
}

/**
 * Adds `n` to the counter, only while it stays within `cap` (null: always). One conditional UPDATE, so two
 * concurrent transactions cannot both pass the cap (PostgreSQL locks the row; SQLite has one writer).
 * Returns the new count, or null when the cap would be passed (nothing changed).
 */
export async function charge(store: Store, db: Db, projectId: string, period: string, category: Category, n: number, cap: number | null): Promise<number | null> {
  const u = store.t.usageCounters
  await db.insert(u).values({ projectId, period, category, used: 0 }).onConflictDoNothing()
  const key = and(eq(u.projectId, projectId), eq(u.period, period), eq(u.category, category))
  const where = cap === null ? key : and(key, sql`${u.used} + ${n} <= ${cap}`)
  const [row] = await db.update(u).set({ used: sql`${u.used} + ${n}` }).where(where).returning({ used: u.used })
  return row ? Number(row.used) : null
}
