import type { SQL } from 'drizzle-orm'
import type { Db } from '../../db/client'
import type { AbTestState } from '../../db/schema/campaigns'
import type { Ctx } from '../../deps'
import { enqueue } from '../../jobs/queue'
import { prepareFilter, whereOf, type FilterTree } from '../../filters'
import { notifyQueued } from '../../mail/outbound'
import { RenderLimitError } from '../../mail/render'
import { assertSenderAllowed } from '../domains/service'
import { PRIORITY, queueEmails, type EmailType, type NewEmail } from '../emails/service'
import { projectSettings } from '../projects/service'
import { sendRateOf } from '../projects/service'
import { suppressedAmong } from '../suppressions/service'
import * as repo from './repo'
import { renderCampaignBody, renderCampaignSubject } from '../../mail/render/campaign'
import { cutsOf, drawOf, variantBodies, variantOf, withVariant } from './abtest'
import { instantCache, waveInstants } from './localtime'

export const SEND_JOB = 'campaign.send'
export const AB_WINNER_JOB = 'campaign.ab-winner'

/**
 * The fan-out of a SENDING campaign (job `campaign.send`, docs/architecture.md, Jobs): the audience is resolved
 * now, by the filter engine, and walked in contact-id order (`id > checkpoint`, never OFFSET) in batches.
 * Each batch is ONE transaction that queues its emails and advances the checkpoint and the counters, so a
 * crash between batches loses nothing and repeats nothing: the retried job resumes after the last
 * committed batch. The transaction requires the campaign to be still SENDING at the checkpoint it read,
 * so a cancel stops the fan-out at the next batch (and a second runner cannot queue the same batch twice).
 */

export const DEFAULT_BATCH_SIZE = 500
const FIRST_BATCH_SIZE = 100

/**
 * With a sending rate, the fan-out queues at most this far ahead of the project's pacing (then waits), so
 * a cancel stops what is not yet queued and the queue does not fill with mail due much later.
 */
export const PACING_LOOKAHEAD_MS = 5_000

/**
 * Queued messages not yet settled (delivered, bounced or failed) beyond which the fan-out slows down: it
 * then rests a second after each batch (at most 500 recipients a second), so that on a large campaign it
 * does not race ahead of delivery, which shares its thread, and the queue stays short (a claim that skips
 * a busy destination scans the queue: at 450,000 queued rows a campaign of a million went at half its
 * speed). It never stops: mail deferred by a slow destination also counts as not settled.
 */
export const FANOUT_AHEAD = 20_000
const FAR_REST_MS = 1000

export interface FanOutOptions {
  batchSize?: number
  /** How the fan-out waits for its pacing (tests pass one that records and returns at once). */
  sleep?: (ms: number) => Promise<void>
  /** Called after each committed batch (the job reports progress; tests inject a crash). */
  afterBatch?: (batch: { index: number; handled: number }) => Promise<void> | void
}

export interface FanOutResult {
  status: string
  batches: number
  queued: number
  skippedUnsubscribed: number
  skippedSuppressed: number
}

/**
 * One recipient's email of the campaign. A campaign email (`sourceType: 'campaign'`) is stored without
 * content: its subject is rendered now, its body when it is built for delivery (render.ts). A test email
 * (`sourceType: 'test'`) is rendered and stored now, names the campaign only as its source, and is not
 * counted in the campaign's stats.
 */
export function campaignEmail(
  ctx: Ctx, row: repo.CampaignRow, c: Pick<repo.AudienceContact, 'email' | 'data'> & { id: string | null },
  opts: { domainId: string; sourceType: 'campaign' | 'test'; runAt?: Date; id?: string; body?: { html: string; text: string } },
): NewEmail {
  const id = opts.id ?? Bun.randomUUIDv7()
  const contactId = c.id
  const recipient = { id: contactId, email: c.email, data: c.data }
  const type = row.type as EmailType
  const test = opts.sourceType === 'test'
  // A/B test groups whose variants have bodies of their own are rendered now too (abtest.ts).
  const body = test ? (opts.body ?? renderCampaignBody(ctx.deps, row, recipient, id)) : (opts.body ?? null)
  // A recipient whose subject exceeds its render budget (its data: sandbox.ts) fails alone, with the reason.
  let subject: string
  let failure: string | undefined
  try {
    subject = renderCampaignSubject(ctx.deps, row, recipient, id)
  } catch (err) {
    if (test || !(err instanceof RenderLimitError)) throw err
    subject = row.subject
    failure = `The campaign could not be rendered: subject: ${err.message}`
  }
  return {
    ...(failure ? { failure } : {}),
    id, contactId, to: { email: c.email }, from: { email: row.fromEmail, name: row.fromName }, replyTo: row.replyTo,
    subject, html: body?.html ?? null, text: body?.text ?? null,
    renderAtDelivery: !body, type, sourceType: opts.sourceType,
    campaignId: test ? null : row.id, sourceId: row.id, domainId: opts.domainId,
    // RFC 8058 one-click unsubscribe needs a contact to unsubscribe.
    listUnsubscribe: type === 'MARKETING' && contactId !== null,
    priority: test ? PRIORITY.transactional : PRIORITY.bulk,
    ...(opts.runAt ? { runAt: opts.runAt } : {}),
  }
}

/** The audience as a condition over `contacts` (null: every contact of the project). */
export async function audienceWhere(ctx: Ctx, row: Pick<repo.CampaignRow, 'audienceType' | 'segmentId' | 'audienceCondition'>): Promise<SQL | null> {
  let tree: FilterTree | null = null
  if (row.audienceType === 'SEGMENT') {
    // A segment, DYNAMIC (its condition) or STATIC (its member list), through the engine's segment predicate.
    tree = { logic: 'AND', groups: [{ filters: [{ field: `segment.${row.segmentId ?? ''}`, operator: 'memberOfSegment' }] }] }
  } else if (row.audienceType === 'FILTERED') {
    tree = row.audienceCondition
  } else {
    return null
  }
  // Lenient: a segment deleted since the campaign was saved matches nobody instead of failing the job.
  const f = await prepareFilter(ctx, tree, { path: 'audienceCondition', lenient: true })
  return whereOf(ctx, f)
}

/**
 * What one run of the fan-out does (docs/architecture.md, Campaigns): a plain campaign mails its whole
 * audience; an A/B test first its test group (TEST), then, once the winner job has chosen, the rest
 * (WINNER); a local-time send, at each wave, the contacts whose local time has come. The phases of A/B
 * tests and waves record whom they handled (campaign_recipients) in the batch's transaction.
 */
interface Phase {
  /** The contacts of a batch this phase handles, each with its A/B variant (null: none). */
  pick(batch: repo.AudienceContact[]): Promise<Array<{ c: repo.AudienceContact; variant: number | null }>>
  /** Writes campaign_recipients for the contacts handled. */
  record: boolean
  /** Renders the bodies at fan-out (A/B variants with bodies of their own). */
  renderBodies: boolean
  /** Once the walk is done: the next phase or wave (in the transaction given), or null when the campaign is SENT. */
  next(db: Db, seenAt: Date): Promise<repo.CampaignRow | null | 'SENT'>
}


/** The draws of the audience a send would mail, for an A/B test's cuts (ids only, in large pages). */
async function drawTestGroup(ctx: Ctx, row: repo.CampaignRow, where: SQL | null): Promise<AbTestState> {
  const seed = Bun.randomUUIDv7()
  const draws: number[] = []
  let after: string | null = null
  for (;;) {
    const page = await repo.audienceBatch(ctx.store, ctx.store.db, ctx.projectId, where, after, 5000)
    if (!page.length) break
    for (const c of page) if (row.type !== 'MARKETING' || c.subscribed) draws.push(drawOf(seed, c.id))
    after = page[page.length - 1].id
  }
  return { seed, cuts: cutsOf(draws, must(row.abTest)), phase: 'TEST', decideAt: null, winner: null, reason: null }
}

function must<T>(v: T | null | undefined): T {
  if (v === null || v === undefined) throw new Error('campaign phase state missing')
  return v
}

async function phaseOf(ctx: Ctx, row: repo.CampaignRow, where: SQL | null): Promise<{ row: repo.CampaignRow; phase: Phase } | null> {
  const { store } = ctx
  const plain: Phase = {
    pick: async (batch) => batch.map((c) => ({ c, variant: null })), record: false, renderBodies: false, next: async () => 'SENT',
  }
  if (row.abTest) {
    let state = row.abState
    if (!state) {
      // The test group is drawn once, when the test starts: stored before any of it is queued.
      const drawn = await drawTestGroup(ctx, row, where)
      const now = ctx.deps.clock.date()
      const moved = await store.tx((db) => repo.transition(store, db, ctx.projectId, row.id, row.updatedAt, { abState: drawn, updatedAt: now }))
      if (!moved) return null
      row = moved
      state = drawn
    }
    const config = row.abTest
    if (!config) return null
    if (state.phase === 'WAITING') return null
    if (state.phase === 'TEST') {
      const s = state
      return {
        row,
        phase: {
          pick: async (batch) => batch.map((c) => ({ c, variant: variantOf(s, drawOf(s.seed, c.id)) })).filter((x) => x.variant !== null),
          record: true,
          renderBodies: variantBodies(config),
          async next(db, seenAt) {
            const decideAt = new Date(ctx.deps.clock.date().getTime() + config.waitMinutes * 60_000)
            const moved = await repo.transition(store, db, ctx.projectId, row.id, seenAt, {
              abState: { ...s, phase: 'WAITING', decideAt: decideAt.toISOString() }, lastContactId: null, updatedAt: ctx.deps.clock.date(),
            })
            if (moved) await enqueue(store, AB_WINNER_JOB, { campaignId: row.id }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: row.id, runAt: decideAt, maxAttempts: 10 }, db)
            return moved
          },
        },
      }
    }
    // WINNER: the rest of the audience, without the test group.
    return {
      row: withVariant(row, state.winner),
      phase: {
        async pick(batch) {
          const done = await repo.handledAmong(store, store.db, row.id, batch.map((c) => c.id))
          return batch.filter((c) => !done.has(c.id)).map((c) => ({ c, variant: null }))
        },
        record: false, renderBodies: false, next: async () => 'SENT',
      },
    }
  }
  if (row.sendAt && row.waveAt) {
    const at = row.sendAt
    const wave = row.waveAt
    // A retried run after its wave was closed: the next wave's own job sends it.
    if (wave.getTime() > ctx.deps.clock.date().getTime() + 1000) return null
    const instantOf = instantCache(at)
    return {
      row,
      phase: {
        async pick(batch) {
          const due = batch.filter((c) => instantOf(c.data) <= wave.getTime())
          const done = await repo.handledAmong(store, store.db, row.id, due.map((c) => c.id))
          return due.filter((c) => !done.has(c.id)).map((c) => ({ c, variant: null }))
        },
        record: true,
        renderBodies: false,
        async next(db, seenAt) {
          const instants = waveInstants(at, await repo.audienceZones(store, db, ctx.projectId, where))
          const next = instants.find((t) => t.getTime() > wave.getTime())
          if (!next) return 'SENT'
          const moved = await repo.transition(store, db, ctx.projectId, row.id, seenAt, { waveAt: next, lastContactId: null, updatedAt: ctx.deps.clock.date() })
          if (moved) await enqueue(store, SEND_JOB, { campaignId: row.id }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: `${row.id}@${next.toISOString()}`, runAt: next, maxAttempts: 10 }, db)
          return moved
        },
      },
    }
  }
  return { row, phase: plain }
}

/** Runs (or resumes) the fan-out of one campaign until it is SENT, or until it is no longer SENDING. */
export async function fanOut(ctx: Ctx, campaignId: string, opts: FanOutOptions = {}): Promise<FanOutResult> {
  const { store } = ctx
  const out: FanOutResult = { status: 'MISSING', batches: 0, queued: 0, skippedUnsubscribed: 0, skippedSuppressed: 0 }
  const read = await repo.findById(store, store.db, ctx.projectId, campaignId)
  if (!read) return out
  out.status = read.status
  if (read.status !== 'SENDING') return out

  const where = await audienceWhere(ctx, read)
  const sender = await assertSenderAllowed(ctx, read.fromEmail)
  const planned = await phaseOf(ctx, read, where)
  // An A/B test waiting for its winner, or a wave not due yet: their own jobs go on.
  if (!planned) return out
  const { row, phase } = planned
  let seenAt = row.updatedAt
  const marketing = row.type === 'MARKETING'
  const size = Math.max(1, opts.batchSize ?? DEFAULT_BATCH_SIZE)
  // The project's campaign sending rate (its own, else MAILCTL_SEND_RATE_PER_SECOND; none: as fast as the pipeline goes).
  const rate = sendRateOf(await projectSettings(store, store.db, ctx.projectId)) ?? ctx.deps.config.sendRatePerSecond
  const sleep = opts.sleep ?? ((ms: number) => Bun.sleep(ms))
  let last = row.lastContactId
  let handled = row.totalRecipients
  let queued = row.sentCount

  for (;;) {
    const started = performance.now()
    // The first batch of a campaign is small, so that its first messages are on their way sooner.
    const batch = await repo.audienceBatch(store, store.db, ctx.projectId, where, last, last === null ? Math.min(size, FIRST_BATCH_SIZE) : size)
    if (!batch.length) {
      const now = ctx.deps.clock.date()
      const done = await store.tx(async (db) => {
        const next = await phase.next(db, seenAt)
        if (next !== 'SENT') return next
        return repo.updateIn(store, db, ctx.projectId, campaignId, ['SENDING'], { status: 'SENT', sentAt: now, finishedAt: now, updatedAt: now })
      })
      out.status = done?.status ?? ((await repo.findById(store, store.db, ctx.projectId, campaignId))?.status ?? 'MISSING')
      return out
    }
    const from = last
    const end = batch[batch.length - 1].id
    const picked = await phase.pick(batch)
    // MARKETING mail goes only to subscribed contacts; the others are counted, not dropped silently.
    const recipients = marketing ? picked.filter((x) => x.c.subscribed) : picked
    const unsubscribed = picked.length - recipients.length
    // Rendered before the transaction, so the write lock is held only to write.
    const items: NewEmail[] = recipients.map(({ c, variant }) => {
      const source = withVariant(row, variant)
      const id = Bun.randomUUIDv7()
      const body = phase.renderBodies ? renderCampaignBody(ctx.deps, source, c, id) : undefined
      return campaignEmail(ctx, source, c, { domainId: sender.domainId, sourceType: 'campaign', id, body })
    })
    const stepNow = ctx.deps.clock.date()
    const step = await store.tx(async (db) => {
      const blocked = await suppressedAmong(ctx, db, items.map((it) => it.to.email))
      const queue = blocked.size ? items.filter((it) => !blocked.has(it.to.email)) : items
      const suppressed = items.length - queue.length
      const ok = await repo.advance(store, db, ctx.projectId, campaignId, {
        fromContactId: from, lastContactId: end, queued: queue.length, unsubscribed, suppressed, now: stepNow,
      })
      // Cancelled, or another runner advanced first: write nothing of this batch.
      if (!ok) return null
      if (phase.record && picked.length) {
        const emailOf = new Map(queue.map((it) => [it.contactId, it.id ?? null]))
        await repo.insertRecipients(store, db, picked.map(({ c, variant }) => ({ campaignId, contactId: c.id, emailId: emailOf.get(c.id) ?? null, variant })))
      }
      let until: number | null = null
      if (rate && queue.length) {
        // Spread over the project's sending time: message i of the batch is due i/rate seconds after its start.
        const span = Math.ceil((queue.length * 1000) / rate)
        const start = (await repo.reservePacing(store, db, ctx.projectId, span, ctx.deps.clock.date())).getTime()
        queue.forEach((it, i) => { it.runAt = new Date(start + Math.floor((i * 1000) / rate)) })
        until = start + span
      }
      await queueEmails(ctx, db, queue)
      return { queued: queue.length, suppressed, until }
      // The batch and its checkpoint do not wait for the disk: lost together in a crash of the machine,
      // they are queued again from the checkpoint before. None of its mail can have been recorded as
      // sent meanwhile (an outcome's commit waits for the disk, and with it everything committed before).
    }, { durable: false })
    if (!step) {
      out.status = (await repo.findById(store, store.db, ctx.projectId, campaignId))?.status ?? 'MISSING'
      return out
    }
    if (step.queued) notifyQueued(ctx.deps)
    seenAt = stepNow
    last = end
    handled += batch.length
    out.batches++
    out.queued += step.queued
    out.skippedUnsubscribed += unsubscribed
    out.skippedSuppressed += step.suppressed
    queued += step.queued
    await opts.afterBatch?.({ index: out.batches, handled })
    // On SQLite every await of a batch resolves at once (bun:sqlite is synchronous), so the loop would
    // never let the event loop run: the pipeline (DNS answers, SMTP replies, signed messages, outcome
    // commits) shares this thread and would wait for the whole fan-out. After each batch the fan-out
    // pauses as long as the batch took (at most 250 ms): it keeps at most about half of the thread.
    const spent = performance.now() - started
    const far = queued >= FANOUT_AHEAD && queued - (await repo.settledCount(store, ctx.projectId, campaignId)) >= FANOUT_AHEAD
    const rest = far ? FAR_REST_MS : Math.min(250, spent)
    await (rest >= 1 ? Bun.sleep(rest) : new Promise<void>((resolve) => setImmediate(resolve)))
    // Paced: wait until the queued mail is nearly due before queueing more.
    const ahead = step.until === null ? 0 : step.until - ctx.deps.clock.now() - PACING_LOOKAHEAD_MS
    if (ahead > 0) await sleep(ahead)
  }
}
