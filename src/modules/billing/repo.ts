import { and, eq, lte, sql, type SQL } from 'drizzle-orm'
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
 * Adds `n` to the counter, only while it stays within the project's cap for `category` (billing_limits; no
 * row or a null cap: always). One statement that reads the cap and upserts the count (on PostgreSQL one round
 * trip per charge, where reading the limits first was a second), so two concurrent transactions cannot both
 * pass the cap (PostgreSQL locks the counter's row; SQLite has one writer). Returns the new count, or null
 * when the cap would be passed (nothing changed; no row is made for a first charge over it).
 */
export async function charge(store: Store, db: Db, projectId: string, period: string, category: Category, n: number): Promise<number | null> {
  const amount = sql`CAST(${n} AS INTEGER)`
  // The category names a column of billing_limits (one of CATEGORIES, never user input).
  const within = (used: SQL) => sql`NOT EXISTS (SELECT 1 FROM billing_limits l WHERE l.project_id = ${projectId} AND l.${sql.identifier(category)} IS NOT NULL AND l.${sql.identifier(category)} < ${used})`
  const [row] = await store.rows<{ used: number | string }>(sql`
    INSERT INTO usage_counters AS u (project_id, period, category, used)
    SELECT ${projectId}, ${period}, ${category}, ${amount} WHERE ${within(amount)}
    ON CONFLICT (project_id, period, category) DO UPDATE SET used = u.used + excluded.used WHERE ${within(sql`u.used + excluded.used`)}
    RETURNING used`, db)
  return row ? Number(row.used) : null
}

// ---------------------------------------------------------------------------------------------------
// Payment-provider state (migration 0023_billing_provider)

export type SubscriptionRow = typeof import('../../db/schema').pgSchema.billingSubscriptions.$inferSelect

export async function subscription(store: Store, projectId: string, db?: Db): Promise<SubscriptionRow | null> {
  const s = store.t.billingSubscriptions
  const [row] = await (db ?? store.db).select().from(s).where(eq(s.projectId, projectId)).limit(1)
  return row ?? null
}

/** The project whose provider customer this is, if any. */
export async function projectOfCustomer(store: Store, db: Db, customerId: string): Promise<string | null> {
  const s = store.t.billingSubscriptions
  const [row] = await db.select({ projectId: s.projectId }).from(s).where(eq(s.customerId, customerId)).limit(1)
  return row?.projectId ?? null
}

export async function projectExists(store: Store, db: Db, projectId: string): Promise<boolean> {
  const p = store.t.projects
  const [row] = await db.select({ id: p.id }).from(p).where(eq(p.id, projectId)).limit(1)
  return Boolean(row)
}

/** Records a provider event id; false when it was already recorded (a redelivery or a replay). */
export async function claimEvent(store: Store, db: Db, id: string, type: string, now: Date): Promise<boolean> {
  const e = store.t.billingEvents
  const rows = await db.insert(e).values({ id, type, projectId: null, outcome: 'pending', receivedAt: now }).onConflictDoNothing().returning({ id: e.id })
  return rows.length > 0
}

export async function setEventOutcome(store: Store, db: Db, id: string, outcome: 'applied' | 'ignored', projectId: string | null): Promise<void> {
  const e = store.t.billingEvents
  await db.update(e).set({ outcome, projectId }).where(eq(e.id, id))
}

export interface SubscriptionState {
  status?: string
  priceId?: string | null
  currentPeriodEnd?: Date | null
  cancelAtPeriodEnd?: boolean
  lastInvoicePaidAt?: Date
}

/**
 * Applies one provider event to a project's row: the customer and subscription ids always (they only fill
 * in), the state only when the event is not older than the last one applied (`event_at`), in one
 * conditional UPDATE, so a late delivery of an older event never moves the state back.
 */
export async function applySubscription(store: Store, db: Db, projectId: string, ids: { customerId?: string | null; subscriptionId?: string | null }, state: SubscriptionState, eventAt: Date, now: Date): Promise<void> {
  const s = store.t.billingSubscriptions
  await db.insert(s).values({ projectId, status: 'incomplete', cancelAtPeriodEnd: false, eventAt: new Date(0), updatedAt: now }).onConflictDoNothing()
  const idSet = { ...(ids.customerId ? { customerId: ids.customerId } : {}), ...(ids.subscriptionId ? { subscriptionId: ids.subscriptionId } : {}) }
  if (Object.keys(idSet).length) await db.update(s).set({ ...idSet, updatedAt: now }).where(eq(s.projectId, projectId))
  const defined = Object.fromEntries(Object.entries(state).filter(([, v]) => v !== undefined)) as SubscriptionState
  await db.update(s).set({ ...defined, eventAt, updatedAt: now }).where(and(eq(s.projectId, projectId), lte(s.eventAt, eventAt)))
}
