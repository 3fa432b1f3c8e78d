import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import Redis from 'ioredis'
import { pgReachableSync, TestEnv } from '../helpers/env'
import { startRedis, type PrivateRedis } from '../helpers/redis'
import { defineJob, Worker } from '../../src/jobs/queue'

/**
 * Issue 14, "wake-ups are local": a job queued by another process (another node) wakes this node's worker
 * through Redis. The worker polls once a minute, so only the wake-up can make it run the job before the
 * test's timeout.
 */

// PostgreSQL only: skipped, like every PostgreSQL suite, when PostgreSQL is unreachable outside CI or under
// MAILCTL_TEST_STORES=sqlite (npm run test:fast).
describe.skipIf(!pgReachableSync())('Redis wake-ups between nodes [pg]', () => {
  const env = new TestEnv('pg')
  let redis: Redis
  let server: PrivateRedis
  beforeAll(async () => {
    await env.start()
    server = await startRedis()
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 })
    await redis.ping()
    env.deps.redis = redis
  })
  afterAll(async () => {
    redis.disconnect()
    await server.kill()
    await env.stop()
  })

  test('a job queued on another node (inside its transaction) is run at once through the Redis wake-up', async () => {
    const name = `wake.${Math.random().toString(36).slice(2, 8)}`
    let resolveRan = () => {}
    const ran = new Promise<void>((r) => { resolveRan = r })
    const worker = new Worker(env.deps, [defineJob({ name, async run() { resolveRan() } })], { pollMs: 60_000 })
    await worker.start()
    try {
      const child = Bun.spawn([process.execPath, join(import.meta.dir, 'enqueue-child.ts'), env.config.databaseUrl, server.url, name], { stdout: 'inherit', stderr: 'inherit' })
      expect(await child.exited).toBe(0)
      await ran
      const [row] = await env.store.rows<{ status: string }>((await import('drizzle-orm')).sql`SELECT status FROM jobs WHERE name = ${name}`)
      expect(['running', 'completed']).toContain(row.status)
    } finally {
      await worker.stop()
    }
  }, 20_000)
})
