import type { Clock } from '../../src/clock'

/**
 * A clock tests move. Until it is moved it reads the machine's time, so a suite that never moves it
 * behaves as under the system clock. `advance(ms)` moves it (and keeps it running with the real time, by
 * an offset); `set(at)` stops it at `at` until the next `set`, `advance` (which moves the stopped time)
 * or `reset()` (back to the machine's time).
 */
export class TestClock implements Clock {
  private offset = 0
  private frozen: number | null = null

  constructor(at?: number | Date) {
    if (at !== undefined) this.set(at)
  }

  now(): number {
    return this.frozen ?? Date.now() + this.offset
  }

  date(): Date {
    return new Date(this.now())
  }

  /** Moves the clock `ms` forward (backward when negative). */
  advance(ms: number): void {
    if (this.frozen !== null) this.frozen += ms
    else this.offset += ms
  }

  /** Stops the clock at `at`. */
  set(at: number | Date): void {
    this.frozen = typeof at === 'number' ? at : at.getTime()
  }

  /** Back to the machine's time, unmoved (a suite's afterEach, after a test that moved the clock). */
  reset(): void {
    this.offset = 0
    this.frozen = null
  }
}

/** Runs `fn` with the env's clock `ms` ahead (a retry's backoff passed, a schedule come), then puts it back. */
export async function later<T>(env: { clock: TestClock }, ms: number, fn: () => Promise<T>): Promise<T> {
  env.clock.advance(ms)
  try {
    return await fn()
  } finally {
    env.clock.advance(-ms)
  }
}

/** The machine's clock, `ms` behind (another node whose heartbeats stopped long ago). */
export function behind(ms: number): TestClock {
  const c = new TestClock()
  c.advance(-ms)
  return c
}
