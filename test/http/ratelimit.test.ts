import { beforeAll, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { forEachStore, type TestEnv } from '../helpers/env'
import { redisLimiter } from '../../src/http/ratelimit'

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
