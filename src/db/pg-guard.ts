/**
 * PostgreSQL through an outage: requests answer within a deadline and load is shed
 * instead of queued without bound. postgres.js queues every query while it (re)connects, and a connection
 * to a server that stopped answering waits as long as TCP does, so without this a request held on for
 * tens of seconds and thousands piled up behind it.
 * - Connecting gives up after PG_CONNECT_TIMEOUT_S (postgres.js waits 30 s by default), and a connection
 *   that failed is tried again within half a second (`pgReconnectDelayS`): postgres.js's own backoff grows
 *   to 10-20 s after a few failures, which kept nodes away from a database that was back (successes 28 s
 *   after the fault). Only the probe below connects while the database is down, so this is no storm.
 * - While the database is known down, store calls fail at once with DATABASE_UNAVAILABLE (a 503 with
 *   Retry-After, src/db/failures.ts) instead of joining the queue: "down" starts at a connection-class
 *   failure (refused, closed, shutting down, starting up, too many connections, a connect timeout), and
 *   ends when a probe (SELECT 1, every PG_PROBE_MS, each within the deadline) answers.
 * - Reads compiled once (`Store.prepared`: the API-key look-up that starts every request, idempotency)
 *   get PG_READ_DEADLINE_MS: past it that caller gets DATABASE_UNAVAILABLE. A late read alone does not
 *   mark the database down (under a burst of load it is only slow; refusing everything would flap).
 *   Transactions get no deadline (a write that timed out on our side may still commit on the server's:
 *   the caller would be told "failed" for a write that happened), only the fail-fast and the bound below.
 * - At most PG_MAX_WAITING calls wait at once; beyond, they are refused (DATABASE_UNAVAILABLE, overloaded).
 */
import { storageFailure } from './failures'

export const PG_CONNECT_TIMEOUT_S = 3
export const PG_READ_DEADLINE_MS = 3_000
export const PG_PROBE_MS = 250
export const PG_MAX_WAITING = 1_000

/** postgres.js `backoff`: seconds before connecting again after `retries` failed connections (at most 0.5). */
export function pgReconnectDelayS(retries: number): number {
  return Math.min(0.5, 0.05 * retries)
}

/** The error of a call refused because the database is down, did not answer in time, or is overloaded. */
export class DatabaseUnavailableError extends Error {
  readonly code = 'DATABASE_UNAVAILABLE'
}

export interface PgGuardOptions {
  readDeadlineMs?: number
  probeMs?: number
  maxWaiting?: number
  /** Told when the database goes down and comes back (the store's owner logs it). */
  onChange?: (down: boolean, why: string) => void
}

export class PgGuard {
  private downSince: number | null = null
  private why = ''
  private waiting = 0
  private probeTimer: Timer | null = null
  private stopped = false
  readonly readDeadlineMs: number
  private readonly probeMs: number
  private readonly maxWaiting: number

  constructor(private readonly probe: () => Promise<unknown>, private readonly opts: PgGuardOptions = {}) {
    this.readDeadlineMs = opts.readDeadlineMs ?? PG_READ_DEADLINE_MS
    this.probeMs = opts.probeMs ?? PG_PROBE_MS
    this.maxWaiting = opts.maxWaiting ?? PG_MAX_WAITING
  }

  /** True while the database is known down (calls are refused at once). */
  get down(): boolean {
    return this.downSince !== null
  }

  /** Runs `call` unless the database is known down or too many calls wait; `deadlineMs` bounds reads. */
  async run<T>(call: () => Promise<T>, deadlineMs?: number): Promise<T> {
    if (this.downSince !== null) throw new DatabaseUnavailableError(`the database is unavailable (${this.why}); refused at once until it answers again`)
    if (this.waiting >= this.maxWaiting) throw new DatabaseUnavailableError(`the database is overloaded: ${this.waiting} calls are waiting for it`)
    this.waiting++
    let timer: Timer | null = null
    try {
      const p = call()
      if (deadlineMs === undefined) return await p
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DatabaseUnavailableError(`the database did not answer within ${deadlineMs} ms`)), deadlineMs)
      })
      // The late call's own outcome is dropped (it was a read).
      p.catch(() => {})
      return await Promise.race([p, late])
    } catch (err) {
      // Our own refusals and deadlines do not mark it down: only the database's own failures do.
      if (!(err instanceof DatabaseUnavailableError) && storageFailure(err) === 'unavailable') this.markDown(err instanceof Error ? err.message : String(err))
      throw err
    } finally {
      if (timer) clearTimeout(timer)
      this.waiting--
    }
  }

  private markDown(why: string) {
    if (this.downSince !== null || this.stopped) return
    this.downSince = Date.now()
    this.why = why
    this.opts.onChange?.(true, why)
    this.scheduleProbe(0)
  }

  private scheduleProbe(ms: number) {
    if (this.stopped) return
    this.probeTimer = setTimeout(() => { void this.runProbe() }, ms)
    this.probeTimer.unref?.()
  }

  private async runProbe() {
    this.probeTimer = null
    let timer: Timer | null = null
    try {
      await Promise.race([this.probe(), new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('probe: no answer')), this.readDeadlineMs) })])
      const was = this.downSince
      this.downSince = null
      if (was !== null) this.opts.onChange?.(false, `answered again after ${Date.now() - was} ms`)
    } catch {
      this.scheduleProbe(this.probeMs)
    } finally {
      if (timer) clearTimeout(timer)
    }
  }

  /** Stops probing (the store closes). */
  stop() {
    this.stopped = true
    if (this.probeTimer) clearTimeout(this.probeTimer)
    this.probeTimer = null
  }
}
