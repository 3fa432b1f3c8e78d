/**
 * Per-destination concurrency with additive-increase / multiplicative-decrease: a destination (an MX
 * host, or the smart host) starts at `initial` parallel deliveries; a throttling reply (421 "too many
 * connections", rate limits) halves its limit, and every `recoverAfter` consecutive successes raise it
 * by one, up to `max`. Deliveries beyond the limit wait in line.
 *
 * A destination's share of the pipeline (`capacity`) is what its connections can carry: its limit times
 * `depth` messages per connection (one on the connection or waiting for its outcome to be recorded, the
 * others built and signed, ready for the connection that frees first). The pipeline takes no more of a
 * destination's mail than that (deliver.ts), so a destination that stalls holds at most its share.
 */

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

export const DEFAULT_THROTTLE: ThrottleOptions = { initial: 8, max: 32, min: 1, recoverAfter: 20, maxWaiting: 2000, depth: DEFAULT_DEPTH }

export class Destination {
  limit: number
  active = 0
  streak = 0
  private waiting: Array<() => void> = []

  constructor(readonly key: string, private opts: ThrottleOptions) {
    this.limit = opts.initial
  }

  get queued(): number { return this.waiting.length }

  /** Resolves with true once a slot is free, or false at once when too many already wait. */
  acquire(): Promise<boolean> {
    if (this.active < this.limit) {
      this.active++
      return Promise.resolve(true)
    }
    if (this.waiting.length >= this.opts.maxWaiting) return Promise.resolve(false)
    return new Promise((resolve) => this.waiting.push(() => resolve(true)))
  }

  release(): void {
    this.active--
    this.pump()
  }

  private pump() {
    while (this.active < this.limit && this.waiting.length) {
      this.active++
      this.waiting.shift()?.()
    }
  }

  success(): void {
    this.streak++
    if (this.streak >= this.opts.recoverAfter && this.limit < this.opts.max) {
      this.limit++
      this.streak = 0
      this.pump()
    }
  }

  /** A throttling reply: halve the limit (never below min). */
  throttled(): void {
    this.streak = 0
    this.limit = Math.max(this.opts.min, Math.floor(this.limit / 2))
  }
}

export class Throttle {
  private dests = new Map<string, Destination>()
  constructor(readonly opts: ThrottleOptions = DEFAULT_THROTTLE) {}

  get(key: string): Destination {
    let d = this.dests.get(key)
    if (!d) {
      d = new Destination(key, this.opts)
      this.dests.set(key, d)
    }
    return d
  }

  /**
   * How many messages destination `key` may hold in the pipeline at once: its current limit (the
   * initial one for a destination not seen yet) times the depth per connection.
   */
  capacity(key: string): number {
    return (this.dests.get(key)?.limit ?? this.opts.initial) * (this.opts.depth ?? DEFAULT_DEPTH)
  }

  /** Limits and activity per destination (for `mailctl queue` in-process and tests). */
  snapshot(): Array<{ key: string; limit: number; active: number; queued: number }> {
    return [...this.dests.values()].map((d) => ({ key: d.key, limit: d.limit, active: d.active, queued: d.queued }))
  }
}
