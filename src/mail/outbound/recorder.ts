/**
 * Durable outcomes, group-committed: every delivery outcome waits for the transaction that records it,
 * and outcomes arriving while one transaction commits go together into the next. A transport does not
 * reuse the connection that carried a message before its outcome is recorded, so a crash can repeat at
 * most the messages in flight on open connections, never one whose acceptance was already recorded.
 *
 * Per outcome, in one transaction: the queue row (deleted on a final outcome, rescheduled on a deferral,
 * only by its lease holder), captured mail, and what the outcome means for the rest of the system, which
 * the DeliveryStore records (store.ts; src/modules/emails/delivery.ts): the email's forward-only status
 * and facts, suppression on a hard bounce, the campaign's counters, and the email.* events (email.deferred
 * for each deferral, and the final outcome's events, each with the attempt's number), handed to their
 * consumers after the commit.
 */
import { storageFailure } from '../../db/failures'
import type { Deps } from '../../deps'
import { errorFields } from '../../log'
import { bounces, deliveries, domainLabel } from '../../metrics'
import { insertCaptured, type CapturedRow } from './capture-repo'
import { deleteRows, rescheduleRows } from './queue-repo'
import { retryDelayMs, retryHintMs, type SmtpReply } from './replies'
import type { DeferredOutcome, DeliveryStore, FinalOutcome, Outcome } from './store'

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

/** `alone`: written in a transaction of its own (its batch failed: one outcome must not fail the others). */
interface Pending { outcome: Outcome; resolve(): void; reject(err: unknown): void; alone?: boolean }

/** The first and the longest wait before writing outcomes again after the store failed (disk full, database down). */
const RETRY_FIRST_MS = 100
const RETRY_MAX_MS = 5000

/** Outcomes that end a gathering window at once: connections wait on their outcome, so do not hold many. */
const MAX_GATHER = 64

export class OutcomeRecorder {
  private pending: Pending[] = []
  private running: Promise<void> | null = null
  /** Wall time of the last commit (SQLite: mostly the fsync), which sets the gathering window. */
  private lastCommitMs = 0
  /** Ends the current gathering window early. */
  private flushNow: (() => void) | null = null
  /** After this time (ms), outcomes whose write fails are no longer kept for another try (stop). */
  private keepUntil = Number.POSITIVE_INFINITY

  constructor(private deps: Deps, private store: DeliveryStore, private opts: RecorderOptions) {}

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
    // dialect: a single writer blocks on each commit, so outcomes are gathered for a window; PostgreSQL commits do not block
    const ms = this.opts.windowMs ?? (this.deps.store.singleWriter ? Math.min(20, Math.max(8, Math.round(5 * this.lastCommitMs))) : 0)
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
          const published = await this.apply(batch.map((p) => p.outcome))
          this.lastCommitMs = performance.now() - t0
          for (const p of batch) {
            countOutcome(p.outcome)
            this.deps.log.info('delivery', outcomeFields(p.outcome))
            p.resolve()
          }
          await published()
          retryMs = RETRY_FIRST_MS
        } catch (err) {
          // The store cannot write now (disk full, database unreachable): the outcomes are kept and written
          // again until it can. Their messages stay claimed (and their connections wait), so mail the
          // receivers already accepted is never sent again because the store hiccuped.
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

  /** Applies a batch in one transaction; resolves with what to run after its commit. */
  private async apply(batch: Outcome[]): Promise<() => Promise<void>> {
    const { store } = this.deps
    const now = this.deps.clock.date()
    return store.tx(async (db) => {
      const finals: FinalOutcome[] = []
      const deferrals: DeferredOutcome[] = []
      for (const o of batch) {
        const d = o.delivery
        if (d.kind === 'deferred') {
          const r = this.deferral(o, d.reply, d.throttle)
          if (r.expired) finals.push({ outcome: o, expiredReply: d.reply })
          else deferrals.push({ outcome: o, reply: d.reply, runAt: r.runAt })
        } else {
          finals.push({ outcome: o })
        }
      }
      const deleted = new Set(await deleteRows(store, db, finals.map((f) => f.outcome.queue.emailId)))
      // Not deleted here: another worker recorded this email's outcome already (its lease had expired).
      // Each final outcome is thus applied once, and counted once in its campaign's counters.
      const applied = finals.filter((f) => deleted.has(f.outcome.queue.emailId))
      // Deferrals: the rows this worker still holds are rescheduled, in one statement on PostgreSQL
      // (queue-repo.ts rescheduleRows); only theirs are recorded.
      let held: DeferredOutcome[] = []
      if (deferrals.length) {
        const mine = await rescheduleRows(store, db, this.opts.workerId, deferrals.map(({ outcome: o, reply, runAt }) => ({ emailId: o.queue.emailId, runAt, attempts: o.queue.attempts + 1, lastError: reply.text.slice(0, 1000) })))
        held = deferrals.filter(({ outcome: o }) => mine.has(o.queue.emailId))
      }
      const published = await this.store.record(this.deps, db, applied, held, now)
      const captured: CapturedRow[] = []
      for (const { outcome: o, expiredReply } of applied) {
        const d = o.delivery
        if (expiredReply || d.kind !== 'captured') continue
        const e = o.email
        captured.push({ emailId: e.id, projectId: e.projectId, from: e.fromAddress, to: e.toAddress, subject: e.subject, raw: d.raw.toString('latin1'), envelopeFrom: o.envelopeFrom })
      }
      await insertCaptured(store, db, captured, now)
      return published
    })
  }
}

/** An outcome recorded: counted by kind and recipient domain (GET /metrics); a bounce at delivery too. */
function countOutcome(o: Outcome): void {
  const d = o.delivery
  const outcome = d.kind === 'deferred' && d.throttle ? 'throttled' : d.kind
  deliveries().inc({ outcome, domain: domainLabel(o.queue.domain) })
  if (d.kind === 'bounced') bounces().inc({ type: 'hard', source: 'smtp' })
}

/**
 * The fields of a delivery attempt's log line: one line per attempt, so that an operator can follow a
 * message through the log by its email id (README, `MAILCTL_LOG_LEVEL`: one JSON line per request and per
 * delivery attempt); the node comes with the logger.
 */
function outcomeFields(o: Outcome): Record<string, unknown> {
  const d = o.delivery
  // The reply's text starts with its code already (parseReply); a failure without a reply has code 0.
  const reply = 'reply' in d ? d.reply.text.slice(0, 200) : null
  return {
    emailId: o.email.id, projectId: o.email.projectId, domain: o.queue.domain, attempt: o.queue.attempts + 1,
    outcome: d.kind, host: 'host' in d ? d.host : null, reply, ...(d.kind === 'failed' ? { reason: d.reason.slice(0, 200) } : {}),
  }
}
