/**
 * The process's one clock for time that decides behaviour: expiry, schedules, retries and backoff,
 * windows, rate limits, leases, campaign and workflow timing, token lifetimes. The composition root
 * (src/main.ts) puts `systemClock` in `Deps.clock`; tests put a clock they can move
 * (test/helpers/clock.ts), so days of waits and retries pass in no time.
 *
 * Pure measurement (how long a step took, for logs, metrics and benches) does not go through it and reads
 * `performance.now()` or `Date.now()` directly; test/clock-rule.test.ts keeps every other direct read of
 * the time in src/ on an allow-list with its reason (docs/architecture.md, "Time").
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /** The same instant as a new Date. */
  date(): Date
}

/** The machine's clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  date: () => new Date(),
}
