import { ctxFor, type Ctx, type Deps } from '../../deps'
import { notFound } from '../../errors'
import { defineJob, type AnyJob } from '../../jobs/queue'
import { requireAccess } from '../members/access'
import { metricTotals } from '../analytics/service'
import * as repo from './repo'

/**
 * Project security (docs/decisions.md, Usage caps, consumption, security): the bounce and complaint rates of
 * the last 7 days (from the analytics counters, so cheap on any project), a warning above one threshold, and
 * an automatic suspension above another once `minimumSent` emails were sent in the window. A suspended
 * project is disabled: its API calls, sends included, get 403 PROJECT_DISABLED; the reason is recorded. An
 * OWNER (POST /users/@me/projects/:id/enable) or `mailctl project enable` lifts it; the window then starts
 * at the first whole hour after the lift, so the same storm does not suspend it again.
 */

export const WINDOW_DAYS = 7
const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
const pct = (x: number) => `${(x * 100).toFixed(x < 0.01 ? 2 : 1)}%`
const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1_000_000) / 1_000_000 : 0)

export async function securityState(ctx: Ctx) {
  const t = ctx.deps.config.securityThresholds
  const [project, lifted, history] = await Promise.all([
    repo.projectState(ctx.store, ctx.projectId), repo.lastLiftedAt(ctx.store, ctx.projectId), repo.suspensions(ctx.store, ctx.projectId),
  ])
  if (!project) throw notFound('project')
  // Counters are hourly: after a lift the window starts at the next whole hour (the storm's hour is not counted again).
  const windowStart = new Date(Math.max(ctx.now.getTime() - WINDOW_DAYS * DAY_MS, lifted ? Math.ceil(lifted.getTime() / HOUR_MS) * HOUR_MS : 0))
  const n = await metricTotals(ctx, windowStart, ctx.now, ['sent', 'bounced', 'complained'])
  const bounceRate = ratio(n.bounced, n.sent)
  const complaintRate = ratio(n.complained, n.sent)
  const enforced = n.sent >= t.minimumSent
  const over = enforced && (bounceRate >= t.bounceSuspend || complaintRate >= t.complaintSuspend)
  const warn = enforced && (bounceRate >= t.bounceWarning || complaintRate >= t.complaintWarning)
  const warnings: string[] = []
  if (enforced && bounceRate >= t.bounceWarning) warnings.push(`bounce rate ${pct(bounceRate)} (warning at ${pct(t.bounceWarning)}, suspension at ${pct(t.bounceSuspend)})`)
  if (enforced && complaintRate >= t.complaintWarning) warnings.push(`complaint rate ${pct(complaintRate)} (warning at ${pct(t.complaintWarning)}, suspension at ${pct(t.complaintSuspend)})`)
  return {
    windowDays: WINDOW_DAYS, windowStart: windowStart.toISOString(), sent: n.sent, bounced: n.bounced, complained: n.complained, bounceRate, complaintRate,
    thresholds: t,
    status: (project.disabled ? 'suspended' : warn ? 'warning' : 'ok') as 'ok' | 'warning' | 'suspended',
    overSuspensionThreshold: over,
    warnings,
    suspensions: history.map((s) => ({ at: s.at.toISOString(), reason: s.reason, liftedAt: s.liftedAt?.toISOString() ?? null })),
  }
}

/** Suspends the project when its rates are over a suspension threshold; returns the reason when it did. */
export async function enforce(ctx: Ctx): Promise<string | null> {
  const s = await securityState(ctx)
  if (s.status === 'suspended' || !s.overSuspensionThreshold) return null
  const t = s.thresholds
  const why = s.bounceRate >= t.bounceSuspend
    ? `bounce rate ${pct(s.bounceRate)} over ${WINDOW_DAYS} days (${s.bounced} of ${s.sent} sent) reached the suspension threshold of ${pct(t.bounceSuspend)}`
    : `complaint rate ${pct(s.complaintRate)} over ${WINDOW_DAYS} days (${s.complained} of ${s.sent} sent) reached the suspension threshold of ${pct(t.complaintSuspend)}`
  const done = await ctx.store.tx((db) => repo.suspend(ctx.store, db, ctx.projectId, why, ctx.now))
  if (done) ctx.deps.log.warn('project suspended', { projectId: ctx.projectId, reason: why })
  return done ? why : null
}

/** Lifts a suspension (an OWNER, or the CLI with `by: 'cli'`). */
export async function enableProject(deps: Deps, projectId: string, by: string): Promise<{ enabled: boolean }> {
  if (!(await repo.projectState(deps.store, projectId))) throw notFound('project')
  const changed = await deps.store.tx((db) => repo.lift(deps.store, db, projectId, by, deps.clock.date()))
  return { enabled: changed }
}

export async function mySecurity(deps: Deps, userId: string, projectId: string) {
  await requireAccess(deps, userId, projectId, 'read')
  return securityState(ctxFor(deps, projectId, { kind: 'user', userId }))
}

export async function enableMyProject(deps: Deps, userId: string, projectId: string) {
  await requireAccess(deps, userId, projectId, 'delete')
  await enableProject(deps, projectId, `user:${userId}`)
  return securityState(ctxFor(deps, projectId, { kind: 'user', userId }))
}

export const SECURITY_JOB = 'security.check'

/** Every 5 minutes: each enabled project's rates, and a suspension where they are over a threshold. */
export const securityCheckJob = defineJob({
  name: SECURITY_JOB,
  everyMs: 5 * 60_000,
  async run({ deps }) {
    let suspended = 0
    const ids = await repo.enabledProjectIds(deps.store)
    for (const id of ids) if (await enforce(ctxFor(deps, id, { kind: 'job', name: SECURITY_JOB }))) suspended++
    return { projects: ids.length, suspended }
  },
})

export const securityJobs: AnyJob[] = [securityCheckJob]
