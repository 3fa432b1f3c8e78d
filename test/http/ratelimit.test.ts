import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { forEachStore, type TestEnv } from '../helpers/env'
import { redisLimiter } from '../../src/http/ratelimit'
import { until } from '../helpers/worker'

const LIMIT = 3
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Spends the budget of one project and checks the headers of every answer, then the 429. */
async function exhaust(env: TestEnv, key: string) {
  for (let i = 1; i <= LIMIT; i++) {
    const res = await env.request('GET', '/contacts?limit=1', { key })
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit-limit')).toBe(String(LIMIT))
    expect(res.headers.get('ratelimit-remaining')).toBe(String(LIMIT - i))
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0)
    expect(Number(res.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(60)
  }
  const res = await env.request('GET', '/contacts?limit=1', { key })
  expect(res.status).toBe(429)
  expect(res.body.success).toBe(false)
  expect(res.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', statusCode: 429 })
  expect(res.headers.get('ratelimit-remaining')).toBe('0')
  const retry = Number(res.headers.get('retry-after'))
  expect(retry).toBeGreaterThan(0)
  expect(retry).toBeLessThanOrEqual(60)
  expect(res.headers.get('x-request-id')).toBe(res.body.error.requestId)
  return res
}

forEachStore('rate limit (memory limiter)', (env) => {
  test('per project: RateLimit-* headers, then 429 with Retry-After; other projects keep their budget', async () => {
    const a = await env.project()
    const b = await env.project()
    await exhaust(env, a.secretKey)
    // The public key of the same project has a budget of its own (test/http/public-key.test.ts).
    expect((await env.request('POST', '/v1/track', { key: a.publicKey, body: { email: 'x@example.com', event: 'e' } })).status).toBe(200)
    expect((await env.request('GET', '/contacts?limit=1', { key: b.secretKey })).status).toBe(200)
  })

  test('unauthenticated and invalid-key requests do not spend a project budget', async () => {
    const p = await env.project()
    for (let i = 0; i < LIMIT + 2; i++) expect((await env.request('GET', '/contacts?limit=1')).status).toBe(401)
    expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(200)
  })
}, { rateLimitPerMinute: LIMIT })

forEachStore('rate limit (Redis limiter)', (env) => {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true })
  const prefix = `mailctl:test:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`

  // Every test of this suite needs Redis: an unreachable Redis fails them all (never a skip).
  beforeAll(async () => {
    await redis.connect()
    env.deps.limiter = redisLimiter(redis, { prefix })
    env.onStop(async () => {
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
    })
  })

  test('Redis is reachable and the app counts in it', async () => {
    expect(await redis.ping()).toBe('PONG')
    const p = await env.project()
    expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(200)
    expect(await redis.get(`${prefix}project:${p.id}`)).toBe('1')
  })

  test('per project in Redis: headers, 429 with Retry-After, the counter lives in Redis with an expiry', async () => {
    const p = await env.project()
    await exhaust(env, p.secretKey)
    const key = `${prefix}project:${p.id}`
    expect(Number(await redis.get(key))).toBe(LIMIT + 1)
    const ttl = await redis.pttl(key)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(60_000)
  })

  test('two nodes (two limiters on one Redis) share one budget', async () => {
    const p = await env.project()
    const nodeB = redisLimiter(redis, { prefix })
    for (let i = 0; i < LIMIT - 1; i++) expect((await nodeB.hit(`project:${p.id}`, LIMIT, 60_000)).allowed).toBe(true)
    const last = await env.request('GET', '/contacts?limit=1', { key: p.secretKey })
    expect(last.status).toBe(200)
    expect(last.headers.get('ratelimit-remaining')).toBe('0')
    expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(429)
  })
}, { rateLimitPerMinute: LIMIT })

describe('Redis limiter: the hits of one turn of the event loop', () => {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true })
  const watcher = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true })
  /** The MONITOR connection (ioredis opens one of its own). */
  let monitor: Redis | null = null
  const prefix = `mailctl:test:turn:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`
  /** The commands Redis ran on this file's counters (MONITOR on a connection of its own). */
  const seen: string[][] = []

  beforeAll(async () => {
    await redis.connect()
    monitor = await watcher.monitor()
    monitor.on('monitor', (_time: string, args: string[]) => { if (args.some((a) => a.startsWith(prefix))) seen.push(args) })
    // MONITOR starts with the next command: wait until it shows one of ours.
    await until(async () => { await redis.get(`${prefix}ping`); return seen.length > 0 }, 5_000, 'MONITOR to start')
  })
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
    monitor?.disconnect()
    watcher.disconnect()
  })

  // Each limiter waits long for Redis: on a slow machine its local fallback would answer alike and hide it.
  test('one command per counter for all of them, each hit answered as if counted alone; a later turn sends again', async () => {
    const limiter = redisLimiter(redis, { prefix, timeoutMs: 10_000 })
    seen.length = 0
    const answers = await Promise.all(Array.from({ length: 8 }, () => limiter.hit('project:a', 5, 60_000)))
    expect(answers.map((a) => a.allowed)).toEqual([true, true, true, true, true, false, false, false])
    expect(answers.map((a) => a.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0, 0])
    for (const a of answers) expect(a.resetSeconds).toBeGreaterThan(0)
    expect(await redis.get(`${prefix}project:a`)).toBe('8')
    const sent = () => seen.filter((args) => /^(evalsha|eval)$/i.test(args[0]))
    await until(() => sent().length >= 1, 5_000, 'the command in MONITOR')
    expect(sent().map((args) => args.slice(-3))).toEqual([[`${prefix}project:a`, '60000', '8']])
    // Another counter in the same turn has its own command; the next turn sends again.
    const [b, c] = await Promise.all([limiter.hit('project:b', 5, 60_000), limiter.hit('project:c', 5, 60_000)])
    expect([b.remaining, c.remaining]).toEqual([4, 4])
    const again = await limiter.hit('project:a', 5, 60_000)
    expect({ allowed: again.allowed, remaining: again.remaining }).toEqual({ allowed: false, remaining: 0 })
    expect(await redis.get(`${prefix}project:a`)).toBe('9')
    await until(() => sent().length >= 4, 5_000, 'the later commands in MONITOR')
    expect(sent().map((args) => args.at(-3)).sort()).toEqual([`${prefix}project:a`, `${prefix}project:a`, `${prefix}project:b`, `${prefix}project:c`])
  })

  test('a counter left without an expiry gets one at its next hit', async () => {
    const limiter = redisLimiter(redis, { prefix, timeoutMs: 10_000 })
    await redis.set(`${prefix}project:stuck`, '3')
    expect(await redis.pttl(`${prefix}project:stuck`)).toBe(-1)
    const r = await limiter.hit('project:stuck', 10, 60_000)
    expect(r.remaining).toBe(6)
    const ttl = await redis.pttl(`${prefix}project:stuck`)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(60_000)
  })
})
