import type { Db } from '../../db/client'
import type { Ctx, Deps } from '../../deps'
import { AppError, badRequest } from '../../errors'
import { requireAccess } from '../members/access'
import { subscriptionOf } from './payments'
import * as repo from './repo'
import { CATEGORIES, type Category, type Limits } from './repo'

export type { Category } from './repo'

/**
 * Usage caps (docs/decisions.md, Usage caps): per project and category, a number of emails per calendar
 * month (UTC). Mail is charged in the transaction that accepts it (`chargeUsage`, called by queueEmails
 * and inbound processing), so the count is exact and a cap is never passed, even by concurrent sends.
 */

const NO_LIMITS: Limits = { transactional: null, campaigns: null, workflows: null, inbound: null }

/** The month of `now` (UTC): its key and bounds. */
export function periodOf(now: Date): { key: string; start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))
  return { key: start.toISOString().slice(0, 7), start, end }
}

/** The category an email counts toward, by its source. */
export function categoryOf(sourceType: string): Category {
  switch (sourceType) {
    case 'campaign': case 'test': return 'campaigns'
    case 'workflow': return 'workflows'
    default: return 'transactional'
  }
}

function limitExceeded(category: Category, cap: number, used: number, requested: number, period: { start: Date; end: Date }): AppError {
  return new AppError('BILLING_LIMIT_EXCEEDED', `The project's monthly ${category} cap of ${cap} emails would be passed (${used} used this month, ${requested} more asked)`, {
    details: { category, cap, used, requested, periodStart: period.start.toISOString(), periodEnd: period.end.toISOString() },
    suggestion: 'An OWNER or ADMIN can raise the cap (PUT /users/@me/projects/:id/billing-limits); the count starts again on the first of the month (UTC).',
  })
}

/**
 * Charges `counts` to the project's current month inside the caller's transaction `db`. Over a cap it
 * throws 429 BILLING_LIMIT_EXCEEDED naming the category and the cap (the transaction then rolls back, so
 * nothing is counted or queued), or with `throwOnExceed: false` returns the category refused.
 */
export async function chargeUsage(ctx: Pick<Ctx, 'store' | 'projectId' | 'now'>, db: Db, counts: Partial<Record<Category, number>>, opts: { throwOnExceed?: boolean } = {}): Promise<Category | null> {
  const entries = CATEGORIES.filter((c) => (counts[c] ?? 0) > 0)
  if (!entries.length) return null
  const period = periodOf(ctx.now)
  for (const category of entries) {
    const n = counts[category] ?? 0
    // One statement reads the cap and charges: null means the cap would be passed.
    if (await repo.charge(ctx.store, db, ctx.projectId, period.key, category, n) !== null) continue
    if (opts.throwOnExceed === false) return category
    const [caps, used] = await Promise.all([repo.limits(ctx.store, ctx.projectId, db), repo.usage(ctx.store, ctx.projectId, period.key, db)])
    throw limitExceeded(category, (caps ?? NO_LIMITS)[category] ?? 0, used[category], n, period)
  }
  return null
}

/**
 * Whether `n` more emails of `category` fit under the project's cap this month, without charging them.
 * Throws 429 BILLING_LIMIT_EXCEEDED (naming the category, the cap and what is used) when they do not;
 * otherwise returns what is left (null: no cap). Campaigns call it before starting with their audience size.
 */
export async function checkCap(ctx: Ctx, category: Category, n: number): Promise<{ cap: number | null; used: number; remaining: number | null }> {
  const period = periodOf(ctx.now)
  const [caps, used] = await Promise.all([repo.limits(ctx.store, ctx.projectId), repo.usage(ctx.store, ctx.projectId, period.key)])
  const cap = (caps ?? NO_LIMITS)[category]
  if (cap === null) return { cap, used: used[category], remaining: null }
  if (used[category] + n > cap) throw limitExceeded(category, cap, used[category], n, period)
  return { cap, used: used[category], remaining: cap - used[category] - n }
}

// ---------------------------------------------------------------------------------------------------
// /users/@me/projects/:id/billing-*

export async function getLimits(deps: Deps, userId: string, projectId: string): Promise<Limits> {
  await requireAccess(deps, userId, projectId, 'read')
  return (await repo.limits(deps.store, projectId)) ?? NO_LIMITS
}

/** OWNER and ADMIN; the categories given are set (null removes that cap), the others stay. */
export async function setLimits(deps: Deps, userId: string, projectId: string, body: Partial<Limits>): Promise<Limits> {
  await requireAccess(deps, userId, projectId, 'billing')
  return deps.store.tx(async (db) => {
    const next = { ...((await repo.limits(deps.store, projectId, db)) ?? NO_LIMITS) }
    for (const c of CATEGORIES) {
      const v = body[c]
      if (v === undefined) continue
      if (v !== null && (!Number.isSafeInteger(v) || v < 0)) throw badRequest(`${c}: a whole number of emails >= 0, or null`)
      next[c] = v
    }
    await repo.setLimits(deps.store, db, projectId, next, deps.clock.date())
    return next
  })
}

export async function consumption(deps: Deps, userId: string, projectId: string, now = deps.clock.date()) {
  await requireAccess(deps, userId, projectId, 'read')
  const period = periodOf(now)
  const [used, caps, subscription] = await Promise.all([repo.usage(deps.store, projectId, period.key), repo.limits(deps.store, projectId), subscriptionOf(deps, projectId)])
  return { periodStart: period.start.toISOString(), periodEnd: period.end.toISOString(), ...used, limits: caps ?? NO_LIMITS, subscription }
}
