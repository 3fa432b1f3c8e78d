/**
 * Per-destination concurrency with additive increase: a destination (an MX host, or the smart host)
 * starts at `initial` parallel deliveries; a reply about connections (421 "too many connections") lowers
 * its limit to the connections that were working (by one at least, by half at most), and every
 * `recoverAfter` consecutive successes raise it by one, up to `max` (ten times as many to reach again the
 * limit at which it last refused one). Deliveries beyond the limit wait in line.
 *
 * A destination's share of the pipeline (`capacity`) is what its connections can carry: its limit times
 * `depth` messages per connection (one on the connection or waiting for its outcome to be recorded, the
 * others built and signed, ready for the connection that frees first). The pipeline takes no more of a
 * destination's mail than that (deliver.ts), so a destination that stalls holds at most its share.
 *
 * Several nodes: the limits above are for the whole cluster. Each node takes `1/nodes` of a destination's
 * limit (never less than `min`), where `nodes` is the count of live nodes in the nodes table
 * (jobs/nodes.ts, `liveNodes`, refreshed at each heartbeat), so N nodes open about as many connections to
 * one MX host as one node would, not N times as many. The AIMD state stays per node: a throttling reply
 * lowers this node's view of the limit; the others learn it from their own replies.
 *
 * Message rate: a reply that says the rate is the problem ("rate limited", "too many messages", "slow
 * down"; `throttleKind`) gives the destination a rate: 0.9 times what it accepted over the last 2 s (or
 * since its first success, when that is more recent; half its previous rate when it accepted nothing), at
 * least `minRate`, and remembers what it accepted as the destination's ceiling. Refusals within a second of
 * that cut are of deliveries started before it and cut nothing more. Deliveries then start at most `rate`
 * per second, spaced evenly. Every `recoverAfter` consecutive successes raise the rate by 1 message per
 * second plus 5 %, up to 0.95 of the ceiling; from there on it takes ten times as many successes to add 1
 * message per second (probing whether the receiver takes more), so the rate settles just under the
 * receiver's limit with a refusal now and then, the way Postfix's destination concurrency feedback does
 * for connections. Once the rate is far above what the destination takes the pacing is lifted.
 *
 * Connections: a reply about connections ("too many connections") lowers the connection limit to the
 * connections that were working (at least by one, at most by half). Climbing back to the limit at which it
 * last refused takes ten runs of successes, twice as many after each further refusal at that limit (up to
 * 160 runs), so a receiver that allows 2 connections is asked for a third ever more rarely.
 */

import type { SmtpReply } from './replies'

/** What a throttling reply complains about: our connections, or our message rate. */
export type ThrottleKind = 'connections' | 'rate'

/** Rate-limit words (messages, volume, speed) in a throttling reply; anything else is about connections. */
const RATE_RE = /rate|too many (messages|mails|emails|recipients)|volume|slow down|per (second|minute|hour)|exceeded/i

export function throttleKind(reply: SmtpReply): ThrottleKind {
  if (/connection|concurrent|sessions/i.test(reply.text)) return 'connections'
  return RATE_RE.test(reply.text) ? 'rate' : 'connections'
}

/** The lowest rate (messages/s) a destination is paced to. */
const MIN_RATE = 1
/** Successes remembered for the accepted rate (over RATE_WINDOW_MS). */
const RATE_WINDOW_MS = 2000
/** Rate refusals this soon after a cut are of deliveries started before it: no further cut. */
const CUT_HOLD_MS = 1000
/** The pacing climbs fast up to this share of the ceiling (the rate accepted when last refused), slowly above. */
const NEAR_CEILING = 0.95

export interface ThrottleOptions {
  initial: number
  max: number
  min: number
  recoverAfter: number
  /** Waiting deliveries beyond this per destination are handed back (deferred briefly) instead of queued. */
  maxWaiting: number
  /** Messages per connection a destination may hold in the pipeline (default DEFAULT_DEPTH). */
  depth?: number
}

/** Messages per connection in a destination's share of the pipeline (see `Throttle.capacity`). */
export const DEFAULT_DEPTH = 4

/** What `Destination.acquire` answers: a slot (true), none (false: too many wait, or stopping), or 'shed'. */
export type Slot = boolean | 'shed'

export const DEFAULT_THROTTLE: ThrottleOptions = { initial: 8, max: 32, min: 1, recoverAfter: 20, maxWaiting: 2000, depth: DEFAULT_DEPTH }

export class Destination {
  /** The destination's limit for the whole cluster (AIMD). */
  limit: number
  active = 0
  streak = 0
  private waiting: Array<(ok: Slot) => void> = []
  /**
   * Shed (the pipeline found the destination stalled): deliveries that would wait for a slot are answered
   * 'shed' at once, until one of its deliveries ends.
   */
  shedding = false
  /** The limit at which the destination last refused a connection (null: never), and runs of successes towards it. */
  private refusedAt: number | null = null
  private connStreak = 0
  /** Runs of successes needed to climb back to `refusedAt` (10, doubled by each refusal at that limit). */
  private refusedRuns = 10
  /** The accepted rate when the destination last refused on the rate (null: never, or pacing lifted). */
  private ceiling: number | null = null
  /** When the rate was last cut, and runs of successes counted towards a probe above NEAR_CEILING. */
  private cutAt = 0
  private rateRuns = 0
  /** The first success seen (the accepted rate of a young destination is over the time since). */
  private since = 0
  /** Messages per second this node starts for the destination (null: not paced). */
  rate: number | null = null
  /** When the next paced delivery may start (ms). */
  private nextStart = 0
  /** Times of recent successes (the accepted rate over RATE_WINDOW_MS). */
  private accepted: number[] = []
  /** The node is stopping: no delivery starts any more (acquire answers false, waiters too). */
  stopped = false

  constructor(readonly key: string, private opts: ThrottleOptions, private nodes: () => number = () => 1) {
    this.limit = opts.initial
  }

  /** This node's part of the limit: the cluster limit divided by the live nodes, at least `min`. */
  get local(): number {
    return shareOf(this.limit, this.nodes(), this.opts.min)
  }

  get queued(): number { return this.waiting.length }

  /**
   * Resolves with true once a slot is free, or false at once when too many already wait (or the node is
   * stopping), or 'shed' when the pipeline takes the waiting deliveries back (`shed`).
   */
  acquire(): Promise<Slot> {
    if (this.stopped) return Promise.resolve(false)
    if (this.active < this.local) {
      this.active++
      return this.paced(true)
    }
    if (this.shedding) return Promise.resolve('shed')
    if (this.waiting.length >= this.opts.maxWaiting) return Promise.resolve(false)
    return new Promise<Slot>((resolve) => this.waiting.push(resolve)).then((slot) => (slot === true ? this.paced(true) : slot))
  }

  /** Resolves with `slot` once the destination's rate lets the next delivery start (at once when not paced). */
  private paced(slot: Slot): Promise<Slot> {
    if (this.rate === null) return Promise.resolve(slot)
    const now = Date.now()
    const at = Math.max(now, this.nextStart)
    this.nextStart = at + 1000 / this.rate
    return at <= now ? Promise.resolve(slot) : new Promise((resolve) => setTimeout(() => resolve(this.stopped ? false : slot), at - now))
  }

  /** Messages per second the destination accepted over the last RATE_WINDOW_MS. */
  acceptedRate(now = Date.now()): number {
    while (this.accepted.length && this.accepted[0] < now - RATE_WINDOW_MS) this.accepted.shift()
    if (!this.accepted.length) return 0
    // Over the last RATE_WINDOW_MS, or over the time since the first success when that is shorter (at
    // least 500 ms): a destination that took 50 in its first second took 50/s, not 25.
    const span = Math.max(500, Math.min(RATE_WINDOW_MS, now - this.since))
    return this.accepted.length / (span / 1000)
  }

  /** Resolves with true once the destination's pacing lets a delivery that holds a slot start again (direct.ts). */
  turn(): Promise<Slot> {
    return this.stopped ? Promise.resolve(false) : this.paced(true)
  }

  /**
   * The destination stalled (deliver.ts): deliveries waiting for a slot are answered 'shed'. They have not
   * started, so the caller returns without an outcome and the pipeline gives them back to the queue.
   */
  shed(): number {
    this.shedding = true
    const waiting = this.waiting.splice(0)
    for (const w of waiting) w('shed')
    return waiting.length
  }

  /** Stopping: deliveries waiting for a slot are told no (they have not started: the caller hands them back). */
  stop(): void {
    this.stopped = true
    for (const w of this.waiting.splice(0)) w(false)
  }

  /** A delivery ended (`n` = 0: only start what now fits, after the share grew). */
  release(n = 1): void {
    if (n > 0) this.shedding = false
    this.active -= n
    this.pump()
  }

  private pump() {
    while (this.active < this.local && this.waiting.length) {
      this.active++
      this.waiting.shift()?.(true)
    }
  }

  success(now = Date.now()): void {
    if (!this.since) this.since = now
    this.accepted.push(now)
    if (this.accepted.length > 4096) this.accepted.shift()
    this.streak++
    if (this.streak < this.opts.recoverAfter) return
    this.streak = 0
    if (this.rate !== null) {
      const near = this.ceiling !== null ? NEAR_CEILING * this.ceiling : Number.POSITIVE_INFINITY
      if (this.rate < near) {
        this.rate = Math.min(near, this.rate + 1 + this.rate * 0.05)
      } else if (++this.rateRuns >= 10) {
        // At the ceiling: a probe of 1 message/s more now and then (the receiver may take more by now).
        this.rateRuns = 0
        this.rate += 1
      }
      // Well above what the destination takes now: the pacing is lifted (a later rate reply sets it again).
      if (this.rate > 4 * Math.max(MIN_RATE, this.acceptedRate(now)) + 10) {
        this.rate = null
        this.ceiling = null
      }
    }
    // Back at the limit where the destination last refused a connection: more successes first.
    this.connStreak++
    const need = this.refusedAt !== null && this.limit + 1 >= this.refusedAt ? this.refusedRuns : 1
    if (this.limit < this.opts.max && this.connStreak >= need) {
      this.connStreak = 0
      this.limit++
      this.pump()
    }
  }

  /**
   * A throttling reply: about connections, lower the limit (above); about the rate, pace the
   * destination below what it accepted lately (see the top of this file).
   */
  throttled(kind: ThrottleKind = 'connections', now = Date.now()): void {
    if (kind === 'connections') {
      this.streak = 0
      this.refusedRuns = this.refusedAt === this.limit ? Math.min(160, this.refusedRuns * 2) : 10
      this.refusedAt = this.limit
      this.connStreak = 0
      // Down to the connections that were working when it refused one more (the refused delivery holds a
      // slot too), and at least by one; never below half at once for a burst of refusals, never below min.
      this.limit = Math.max(this.opts.min, Math.min(this.limit - 1, Math.max(Math.floor(this.limit / 2), this.active - 1)))
      return
    }
    // Started before the last cut: that cut already answered it.
    if (this.rate !== null && now - this.cutAt < CUT_HOLD_MS) return
    this.streak = 0
    this.rateRuns = 0
    this.cutAt = now
    const seen = this.acceptedRate(now)
    this.ceiling = seen > 0 ? seen : null
    this.rate = Math.max(MIN_RATE, seen > 0 ? seen * 0.9 : (this.rate ?? this.local) / 2)
    this.nextStart = Math.max(this.nextStart, now + 1000 / this.rate)
  }
}

/** One node's part of a cluster-wide limit: `limit / nodes` rounded down, and never below `min`. */
export function shareOf(limit: number, nodes: number, min: number): number {
  return Math.max(min, Math.floor(limit / Math.max(1, nodes)))
}

export class Throttle {
  private dests = new Map<string, Destination>()
  private nodes = 1
  constructor(readonly opts: ThrottleOptions = DEFAULT_THROTTLE) {}

  get(key: string): Destination {
    let d = this.dests.get(key)
    if (!d) {
      d = new Destination(key, this.opts, () => this.nodes)
      d.stopped = this.stopped
      this.dests.set(key, d)
    }
    return d
  }

  /** True once `stop` was called: deliveries that have not acquired a slot do not start. */
  stopped = false

  /** Shutdown: no delivery starts any more; those waiting for a slot are answered false at once. */
  stop(): void {
    this.stopped = true
    for (const d of this.dests.values()) d.stop()
  }

  /**
   * The live nodes that share every destination's limit (the nodes table's count). A rise takes effect
   * for the next deliveries; a fall lets waiting deliveries start now.
   */
  shareAmong(nodes: number): void {
    const n = Math.max(1, Math.floor(nodes))
    if (n === this.nodes) return
    this.nodes = n
    for (const d of this.dests.values()) d.release(0)
  }

  /**
   * How many messages destination `key` may hold in the pipeline at once: its current limit (the
   * initial one for a destination not seen yet) times the depth per connection.
   */
  capacity(key: string): number {
    const limit = this.dests.get(key)?.limit ?? this.opts.initial
    return shareOf(limit, this.nodes, this.opts.min) * (this.opts.depth ?? DEFAULT_DEPTH)
  }

  /** This node's connection limit to destination `key` now (the initial one for a destination not seen yet). */
  connections(key: string): number {
    return shareOf(this.dests.get(key)?.limit ?? this.opts.initial, this.nodes, this.opts.min)
  }

  /** Answers the deliveries waiting for a slot of `key` 'shed' (see Destination.shed); returns how many. */
  shed(key: string): number {
    return this.dests.get(key)?.shed() ?? 0
  }

  /** Limits and activity per destination (for `mailctl queue` in-process and tests). */
  snapshot(): Array<{ key: string; limit: number; active: number; queued: number; rate: number | null }> {
    return [...this.dests.values()].map((d) => ({ key: d.key, limit: d.local, active: d.active, queued: d.queued, rate: d.rate === null ? null : Math.round(d.rate * 10) / 10 }))
  }
}
