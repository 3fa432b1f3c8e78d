import type { Ctx } from '../../deps'
import { AppError, badRequest, conflict, invalidField, notFound } from '../../errors'
import { cleanTree, prepareFilter, type FilterTree } from '../../filters'
import { loadSegments } from '../../filters/repo'
import { enqueue } from '../../jobs/queue'
import { renderRefusal, checkTemplateSource } from '../../mail/render'
import { assertSenderAllowed } from '../domains/service'
import { checkDesign } from '../templates/design'
import { withPreheader } from '../templates/preheader'
import { getContact } from '../contacts/service'
import { queueEmails } from '../emails/service'
import { suppressedAmong } from '../suppressions/service'
import { notifyQueued } from '../../mail/outbound'
import { checkCap } from '../billing/service'
import { renderCampaignBodyOffThread, renderCampaignSubject } from '../../mail/render/campaign'
import { audienceWhere, campaignEmail, SEND_JOB } from './fanout'
import { chooseWinner } from './abtest'
import { isCalendarDate, isTimeZone, waveInstants } from './localtime'
import type { AbTestConfig } from '../../db/schema/campaigns'
import {
  CAMPAIGN_STATUSES, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE,
  type AudienceCount, type AudienceInput, type Campaign, type CampaignInput, type CampaignLinks, type CampaignList, type CampaignStats, type CampaignStatus, type ListCampaignsQuery, type SendInput, type SendResult, type TestInput, type TestResult,
} from './model'
import * as repo from './repo'

/**
 * Campaign mail's rendering inputs, read when the outbound pipeline claims it (render.ts; the emails
 * module's DeliveryStore calls it), and the unsubscribe of a campaign's recipient through its email
 * (unsubscribes.ts; the subscription pages and inbound List-Unsubscribe mail call it).
 */
export { prepareDeferred } from './render'
export { unsubscribeThroughEmail } from './unsubscribes'

/** Campaign verbs, shared by the HTTP routes, the send and scheduler jobs, the CLI (`mailctl campaign`) and the MCP tools. */

export { AB_WINNER_JOB, SEND_JOB } from './fanout'
export const SCHEDULER_JOB = 'campaigns.scheduler'

/** States a campaign may be edited in (PUT). */
const EDITABLE: readonly CampaignStatus[] = ['DRAFT', 'SCHEDULED']
/** States a campaign may be cancelled from. */
const CANCELLABLE: readonly CampaignStatus[] = ['SCHEDULED', 'SENDING']

type Counters = Pick<CampaignStats, 'pending' | 'sent' | 'delivered' | 'opened' | 'clicked' | 'bounced' | 'complained' | 'failed' | 'unsubscribed'>

/**
 * A campaign's counters, kept as the events happen (campaign_stats: each fact counted once per email, by
 * the transaction that records it), never computed from the emails: `pending` is what the fan-out queued
 * and the outbound queue has not settled yet.
 */
function counters(row: repo.CampaignRow, c: repo.CounterRow | undefined): Counters {
  return {
    pending: Math.max(0, row.sentCount - (c?.settled ?? 0)),
    sent: c?.sent ?? 0, delivered: c?.delivered ?? 0, opened: c?.uniqueOpens ?? 0, clicked: c?.uniqueClicks ?? 0,
    bounced: c?.bounced ?? 0, complained: c?.complained ?? 0, failed: c?.failed ?? 0, unsubscribed: c?.unsubscribed ?? 0,
  }
}

async function countersOf(ctx: Ctx, ids: string[]): Promise<Map<string, repo.CounterRow>> {
  return repo.countersFor(ctx.store, ctx.store.db, ctx.projectId, ids)
}

const iso = (d: Date | null) => (d ? d.toISOString() : null)

function toCampaign(row: repo.CampaignRow, stored?: repo.CounterRow): Campaign {
  const counts = counters(row, stored)
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    subject: row.subject,
    body: row.body,
    design: row.design ?? null,
    preheader: row.preheader ?? null,
    from: row.fromEmail,
    fromName: row.fromName,
    replyTo: row.replyTo,
    type: row.type,
    status: row.status,
    audienceType: row.audienceType,
    audienceCondition: row.audienceCondition ?? null,
    segmentId: row.segmentId,
    scheduledFor: iso(row.scheduledFor),
    abTest: row.abTest ?? null,
    abTestStatus: row.abState ? { phase: row.abState.phase, decideAt: row.abState.decideAt, winner: row.abState.winner, reason: row.abState.reason } : null,
    sendAt: row.sendAt ?? null,
    nextWaveAt: row.sendAt ? iso(row.waveAt) : null,
    totalRecipients: row.totalRecipients,
    sentCount: row.sentCount,
    deliveredCount: counts.delivered,
    openedCount: counts.opened,
    clickedCount: counts.clicked,
    bouncedCount: counts.bounced,
    complainedCount: counts.complained,
    unsubscribedCount: counts.unsubscribed,
    skippedUnsubscribed: row.skippedUnsubscribed,
    skippedSuppressed: row.skippedSuppressed,
    projectId: row.projectId,
    sentAt: iso(row.sentAt),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  }
}

const normEmail = (e: string) => e.trim().toLowerCase()

/**
 * The audience rules: SEGMENT needs a segment of this project, FILTERED a tree the filter engine accepts
 * (422 naming the bad filter), ALL neither (a segmentId or condition sent with another type is dropped).
 */
async function checkAudience(ctx: Ctx, input: Pick<CampaignInput, 'audienceType' | 'segmentId' | 'audienceCondition'>): Promise<{ segmentId: string | null; audienceCondition: FilterTree | null }> {
  if (input.audienceType === 'SEGMENT') {
    if (!input.segmentId) throw invalidField('segmentId', 'segmentId: required when audienceType is SEGMENT', 'required')
    const [seg] = await loadSegments(ctx.store, ctx.projectId, [input.segmentId])
    if (!seg) throw invalidField('segmentId', `segmentId: segment ${input.segmentId} does not exist in this project`, 'unknown_segment', input.segmentId)
    return { segmentId: seg.id, audienceCondition: null }
  }
  if (input.audienceType === 'FILTERED') {
    if (input.audienceCondition === undefined || input.audienceCondition === null) {
      throw invalidField('audienceCondition', 'audienceCondition: required when audienceType is FILTERED', 'required')
    }
    await prepareFilter(ctx, input.audienceCondition, { path: 'audienceCondition' })
    return { segmentId: null, audienceCondition: cleanTree(input.audienceCondition) }
  }
  return { segmentId: null, audienceCondition: null }
}

/** The checks of create and replace, in order: templates compile and the audience is valid (422), then the sender (403). */
async function checkInput(ctx: Ctx, input: CampaignInput, previousFrom: string | null) {
  // A replacement: the body gets the preheader given, or loses the one it had.
  const body = withPreheader(input.body, input.preheader)
  await checkTemplateSource({ subject: input.subject, body })
  const abTest = await checkAbTest(input)
  const audience = await checkAudience(ctx, input)
  const from = normEmail(input.from)
  if (from !== previousFrom) await assertSenderAllowed(ctx, from)
  return {
    name: input.name,
    description: input.description ?? null,
    subject: input.subject,
    body,
    design: checkDesign(input.design),
    preheader: input.preheader || null,
    fromEmail: from,
    fromName: input.fromName ?? null,
    replyTo: input.replyTo ? normEmail(input.replyTo) : null,
    type: input.type ?? 'MARKETING',
    audienceType: input.audienceType,
    ...audience,
    abTest,
  }
}

/** The variants of an A/B test compile (422 naming the variant); their bodies get the campaign's preheader. */
async function checkAbTest(input: CampaignInput): Promise<AbTestConfig | null> {
  if (!input.abTest) return null
  const variants: AbTestConfig['variants'] = []
  for (const [i, v] of input.abTest.variants.entries()) {
    const body = v.body === undefined ? undefined : withPreheader(v.body, input.preheader)
    try {
      await checkTemplateSource({ subject: v.subject, body })
    } catch (err) {
      if (err instanceof AppError && err.code === 'VALIDATION_ERROR') throw invalidField(`abTest.variants.${i}`, `abTest.variants.${i}: ${err.message}`, 'invalid_template')
      throw err
    }
    variants.push(body === undefined ? { subject: v.subject } : { subject: v.subject, body })
  }
  return { variants, testPercent: input.abTest.testPercent, metric: input.abTest.metric, waitMinutes: input.abTest.waitMinutes }
}

/** POST /campaigns: a new DRAFT. */
export async function createCampaign(ctx: Ctx, input: CampaignInput): Promise<Campaign> {
  const fields = await checkInput(ctx, input, null)
  const now = ctx.deps.clock.date()
  const row: repo.CampaignRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, ...fields, status: 'DRAFT',
    scheduledFor: null, startedAt: null, finishedAt: null, sentAt: null, cancelledAt: null, lastContactId: null,
    totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: now, updatedAt: now,
    abState: null, sendAt: null, waveAt: null,
  }
  await ctx.store.tx((db) => repo.insert(ctx.store, db, row))
  return toCampaign(row)
}

async function load(ctx: Ctx, id: string): Promise<repo.CampaignRow> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (!row) throw notFound('campaign')
  return row
}

/** GET /campaigns/:id (another project's id is a 404). */
export async function getCampaign(ctx: Ctx, id: string): Promise<Campaign> {
  const row = await load(ctx, id)
  return toCampaign(row, (await countersOf(ctx, [id])).get(id))
}

const SORTS = new Set<repo.SortKey>(['createdAt', 'updatedAt', 'name'])

/** GET /campaigns: offset pages; an unknown status is a 400, an unknown sort or dir falls back to the default. */
export async function listCampaigns(ctx: Ctx, q: ListCampaignsQuery): Promise<CampaignList> {
  if (q.status !== undefined && !(CAMPAIGN_STATUSES as readonly string[]).includes(q.status)) {
    throw badRequest(`Unknown campaign status "${q.status}": use ${CAMPAIGN_STATUSES.join(', ')}`)
  }
  const page = q.page ?? 1
  const pageSize = Math.min(q.pageSize ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
  const sort = SORTS.has(q.sort as repo.SortKey) ? (q.sort as repo.SortKey) : 'createdAt'
  const dir = q.dir === 'asc' ? 'asc' : 'desc'
  const search = q.search?.trim() || undefined
  const { rows, total } = await repo.list(ctx.store, ctx.store.db, ctx.projectId, {
    status: q.status, search, sort, dir, limit: pageSize, offset: (page - 1) * pageSize,
  })
  const counts = await countersOf(ctx, rows.map((r) => r.id))
  return { data: rows.map((r) => toCampaign(r, counts.get(r.id))), page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
}

function refused(row: repo.CampaignRow, action: string, allowed: readonly string[]) {
  return conflict(`The campaign is ${row.status}: it can be ${action} only while ${allowed.join(' or ')}`, { status: row.status })
}

/** PUT /campaigns/:id: replaces the campaign's content and audience, only while DRAFT or SCHEDULED (409 otherwise). */
export async function replaceCampaign(ctx: Ctx, id: string, input: CampaignInput): Promise<Campaign> {
  const existing = await load(ctx, id)
  if (!EDITABLE.includes(existing.status as CampaignStatus)) throw refused(existing, 'edited', EDITABLE)
  const fields = await checkInput(ctx, input, existing.fromEmail)
  if (fields.abTest && existing.sendAt) throw abWithLocalTime()
  const row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, EDITABLE, { ...fields, updatedAt: ctx.deps.clock.date() }))
  if (!row) {
    // The status changed in between (a send or cancel): answer as if it had come first.
    throw refused(await load(ctx, id), 'edited', EDITABLE)
  }
  return toCampaign(row, (await countersOf(ctx, [id])).get(id))
}

/** DELETE /campaigns/:id: 409 while SENDING (cancel it first). Its emails keep their campaign id. */
export async function deleteCampaign(ctx: Ctx, id: string): Promise<void> {
  const gone = await ctx.store.tx((db) => repo.removeUnless(ctx.store, db, ctx.projectId, id, ['SENDING']))
  if (!gone) {
    const now = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
    if (!now) throw notFound('campaign')
    throw conflict('The campaign is SENDING: cancel it before deleting it', { status: now.status })
  }
}

/** POST /campaigns/:id/duplicate: a new DRAFT with the same content and audience, named "<name> (copy)". */
export async function duplicateCampaign(ctx: Ctx, id: string): Promise<Campaign> {
  const src = await load(ctx, id)
  const now = ctx.deps.clock.date()
  const suffix = ' (copy)'
  const row: repo.CampaignRow = {
    ...src,
    id: Bun.randomUUIDv7(),
    name: src.name.length + suffix.length > 255 ? `${src.name.slice(0, 255 - suffix.length)}${suffix}` : `${src.name}${suffix}`,
    status: 'DRAFT', scheduledFor: null, startedAt: null, finishedAt: null, sentAt: null, cancelledAt: null, lastContactId: null,
    totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: now, updatedAt: now,
    abState: null, sendAt: null, waveAt: null,
  }
  await ctx.store.tx((db) => repo.insert(ctx.store, db, row))
  return toCampaign(row)
}

/**
 * POST /campaigns/:id/cancel: SCHEDULED or SENDING → CANCELLED. A fan-out in progress stops at its next
 * batch (the batch transaction requires SENDING); emails already queued are delivered.
 */
export async function cancelCampaign(ctx: Ctx, id: string): Promise<Campaign> {
  const existing = await load(ctx, id)
  if (!CANCELLABLE.includes(existing.status as CampaignStatus)) throw refused(existing, 'cancelled', CANCELLABLE)
  const now = ctx.deps.clock.date()
  const row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, CANCELLABLE, { status: 'CANCELLED', cancelledAt: now, finishedAt: now, updatedAt: now }))
  if (!row) throw refused(await load(ctx, id), 'cancelled', CANCELLABLE)
  return toCampaign(row, (await countersOf(ctx, [id])).get(id))
}

/**
 * POST /campaigns/:id/unschedule: SCHEDULED → DRAFT, its time cleared; it can be edited and sent
 * or scheduled again. Other states answer 409 (cancel stays final). The update requires SCHEDULED, so a
 * scheduler that started it in between wins and this answers 409 SENDING.
 */
export async function unscheduleCampaign(ctx: Ctx, id: string): Promise<Campaign> {
  const existing = await load(ctx, id)
  if (existing.status !== 'SCHEDULED') throw refused(existing, 'unscheduled', ['SCHEDULED'])
  const row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['SCHEDULED'], { status: 'DRAFT', scheduledFor: null, sendAt: null, waveAt: null, updatedAt: ctx.deps.clock.date() }))
  if (!row) throw refused(await load(ctx, id), 'unscheduled', ['SCHEDULED'])
  return toCampaign(row, (await countersOf(ctx, [id])).get(id))
}

/** GET /campaigns/:id/stats: counts of the campaign's emails by status, plus the fan-out's own counters. */
export async function campaignStats(ctx: Ctx, id: string): Promise<CampaignStats> {
  const row = await load(ctx, id)
  const counts = counters(row, (await countersOf(ctx, [id])).get(id))
  return {
    campaignId: id, status: row.status, totalRecipients: row.totalRecipients, queued: row.sentCount, ...counts,
    skippedUnsubscribed: row.skippedUnsubscribed, skippedSuppressed: row.skippedSuppressed,
    variants: await variantStats(ctx, row),
  }
}

/** An A/B campaign's test group per variant (none before its test starts, or without a test). */
async function variantStats(ctx: Ctx, row: repo.CampaignRow): Promise<CampaignStats['variants']> {
  const config = row.abTest
  if (!config) return []
  const counts = new Map((await repo.variantCounts(ctx.store, ctx.store.db, ctx.projectId, row.id)).map((c) => [c.index, c]))
  return config.variants.map((v, index) => {
    const c = counts.get(index)
    const n = c?.recipients ?? 0
    return {
      index, subject: v.subject, winner: row.abState?.winner === index, recipients: n,
      delivered: c?.delivered ?? 0, opened: c?.opened ?? 0, clicked: c?.clicked ?? 0, bounced: c?.bounced ?? 0,
      openRate: n ? (c?.opened ?? 0) / n : 0, clickRate: n ? (c?.clicked ?? 0) / n : 0,
    }
  })
}

/**
 * Moves a campaign from one of `from` to SENDING and queues its fan-out job, in one transaction (the
 * job's unique key is the campaign id). Null when the campaign was not in one of `from`.
 */
export async function startSending(ctx: Ctx, id: string, from: readonly CampaignStatus[], set: Partial<repo.CampaignRow> = {}): Promise<repo.CampaignRow | null> {
  const now = ctx.deps.clock.date()
  return ctx.store.tx(async (db) => {
    const row = await repo.updateIn(ctx.store, db, ctx.projectId, id, from, { ...set, status: 'SENDING', startedAt: now, updatedAt: now })
    if (!row) return null
    await enqueue(ctx.store, SEND_JOB, { campaignId: id }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: id, maxAttempts: 10 }, db)
    return row
  })
}

/**
 * Refuses (429 BILLING_LIMIT_EXCEEDED, naming the cap and the usage) a campaign whose audience would pass
 * the project's monthly campaigns cap, before it starts. The audience counted is the one the fan-out walks
 * (subscribed contacts for MARKETING; suppressed addresses are not subtracted, so the check errs on the
 * safe side).
 */
export async function assertWithinCap(ctx: Ctx, row: repo.CampaignRow): Promise<void> {
  const where = await audienceWhere(ctx, row)
  const n = await repo.audienceCount(ctx.store, ctx.store.db, ctx.projectId, where, row.type === 'MARKETING')
  await checkCap(ctx, 'campaigns', n)
}

/**
 * The scheduler's check before starting a scheduled campaign: `assertWithinCap` on its row as stored now
 * (nothing when it was deleted).
 */
export async function assertScheduledWithinCap(ctx: Ctx, id: string): Promise<void> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  if (row) await assertWithinCap(ctx, row)
}

/** SCHEDULED campaigns (of every project) whose time has come by `now`, at most `limit`. */
export function dueScheduledCampaigns(deps: Ctx['deps'], now: Date, limit: number): Promise<Array<{ id: string; projectId: string }>> {
  return repo.dueScheduled(deps.store, now, limit)
}

/** A scheduled campaign that would pass the monthly campaigns cap goes back to DRAFT, unscheduled. */
export async function unscheduleOverCap(ctx: Ctx, id: string): Promise<void> {
  await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['SCHEDULED'], { status: 'DRAFT', scheduledFor: null, updatedAt: ctx.deps.clock.date() }))
}

/** A fan-out that reached the monthly campaigns cap: the SENDING campaign is CANCELLED (what was queued goes out). */
export async function cancelAtCap(ctx: Ctx, id: string): Promise<void> {
  const now = ctx.deps.clock.date()
  await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['SENDING'], { status: 'CANCELLED', cancelledAt: now, finishedAt: now, updatedAt: now }))
}

/**
 * Job `campaign.ab-winner`, at the end of an A/B test's wait: the winner by the metric (abtest.ts,
 * chooseWinner) is recorded and the send to the rest of the audience queued, in one transaction; a
 * crash before it runs the job again, after it the send job is there. Anything but a waiting test: no-op.
 */
export async function decideAbWinner(ctx: Ctx, id: string): Promise<{ winner: number | null; reason: string }> {
  const row = await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id)
  const state = row?.abState
  if (!row?.abTest || !state || row.status !== 'SENDING' || state.phase !== 'WAITING') {
    return { winner: state?.winner ?? null, reason: `nothing to decide (${row ? `${row.status}, ${state?.phase ?? 'no test'}` : 'deleted'})` }
  }
  const counts = await repo.variantCounts(ctx.store, ctx.store.db, ctx.projectId, id)
  const { winner, reason } = chooseWinner(counts, row.abTest.metric, row.abTest.variants.length)
  const moved = await ctx.store.tx(async (db) => {
    const done = await repo.transition(ctx.store, db, ctx.projectId, id, row.updatedAt, {
      abState: { ...state, phase: 'WINNER', winner, reason }, lastContactId: null, updatedAt: ctx.deps.clock.date(),
    })
    if (done) await enqueue(ctx.store, SEND_JOB, { campaignId: id }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: `${id}:winner`, maxAttempts: 10 }, db)
    return done
  })
  return moved ? { winner, reason } : { winner: null, reason: 'changed meanwhile (cancelled, or decided by another run)' }
}

/** The checks before any send: a DRAFT (409), whose segment still exists (422) and whose sender is allowed (403). */
async function sendable(ctx: Ctx, id: string): Promise<repo.CampaignRow> {
  const existing = await load(ctx, id)
  if (existing.status !== 'DRAFT') {
    throw conflict(`The campaign is ${existing.status}: only a DRAFT campaign can be sent (duplicate it to send it again)`, { status: existing.status })
  }
  if (existing.audienceType === 'SEGMENT') {
    const [seg] = await loadSegments(ctx.store, ctx.projectId, existing.segmentId ? [existing.segmentId] : [])
    if (!seg) throw invalidField('segmentId', 'segmentId: the campaign\'s segment no longer exists: choose another audience (PUT) before sending', 'unknown_segment', existing.segmentId)
  }
  await assertSenderAllowed(ctx, existing.fromEmail)
  return existing
}

const abWithLocalTime = () => invalidField('sendAt', 'sendAt: an A/B test is sent at one time to its test group; remove abTest (PUT) to send in each recipient\'s time zone', 'ab_test_local_time')

/**
 * POST /campaigns/:id/send with `sendAt`: each contact at the local date and time in its
 * `data.timezone` (an IANA name; else the fallback zone). The waves are the distinct instants of the
 * audience's zones; the campaign is SCHEDULED until the first and SENDING until the last. Waves whose
 * time has already passed go at once, in the first; a time passed in every zone of the audience is a 422.
 */
async function sendAtLocalTime(ctx: Ctx, id: string, input: SendInput): Promise<SendResult> {
  const at = input.sendAt
  if (!at) throw invalidField('sendAt', 'sendAt: required', 'required')
  if (input.scheduledFor !== undefined && input.scheduledFor !== null) throw invalidField('sendAt', 'sendAt: give scheduledFor or sendAt, not both', 'conflicting_fields')
  if (!isCalendarDate(at.date)) throw invalidField('sendAt.date', `sendAt.date: ${at.date} is not a day of the calendar`, 'invalid_date', at.date)
  if (!isTimeZone(at.fallbackTimeZone)) {
    throw invalidField('sendAt.fallbackTimeZone', `sendAt.fallbackTimeZone: "${at.fallbackTimeZone}" is not an IANA time zone name (such as Europe/Paris or UTC)`, 'invalid_time_zone', at.fallbackTimeZone)
  }
  const existing = await sendable(ctx, id)
  if (existing.abTest) throw abWithLocalTime()
  const where = await audienceWhere(ctx, existing)
  const waves = waveInstants(at, await repo.audienceZones(ctx.store, ctx.store.db, ctx.projectId, where))
  const now = ctx.deps.clock.date()
  const first = waves[0]
  const last = waves[waves.length - 1]
  if (last.getTime() <= now.getTime()) {
    throw invalidField('sendAt', `sendAt: ${at.date} ${at.localTime} has passed in every time zone of the audience`, 'in_the_past')
  }
  let row: repo.CampaignRow | null
  if (first.getTime() <= now.getTime()) {
    // The zones whose time has passed go now, as the first wave.
    await assertWithinCap(ctx, existing)
    row = await startSending(ctx, id, ['DRAFT'], { sendAt: at, waveAt: now, scheduledFor: null })
  } else {
    row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['DRAFT'], { status: 'SCHEDULED', scheduledFor: first, sendAt: at, waveAt: first, updatedAt: ctx.deps.clock.date() }))
  }
  if (!row) {
    const again = await load(ctx, id)
    throw conflict(`The campaign is ${again.status}: only a DRAFT campaign can be sent`, { status: again.status })
  }
  const n = waves.filter((w) => w.getTime() > now.getTime()).length
  return {
    success: true,
    data: { id: row.id, name: row.name, status: row.status, scheduledFor: iso(row.scheduledFor) },
    message: `Campaign scheduled for ${at.localTime} on ${at.date} in each recipient's time zone: ${n} wave${n === 1 ? '' : 's'} from ${(row.waveAt ?? first).toISOString()} to ${last.toISOString()}`,
  }
}

/**
 * POST /campaigns/:id/send. Only a DRAFT is sent (409 otherwise). `scheduledFor` absent, null or not in
 * the future: the fan-out starts now (SENDING); a future time: SCHEDULED until the scheduler starts it.
 * An unparseable value is a 400. The sender domain is checked again (403).
 */
export async function sendCampaign(ctx: Ctx, id: string, input: SendInput): Promise<SendResult> {
  if (input.sendAt) return sendAtLocalTime(ctx, id, input)
  let at: Date | null = null
  if (input.scheduledFor !== undefined && input.scheduledFor !== null) {
    const ms = Date.parse(input.scheduledFor)
    if (Number.isNaN(ms)) throw badRequest(`scheduledFor "${input.scheduledFor}" is not a date: use an ISO 8601 date-time such as 2030-01-31T09:00:00Z`)
    if (ms > ctx.deps.clock.now()) at = new Date(ms)
  }
  const existing = await sendable(ctx, id)
  let row: repo.CampaignRow | null
  if (at) {
    const when = at
    row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['DRAFT'], { status: 'SCHEDULED', scheduledFor: when, updatedAt: ctx.deps.clock.date() }))
  } else {
    await assertWithinCap(ctx, existing)
    row = await startSending(ctx, id, ['DRAFT'])
  }
  if (!row) {
    const now = await load(ctx, id)
    throw conflict(`The campaign is ${now.status}: only a DRAFT campaign can be sent`, { status: now.status })
  }
  return {
    success: true,
    data: { id: row.id, name: row.name, status: row.status, scheduledFor: iso(row.scheduledFor) },
    message: at ? `Campaign scheduled for ${at.toISOString()}` : 'Campaign is being sent',
  }
}


/**
 * POST /campaigns/:id/test: one email of the campaign to one address, in any state. It is rendered with
 * that address's contact data when it is a contact of the project (else with none), marked as a test
 * (`sourceType: 'test'`, the campaign as its source) and not counted in the campaign's stats. A suppressed
 * address is refused (422).
 */
export async function testCampaign(ctx: Ctx, id: string, input: TestInput): Promise<TestResult> {
  const row = await load(ctx, id)
  const email = normEmail(input.email)
  const sender = await assertSenderAllowed(ctx, row.fromEmail)
  // Rendered before the transaction, within the render budgets (a heavy body in a render thread): past
  // one, a 422 naming it.
  const contact = await repo.contactByEmail(ctx.store, ctx.store.db, ctx.projectId, email)
  // Rendered as another contact: its data; the subscription links stay the address's own, so
  // trying a test's unsubscribe link never unsubscribes the contact previewed.
  const as = input.contactId ? await getContact(ctx, input.contactId) : null
  const recipient = { id: contact?.id ?? null, email, data: as ? as.data : contact?.data ?? {} }
  const emailId = Bun.randomUUIDv7()
  let body: { html: string; text: string }
  try {
    renderCampaignSubject(ctx.deps, row, recipient, emailId)
    body = await renderCampaignBodyOffThread(ctx.deps, row, recipient, emailId)
  } catch (err) {
    throw renderRefusal(err)
  }
  const queued = await ctx.store.tx(async (db) => {
    if ((await suppressedAmong(ctx, db, [email])).has(email)) {
      throw invalidField('email', `email: ${email} is on the suppression list: remove it there to send it a test`, 'suppressed', email)
    }
    const item = campaignEmail(ctx, row, recipient, { domainId: sender.domainId, sourceType: 'test', id: emailId, body })
    await queueEmails(ctx, db, [item])
    return item
  })
  notifyQueued(ctx.deps)
  return { success: true, data: { id: queued.id ?? '', email }, message: `Test email queued for ${email}` }
}

/**
 * POST /campaigns/audience/count: how many contacts an audience (of a campaign saved or not) selects now,
 * and how many of them a send would skip, counted as the fan-out counts them: not subscribed (MARKETING
 * only, `type` defaulting to MARKETING), then suppressed. The audience rules are the ones of create (422).
 * It writes nothing.
 */
export async function countAudience(ctx: Ctx, input: AudienceInput): Promise<AudienceCount> {
  const audience = await checkAudience(ctx, input)
  const where = await audienceWhere(ctx, { audienceType: input.audienceType, ...audience })
  const marketing = (input.type ?? 'MARKETING') === 'MARKETING'
  const n = await repo.audienceBreakdown(ctx.store, ctx.store.db, ctx.projectId, where, marketing)
  return { matching: n.matching, recipients: Math.max(0, n.matching - n.unsubscribed - n.suppressed), skippedUnsubscribed: n.unsubscribed, skippedSuppressed: n.suppressed }
}

/** GET /campaigns/:id/links: the links clicked in the campaign's emails, most clicked first (404 for another project's id). */
export async function campaignLinks(ctx: Ctx, id: string, q: { limit?: number }): Promise<CampaignLinks> {
  const row = await load(ctx, id)
  const limit = Math.max(1, Math.min(100, Math.trunc(q.limit ?? 10)))
  return { campaignId: id, data: await repo.topLinks(ctx.store, ctx.store.db, ctx.projectId, id, row.createdAt, limit) }
}
