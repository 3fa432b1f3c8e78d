import { Wakeups } from '../../jobs/lease'

/**
 * When deliveries are tried: the first attempt at once, then after about 5 s, 5 min,
 * 30 min, 2 h, 5 h and 10 h, and every 10 h after that while the 3 days since the first attempt last.
 * An endpoint whose attempts have all failed for 5 days is disabled.
 */
export const RETRY_DELAYS_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000, 5 * 3600_000, 10 * 3600_000]
export const RETRY_WINDOW_MS = 3 * 24 * 3600_000
export const DISABLE_AFTER_MS = 5 * 24 * 3600_000

/**
 * When to try again after `attempts` failed attempts (1 or more), the first of them at `firstAttemptAt`;
 * null when the retry window is over and the delivery fails for good.
 */
export function nextAttemptAt(firstAttemptAt: Date, attempts: number, now: Date): Date | null {
  const delay = RETRY_DELAYS_MS[Math.min(Math.max(attempts, 1), RETRY_DELAYS_MS.length) - 1]
  const at = new Date(now.getTime() + delay)
  return at.getTime() - firstAttemptAt.getTime() > RETRY_WINDOW_MS ? null : at
}

/** "Deliveries are due": the dispatchers of this process at once, other nodes' through Redis. */
export const hookWakeups = new Wakeups('webhooks')
