import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pgReachableSync, TestEnv } from '../helpers/env'
import { defineJob, enqueue, Worker } from '../../src/jobs/queue'

/**
 * A wake-up sent from inside a transaction (a recurring job re-queued as its run commits, a job queued by
 * a service inside its transaction) must not make the woken worker's claim join that transaction: on
 * PostgreSQL the claim then ran on a finished transaction and never resolved, holding the worker's
 * slots, so the worker stopped taking jobs (and a SIGTERM waited for it).
 */

// PostgreSQL only: skipped, like every PostgreSQL suite, when PostgreSQL is unreachable outside CI or under
// MAILCTL_TEST_STORES=sqlite (npm run test:fast).
describe.skipIf(!pgReachableSync())('a worker\'s wake-up context [pg]', () => {
  const env = new TestEnv('pg')
  beforeAll(() => env.start(), 60_000)
  afterAll(() => env.stop(), 60_000)

  test('after a recurring job re-queues itself in its transaction, the worker claims new jobs and stops', async () => {
    const tag = Math.random().toString(36).slice(2, 8)
    let resolveRan = () => {}
    const ran = new Promise<void>((r) => { resolveRan = r })
    let recurring = 0
    let resolveRecurring = () => {}
    const recurred = new Promise<void>((r) => { resolveRecurring = r })
    const R = 8
    const worker = new Worker(env.deps, [
      ...Array.from({ length: R }, (_, i) => defineJob({ name: `rec${i}.${tag}`, everyMs: 3_600_000, async run() { if (++recurring === R) resolveRecurring() } })),
      defineJob({ name: `one.${tag}`, async run() { resolveRan() } }),
    ], { concurrency: 16, pollMs: 60_000 })
    await worker.start()
    try {
      await recurred
      // Let the re-queue's commit and its wake-up happen.
      await Bun.sleep(50)
      await enqueue(env.store, `one.${tag}`, {}, { wake: null, now: new Date() })
      await ran
      expect(recurring).toBe(R)
    } finally {
      // Without a grace: it resolves only if no claim is left hanging.
      await worker.stop()
    }
  }, 15_000)
})
