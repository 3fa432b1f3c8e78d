import type { SQL } from 'drizzle-orm'
import type { Ctx } from '../../deps'
import { prepareFilter, whereOf, type FilterTree } from '../../filters'
import { notifyQueued } from '../../mail/outbound'
import { RenderLimitError } from '../../mail/render'
import { assertSenderAllowed } from '../domains/service'
import { PRIORITY, queueEmails, type EmailType, type NewEmail } from '../emails/service'
import { settingsOf } from '../projects/repo'
import { sendRateOf } from '../projects/service'
import { suppressedAmong } from '../suppressions/service'
import * as repo from './repo'
import { renderCampaignBody, renderCampaignSubject } from './body'

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
  const body = test ? (opts.body ?? renderCampaignBody(ctx.deps, row, recipient, id)) : null
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
    renderAtDelivery: !test, type, sourceType: opts.sourceType,
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

/** Runs (or resumes) the fan-out of one campaign until it is SENT, or until it is no longer SENDING. */
export async function fanOut(ctx: Ctx, campaignId: string, opts: FanOutOptions = {}): Promise<FanOutResult> {
  const { store } = ctx
  const out: FanOutResult = { status: 'MISSING', batches: 0, queued: 0, skippedUnsubscribed: 0, skippedSuppressed: 0 }
  const row = await repo.findById(store, store.db, ctx.projectId, campaignId)
  if (!row) return out
  out.status = row.status
  if (row.status !== 'SENDING') return out

  const where = await audienceWhere(ctx, row)
  const sender = await assertSenderAllowed(ctx, row.fromEmail)
  const marketing = row.type === 'MARKETING'
  const size = Math.max(1, opts.batchSize ?? DEFAULT_BATCH_SIZE)
  // The project's campaign sending rate (its own, else MAILCTL_SEND_RATE_PER_SECOND; none: as fast as the pipeline goes).
  const rate = sendRateOf(await settingsOf(store, store.db, ctx.projectId)) ?? ctx.deps.config.sendRatePerSecond
  const sleep = opts.sleep ?? ((ms: number) => Bun.sleep(ms))
  let last = row.lastContactId
  let handled = row.totalRecipients
  let queued = row.sentCount

  for (;;) {
    const started = performance.now()
    // The first batch of a campaign is small, so that its first messages are on their way sooner.
    const batch = await repo.audienceBatch(store, store.db, ctx.projectId, where, last, last === null ? Math.min(size, FIRST_BATCH_SIZE) : size)
    if (!batch.length) {
      const now = new Date()
      const done = await store.tx((db) => repo.updateIn(store, db, ctx.projectId, campaignId, ['SENDING'], { status: 'SENT', sentAt: now, finishedAt: now, updatedAt: now }))
      out.status = done ? 'SENT' : ((await repo.findById(store, store.db, ctx.projectId, campaignId))?.status ?? 'MISSING')
      return out
    }
    const from = last
    const end = batch[batch.length - 1].id
    // MARKETING mail goes only to subscribed contacts; the others are counted, not dropped silently.
    const recipients = marketing ? batch.filter((c) => c.subscribed) : batch
    const unsubscribed = batch.length - recipients.length
    // Rendered before the transaction, so the write lock is held only to write.
    const items: NewEmail[] = recipients.map((c) => campaignEmail(ctx, row, c, { domainId: sender.domainId, sourceType: 'campaign' }))
    const step = await store.tx(async (db) => {
      const blocked = await suppressedAmong(ctx, db, items.map((it) => it.to.email))
      const queue = blocked.size ? items.filter((it) => !blocked.has(it.to.email)) : items
      const suppressed = items.length - queue.length
      const ok = await repo.advance(store, db, ctx.projectId, campaignId, {
        fromContactId: from, lastContactId: end, queued: queue.length, unsubscribed, suppressed, now: new Date(),
      })
      // Cancelled, or another runner advanced first: write nothing of this batch.
      if (!ok) return null
      let until: number | null = null
      if (rate && queue.length) {
        // Spread over the project's sending time: message i of the batch is due i/rate seconds after its start.
        const span = Math.ceil((queue.length * 1000) / rate)
        const start = (await repo.reservePacing(store, db, ctx.projectId, span, new Date())).getTime()
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
    const ahead = step.until === null ? 0 : step.until - Date.now() - PACING_LOOKAHEAD_MS
    if (ahead > 0) await sleep(ahead)
  }
}
