import type { Ctx } from '../../deps'
import { badRequest, conflict, invalidField, notFound } from '../../errors'
import { cleanTree, prepareFilter, type FilterTree } from '../../filters'
import { loadSegments } from '../../filters/repo'
import { enqueue } from '../../jobs/queue'
import { renderRefusal, checkTemplateSource } from '../../mail/render'
import { assertSenderAllowed } from '../domains/service'
import { checkDesign } from '../templates/design'
import { withPreheader } from '../templates/preheader'
import { queueEmails } from '../emails/service'
import { suppressedAmong } from '../suppressions/service'
import { notifyQueued } from '../../mail/outbound'
import { checkCap } from '../billing/service'
import { renderCampaignBodyOffThread, renderCampaignSubject } from './body'
import { audienceWhere, campaignEmail } from './fanout'
import {
  CAMPAIGN_STATUSES, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE,
  type AudienceCount, type AudienceInput, type Campaign, type CampaignInput, type CampaignLinks, type CampaignList, type CampaignStats, type CampaignStatus, type ListCampaignsQuery, type SendInput, type SendResult, type TestInput, type TestResult,
} from './model'
import * as repo from './repo'

/** Campaign verbs, shared by the HTTP routes, the send and scheduler jobs and (later) the CLI. */

export const SEND_JOB = 'campaign.send'
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
  }
}

/** POST /campaigns: a new DRAFT. */
export async function createCampaign(ctx: Ctx, input: CampaignInput): Promise<Campaign> {
  const fields = await checkInput(ctx, input, null)
  const now = new Date()
  const row: repo.CampaignRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, ...fields, status: 'DRAFT',
    scheduledFor: null, startedAt: null, finishedAt: null, sentAt: null, cancelledAt: null, lastContactId: null,
    totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: now, updatedAt: now,
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
  const row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, EDITABLE, { ...fields, updatedAt: new Date() }))
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
  const now = new Date()
  const suffix = ' (copy)'
  const row: repo.CampaignRow = {
    ...src,
    id: Bun.randomUUIDv7(),
    name: src.name.length + suffix.length > 255 ? `${src.name.slice(0, 255 - suffix.length)}${suffix}` : `${src.name}${suffix}`,
    status: 'DRAFT', scheduledFor: null, startedAt: null, finishedAt: null, sentAt: null, cancelledAt: null, lastContactId: null,
    totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: now, updatedAt: now,
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
  const now = new Date()
  const row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, CANCELLABLE, { status: 'CANCELLED', cancelledAt: now, finishedAt: now, updatedAt: now }))
  if (!row) throw refused(await load(ctx, id), 'cancelled', CANCELLABLE)
  return toCampaign(row, (await countersOf(ctx, [id])).get(id))
}

/**
 * POST /campaigns/:id/unschedule (issue 36): SCHEDULED → DRAFT, its time cleared; it can be edited and sent
 * or scheduled again. Other states answer 409 (cancel stays final). The update requires SCHEDULED, so a
 * scheduler that started it in between wins and this answers 409 SENDING.
 */
export async function unscheduleCampaign(ctx: Ctx, id: string): Promise<Campaign> {
  const existing = await load(ctx, id)
  if (existing.status !== 'SCHEDULED') throw refused(existing, 'unscheduled', ['SCHEDULED'])
  const row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['SCHEDULED'], { status: 'DRAFT', scheduledFor: null, updatedAt: new Date() }))
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
  }
}

/**
 * Moves a campaign from one of `from` to SENDING and queues its fan-out job, in one transaction (the
 * job's unique key is the campaign id). Null when the campaign was not in one of `from`.
 */
export async function startSending(ctx: Ctx, id: string, from: readonly CampaignStatus[]): Promise<repo.CampaignRow | null> {
  const now = new Date()
  return ctx.store.tx(async (db) => {
    const row = await repo.updateIn(ctx.store, db, ctx.projectId, id, from, { status: 'SENDING', startedAt: now, updatedAt: now })
    if (!row) return null
    await enqueue(ctx.store, SEND_JOB, { campaignId: id }, { projectId: ctx.projectId, uniqueKey: id, maxAttempts: 10 }, db)
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
 * POST /campaigns/:id/send. Only a DRAFT is sent (409 otherwise). `scheduledFor` absent, null or not in
 * the future: the fan-out starts now (SENDING); a future time: SCHEDULED until the scheduler starts it.
 * An unparseable value is a 400. The sender domain is checked again (403).
 */
export async function sendCampaign(ctx: Ctx, id: string, input: SendInput): Promise<SendResult> {
  let at: Date | null = null
  if (input.scheduledFor !== undefined && input.scheduledFor !== null) {
    const ms = Date.parse(input.scheduledFor)
    if (Number.isNaN(ms)) throw badRequest(`scheduledFor "${input.scheduledFor}" is not a date: use an ISO 8601 date-time such as 2030-01-31T09:00:00Z`)
    if (ms > Date.now()) at = new Date(ms)
  }
  const existing = await load(ctx, id)
  if (existing.status !== 'DRAFT') {
    throw conflict(`The campaign is ${existing.status}: only a DRAFT campaign can be sent (duplicate it to send it again)`, { status: existing.status })
  }
  if (existing.audienceType === 'SEGMENT') {
    const [seg] = await loadSegments(ctx.store, ctx.projectId, existing.segmentId ? [existing.segmentId] : [])
    if (!seg) throw invalidField('segmentId', 'segmentId: the campaign\'s segment no longer exists: choose another audience (PUT) before sending', 'unknown_segment', existing.segmentId)
  }
  await assertSenderAllowed(ctx, existing.fromEmail)
  let row: repo.CampaignRow | null
  if (at) {
    const when = at
    row = await ctx.store.tx((db) => repo.updateIn(ctx.store, db, ctx.projectId, id, ['DRAFT'], { status: 'SCHEDULED', scheduledFor: when, updatedAt: new Date() }))
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
  // one, a 422 naming it (issue 35.1).
  const contact = await repo.contactByEmail(ctx.store, ctx.store.db, ctx.projectId, email)
  const recipient = { id: contact?.id ?? null, email, data: contact?.data ?? {} }
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
