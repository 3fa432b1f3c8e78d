/**
 * Durable outcomes, group-committed: every delivery outcome waits for the transaction that records it,
 * and outcomes arriving while one transaction commits go together into the next. A transport does not
 * reuse the connection that carried a message before its outcome is recorded, so a crash can repeat at
 * most the messages in flight on open connections, never one whose acceptance was already recorded.
 *
 * Per outcome, in one transaction: the email's forward-only status and facts, the queue row (deleted on a
 * final outcome, rescheduled on a deferral, only by its lease holder), suppression on a hard bounce,
 * captured mail, the campaign's counters, and the email.* events (appendEvents, then notifyEvents after commit):
 * email.deferred for each deferral, and the final outcome's events, each with the attempt's number.
 */
import type { Db } from '../../db/client'
import { storageFailure } from '../../db/failures'
import { ctxFor, type Deps } from '../../deps'
import { errorFields } from '../../log'
import { bounces, deliveries, domainLabel } from '../../metrics'
import { emailBase } from '../../modules/events/email-base'
import { inlineMatches } from '../../modules/events/inline'
import { projectHasConsumers } from '../../modules/events/interest'
import { appendEvents, notifyEvents, type EventRow, type NewEvent } from '../../modules/events/stream'
import * as emailsRepo from '../../modules/emails/repo'
import type { DeliveryEmail, OutcomeSet } from '../../modules/emails/repo'
import { suppress } from '../../modules/suppressions/service'
import { bumpCampaign, type CampaignDelta } from '../../modules/tracking/repo'
import { insertCaptured, type CapturedRow } from './capture'
import { deleteRows, rescheduleRows, type QueueRow } from './queue'
import { retryDelayMs, retryHintMs, type SmtpReply } from './replies'
import type { Delivery } from './types'

export interface Outcome {
  email: DeliveryEmail
  queue: QueueRow
  delivery: Delivery
  /** The envelope sender used (VERP). */
  envelopeFrom: string
  size: number | null
  at: Date
}

export interface RecorderOptions {
  workerId: string
  /** Delay after a throttling reply without a hint (ms, jittered +-50%). */
  throttleDelayMs?: number
  /** Gathering window before each commit (default: 8 ms on SQLite, the next loop turn on PostgreSQL). */
  windowMs?: number
  /**
   * Outcomes that may still arrive without a commit first (the transport's messages on the wire). When
   * it is 0, waiting longer gathers nothing: every connection is waiting on this commit. Default: unknown.
   */
  onWire?: () => number
}

/** The final outcomes' email rows of a batch, written together (emails repo recordOutcomes). */
type OutcomeWrites = Array<{ id: string; set: OutcomeSet }>

/** `alone`: written in a transaction of its own (its batch failed: one outcome must not fail the others). */
interface Pending { outcome: Outcome; resolve(): void; reject(err: unknown): void; alone?: boolean }

/** The first and the longest wait before writing outcomes again after the store failed (disk full, database down). */
const RETRY_FIRST_MS = 100
const RETRY_MAX_MS = 5000

/** Outcomes that end a gathering window at once: connections wait on their outcome, so do not hold many. */
const MAX_GATHER = 64

function replyFields(r: SmtpReply) {
  return { reply: r.text, smtpCode: r.code || null, enhancedCode: r.enhanced }
}

/** Why the attempt's session went in clear although TLS was tried (issue 34): only when it did. */
function tlsNote(reason: string | null | undefined) {
  return reason ? { tls: false, tlsNote: reason } : {}
}

export class OutcomeRecorder {
  private pending: Pending[] = []
  private running: Promise<void> | null = null
  /** Wall time of the last commit (SQLite: mostly the fsync), which sets the gathering window. */
  private lastCommitMs = 0
  /** Ends the current gathering window early. */
  private flushNow: (() => void) | null = null
  /** After this time (ms), outcomes whose write fails are no longer kept for another try (stop). */
  private keepUntil = Number.POSITIVE_INFINITY

  constructor(private deps: Deps, private opts: RecorderOptions) {}

  /** Resolves once the outcome is committed. */
  record(outcome: Outcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ outcome, resolve, reject })
      if (!this.running) this.running = this.loop()
      else if (this.pending.length >= MAX_GATHER || this.quiet()) this.flushNow?.()
    })
  }

  /**
   * How long outcomes gather before a commit. SQLite commits block the event loop (fsync with
   * synchronous=FULL), so no outcome can arrive during one: without a window every commit would carry
   * one outcome. The window follows the commit time (five times the last commit, 8 to 20 ms), so that
   * the thread spends at most about a sixth of its time waiting on commits whatever the disk; a large
   * gathering commits at once. PostgreSQL commits do not block: the next turn of the loop is enough.
   * When the transport has nothing on the wire, every connection that could report waits on this commit
   * (a single busy destination runs in lockstep with the commits): committing at once loses nothing.
   */
  private gather(): Promise<void> {
    const ms = this.opts.windowMs ?? (this.deps.store.dialect === 'sqlite' ? Math.min(20, Math.max(8, Math.round(5 * this.lastCommitMs))) : 0)
    if (ms <= 0 || this.pending.length >= MAX_GATHER || this.quiet()) return new Promise((resolve) => setImmediate(resolve))
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.flushNow = null; resolve() }, ms)
      this.flushNow = () => { clearTimeout(timer); this.flushNow = null; resolve() }
    })
  }

  /** Nothing on the wire: no outcome can arrive before this commit releases a connection. */
  private quiet(): boolean {
    return this.opts.onWire !== undefined && this.opts.onWire() === 0
  }

  /**
   * Stopping: outcomes whose write fails are tried again for at most `ms` more, then their callers are
   * failed (their messages stay leased and go out again once the lease ends, as after a crash).
   */
  keepFor(ms: number): void {
    this.keepUntil = Date.now() + ms
  }

  /** Resolves when nothing is waiting to be recorded. */
  async idle(): Promise<void> {
    while (this.running) await this.running
  }

  private async loop(): Promise<void> {
    let retryMs = RETRY_FIRST_MS
    try {
      while (this.pending.length) {
        if (!this.pending[0].alone) await this.gather()
        // Outcomes to be written alone go one at a time; the others together, up to the first of those.
        const cut = this.pending.findIndex((p) => p.alone)
        const batch = this.pending.splice(0, cut === 0 ? 1 : cut < 0 ? this.pending.length : cut)
        try {
          const t0 = performance.now()
          const events = await this.apply(batch.map((p) => p.outcome))
          this.lastCommitMs = performance.now() - t0
          for (const p of batch) {
            countOutcome(p.outcome)
            this.deps.log.info('delivery', outcomeFields(p.outcome))
            p.resolve()
          }
          for (const [projectId, rows] of events) {
            await notifyEvents(ctxFor(this.deps, projectId, { kind: 'job', name: 'outbound' }), rows)
          }
          retryMs = RETRY_FIRST_MS
        } catch (err) {
          // The store cannot write now (disk full, database unreachable): the outcomes are kept and written
          // again until it can. Their messages stay claimed (and their connections wait), so mail the
          // receivers already accepted is never sent again because the store hiccuped (issue 40, item 5).
          // Applying a batch again is harmless: a final outcome applies only where it deletes the queue
          // row, a deferral only where this worker still holds the lease.
          if (storageFailure(err) && Date.now() < this.keepUntil) {
            this.deps.log.warn('recording delivery outcomes failed; keeping them and trying again', { count: batch.length, inMs: retryMs, ...errorFields(err) })
            this.pending = batch.concat(this.pending)
            await new Promise((resolve) => setTimeout(resolve, retryMs))
            retryMs = Math.min(RETRY_MAX_MS, retryMs * 2)
            continue
          }
          if (batch.length > 1) {
            // Not the store as a whole: an outcome it refuses (a value, a constraint) fails its batch's
            // transaction. Each is then written alone, so only that one fails and the others are recorded.
            this.deps.log.warn('recording delivery outcomes failed; writing them one by one', { count: batch.length, ...errorFields(err) })
            for (const p of batch) p.alone = true
            this.pending = batch.concat(this.pending)
            continue
          }
          this.deps.log.error('recording delivery outcomes failed', { count: batch.length, ...errorFields(err) })
          for (const p of batch) p.reject(err)
        }
      }
    } finally {
      this.running = null
    }
  }

  private deferral(o: Outcome, reply: SmtpReply, throttle: boolean): { runAt: Date; expired: boolean } {
    const now = o.at.getTime()
    const attempts = o.queue.attempts + 1
    let delay: number
    if (throttle) {
      const hint = retryHintMs(reply.text)
      const base = this.opts.throttleDelayMs ?? 15_000
      delay = hint ?? Math.round(base * (0.5 + Math.random()))
    } else {
      delay = retryDelayMs(attempts, reply.text)
    }
    const expires = o.queue.expiresAt.getTime()
    if (now >= expires) return { runAt: o.at, expired: true }
    return { runAt: new Date(Math.min(now + delay, expires)), expired: false }
  }

  /** Applies a batch in one transaction; returns the committed events by project. */
  private async apply(batch: Outcome[]): Promise<Map<string, EventRow[]>> {
    const { store } = this.deps
    const now = new Date()
    const events = new Map<string, NewEvent[]>()
    const emit = (o: Outcome, e: NewEvent) => {
      const list = events.get(o.email.projectId)
      if (list) list.push(e)
      else events.set(o.email.projectId, [e])
    }
    return store.tx(async (db) => {
      const finals: Array<{ o: Outcome; expiredReply?: SmtpReply }> = []
      const deferrals: Array<{ o: Outcome; reply: SmtpReply; runAt: Date }> = []
      for (const o of batch) {
        const d = o.delivery
        if (d.kind === 'deferred') {
          const r = this.deferral(o, d.reply, d.throttle)
          if (r.expired) finals.push({ o, expiredReply: d.reply })
          else deferrals.push({ o, reply: d.reply, runAt: r.runAt })
        } else {
          finals.push({ o })
        }
      }
      const deleted = new Set(await deleteRows(store, db, finals.map((f) => f.o.queue.emailId)))
      const captured: CapturedRow[] = []
      const outcomes: OutcomeWrites = []
      const writes: Array<Promise<unknown>> = []
      // Campaign counters: each final outcome is applied once (the one that deleted the queue row), so
      // each counts once; summed per campaign, one update each per commit.
      const counts = new Map<string, { projectId: string; d: Required<Pick<CampaignDelta, 'sent' | 'delivered' | 'bounced' | 'failed' | 'settled'>> }>()
      const count = (e: DeliveryEmail, add: Partial<Record<'sent' | 'delivered' | 'bounced' | 'failed', number>>) => {
        if (!e.campaignId) return
        let c = counts.get(e.campaignId)
        if (!c) {
          c = { projectId: e.projectId, d: { sent: 0, delivered: 0, bounced: 0, failed: 0, settled: 0 } }
          counts.set(e.campaignId, c)
        }
        c.d.settled++
        for (const [k, v] of Object.entries(add) as Array<[keyof typeof add, number]>) c.d[k] += v
      }
      // Projects no event consumer listens to (events/interest.ts), asked once per project and commit.
      const quietProjects = new Map<string, Promise<boolean>>()
      const quiet = (projectId: string) => {
        const known = quietProjects.get(projectId)
        if (known) return known
        const q = projectHasConsumers(store, db, projectId).then((has) => !has)
        quietProjects.set(projectId, q)
        return q
      }
      for (const { o, expiredReply } of finals) {
        // Not deleted here: another worker recorded this email's outcome already (its lease had expired).
        if (!deleted.has(o.queue.emailId)) continue
        writes.push(this.applyFinal(db, o, expiredReply, emit, captured, outcomes, count, quiet))
      }
      // Deferrals: the rows this worker still holds are rescheduled, and their emails' attempts written, in
      // one statement each on PostgreSQL (queue.ts rescheduleRows, emails repo recordDeferrals).
      writes.push((async () => {
        if (!deferrals.length) return
        const attempt = (o: Outcome) => o.queue.attempts + 1
        const mine = await rescheduleRows(store, db, this.opts.workerId, deferrals.map(({ o, reply, runAt }) => ({ emailId: o.queue.emailId, runAt, attempts: attempt(o), lastError: reply.text.slice(0, 1000) })))
        const held = deferrals.filter(({ o }) => mine.has(o.queue.emailId))
        await emailsRepo.recordDeferrals(store, db, held.map(({ o, reply }) => ({ id: o.email.id, attempts: attempt(o), lastReply: reply.text.slice(0, 1000) })), now)
        for (const { o, reply, runAt } of held) {
          // Each attempt's SMTP reply stays readable (GET /emails/:id/attempts), not only the last one.
          const d = o.delivery as Extract<Delivery, { kind: 'deferred' }>
          const base = emailBase(o.email)
          emit(o, {
            contactId: o.email.contactId, name: 'email.deferred', emailId: o.email.id, createdAt: o.at, base,
            data: { ...base, attempt: attempt(o), ...replyFields(reply), host: d.host, throttled: d.throttle, nextAttemptAt: runAt.toISOString(), ...tlsNote(d.clearReason) },
          })
        }
      })())
      await Promise.all(writes)
      // The final outcomes' email rows: one statement per kind of outcome on PostgreSQL.
      await emailsRepo.recordOutcomes(store, db, outcomes, now)
      for (const [campaignId, c] of counts) await bumpCampaign(store, db, c.projectId, campaignId, c.d, now)
      await insertCaptured(store, db, captured, now)
      const committed = new Map<string, EventRow[]>()
      for (const [projectId, list] of events) {
        committed.set(projectId, await appendEvents(ctxFor(this.deps, projectId, { kind: 'job', name: 'outbound' }), db, list))
      }
      return committed
    })
  }

  private async applyFinal(
    db: Db, o: Outcome, expiredReply: SmtpReply | undefined,
    emit: (o: Outcome, e: NewEvent) => void, captured: CapturedRow[], outcomes: OutcomeWrites,
    count: (e: DeliveryEmail, add: Partial<Record<'sent' | 'delivered' | 'bounced' | 'failed', number>>) => void,
    quiet: (projectId: string) => Promise<boolean>,
  ): Promise<void> {
    const e = o.email
    const base = emailBase(e)
    const attempts = o.queue.attempts + 1
    const drop = e.hasAttachments
    const at = o.at
    const ev = (name: string, data: Record<string, unknown>) => emit(o, { contactId: e.contactId, name, emailId: e.id, data: { ...base, attempt: attempts, ...data }, createdAt: at, base })
    // A bounce or delivery already recorded for the email (by a report that came first) is not counted again.
    const bounced = e.bouncedAt ? 0 : 1
    if (expiredReply) {
      count(e, { bounced })
      outcomes.push({ id: e.id, set: { status: 'BOUNCED', attempts, bounceType: 'soft', bouncedAt: at, lastReply: expiredReply.text, dropAttachmentContent: drop } })
      ev('email.bounce', { bounceType: 'soft', ...replyFields(expiredReply), host: null, suppressed: false, bouncedAt: at.toISOString(), reason: 'The message could not be delivered before the retry period ended' })
      return
    }
    const d = o.delivery
    switch (d.kind) {
      case 'accepted': {
        count(e, { sent: 1, delivered: d.final && !e.deliveredAt ? 1 : 0 })
        // The accepting server's reply is stored once: on email.delivery when the hop was final (direct MX
        // delivery), else on email.sent (a smart host took it); GET /emails/:id/attempts reads either.
        const sent = { sentAt: at.toISOString(), host: d.host, ...(d.final ? {} : { ...replyFields(d.reply), ...tlsNote(d.clearReason) }) }
        const delivery = d.final ? { deliveredAt: at.toISOString(), host: d.host, ...replyFields(d.reply), tls: d.secure, ...tlsNote(d.clearReason) } : null
        // A first delivery in a project no consumer listens to: the two events are the row's (events/inline.ts).
        let inlineEvents: number | undefined
        if (delivery && !e.sentAt && !e.deliveredAt && await quiet(e.projectId)) {
          const source = { id: e.id, projectId: e.projectId, contactId: e.contactId, attempts, deliveredAt: at, deliveredTo: d.host, lastReply: d.reply.text, inlineEvents: d.secure ? 1 : 0 }
          if (inlineMatches(source, { sent: { attempt: attempts, ...sent }, delivery: { attempt: attempts, ...delivery } })) inlineEvents = source.inlineEvents
        }
        outcomes.push({ id: e.id, set: {
          status: d.final ? 'DELIVERED' : 'SENT', attempts, sentAt: at, ...(d.final ? { deliveredAt: at } : {}),
          lastReply: d.reply.text, deliveredTo: d.host, size: o.size, dropAttachmentContent: drop, inlineEvents,
        } })
        if (inlineEvents !== undefined) return
        ev('email.sent', sent)
        if (delivery) ev('email.delivery', delivery)
        return
      }
      case 'captured': {
        count(e, { sent: 1 })
        outcomes.push({ id: e.id, set: { status: 'SENT', attempts, sentAt: at, deliveredTo: 'capture', size: o.size, dropAttachmentContent: drop } })
        captured.push({ emailId: e.id, projectId: e.projectId, from: e.fromAddress, to: e.toAddress, subject: e.subject, raw: d.raw.toString('latin1'), envelopeFrom: o.envelopeFrom })
        ev('email.sent', { sentAt: at.toISOString(), host: 'capture' })
        return
      }
      case 'bounced': {
        count(e, { bounced })
        outcomes.push({ id: e.id, set: { status: 'BOUNCED', attempts, bounceType: 'hard', bouncedAt: at, lastReply: d.reply.text, deliveredTo: d.host, dropAttachmentContent: drop } })
        let suppressed = false
        if (d.suppress) {
          await suppress(ctxFor(this.deps, e.projectId, { kind: 'job', name: 'outbound' }), db, { email: e.toAddress, reason: 'bounce', emailId: e.id, detail: d.reply.text })
          suppressed = true
        }
        ev('email.bounce', { bounceType: 'hard', ...replyFields(d.reply), host: d.host, suppressed, bouncedAt: at.toISOString(), ...tlsNote(d.clearReason) })
        return
      }
      case 'failed': {
        count(e, { failed: 1 })
        outcomes.push({ id: e.id, set: { status: 'FAILED', attempts, failedAt: at, lastReply: d.reason, dropAttachmentContent: drop } })
        ev('email.failed', { reason: d.reason, failedAt: at.toISOString() })
        return
      }
      case 'deferred':
        throw new Error('a deferral is not a final outcome')
    }
  }
}

/** An outcome recorded: counted by kind and recipient domain (GET /metrics); a bounce at delivery too. */
function countOutcome(o: Outcome): void {
  const d = o.delivery
  const outcome = d.kind === 'deferred' && d.throttle ? 'throttled' : d.kind
  deliveries().inc({ outcome, domain: domainLabel(o.queue.domain) })
  if (d.kind === 'bounced') bounces().inc({ type: 'hard', source: 'smtp' })
}

/** The fields of a delivery attempt's log line (one per attempt, OPERATIONS.md; the node comes with the logger). */
function outcomeFields(o: Outcome): Record<string, unknown> {
  const d = o.delivery
  // The reply's text starts with its code already (parseReply); a failure without a reply has code 0.
  const reply = 'reply' in d ? d.reply.text.slice(0, 200) : null
  return {
    emailId: o.email.id, projectId: o.email.projectId, domain: o.queue.domain, attempt: o.queue.attempts + 1,
    outcome: d.kind, host: 'host' in d ? d.host : null, reply, ...(d.kind === 'failed' ? { reason: d.reason.slice(0, 200) } : {}),
  }
}
