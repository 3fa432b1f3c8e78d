import { beforeAll, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import type Redis from 'ioredis'
import { forEachStore } from '../helpers/env'
import { projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { connectRedis } from '../../src/main'
import { redisLimiter } from '../../src/http/ratelimit'
import { Wakeups } from '../../src/jobs/lease'
import type { Logger } from '../../src/log'
import { freePort } from '../helpers/ports'

/**
 * Issue 14, "Redis is an accelerator": a private redis-server is killed in the middle of a run. The API
 * keeps answering (rate limits counted locally), sends and tracks still work, wake-ups fall back to
 * polling without errors, and once Redis is back on the same port the shared limiter is used again.
 */

const LIMIT = 1000
const dns = await startTestDns()

/** Waits for `cond` (no timing assertion: the test's own timeout bounds it). */
async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await Bun.sleep(10)
}

function redisServer(port: number): Subprocess {
  return Bun.spawn(['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
}

interface Line { level: string; msg: string }
function captureLog(lines: Line[]): Logger {
  const at = (level: string) => (msg: string) => { lines.push({ level, msg }) }
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log }
  return log
}

forEachStore('Redis stopped in the middle of a run', (env) => {
  let port = 0
  let server: Subprocess | null = null
  let redis: Redis
  const lines: Line[] = []
  const log = captureLog(lines)
  const prefix = `mailctl:outage:${Math.random().toString(36).slice(2)}:`
  const counted = async (projectId: string): Promise<string | null> => redis.get(`${prefix}project:${projectId}`)

  beforeAll(async () => {
    port = freePort()
    server = redisServer(port)
    const url = `redis://127.0.0.1:${port}`
    // The server needs a moment to listen: connect through the composition root's code until it does.
    let client: Redis | null = null
    await until(async () => { client = await connectRedis(url, log).catch(() => null); return client !== null })
    redis = client as unknown as Redis
    env.deps.redis = redis
    env.deps.limiter = redisLimiter(redis, { prefix, log })
    env.onStop(async () => {
      redis.disconnect()
      server?.kill('SIGKILL')
      await server?.exited
    })
  })

  test('API calls, sends and tracks go on through the outage; Redis is used again once it is back', async () => {
    const p = await projectWithDomain(env, dns, `outage-${Math.random().toString(36).slice(2, 8)}.test`)
    const wake = new Wakeups(`outage-${Math.random().toString(36).slice(2)}`)
    let heard = 0
    const unsubscribe = await wake.subscribe(redis, log, () => { heard++ })

    // Up: the counter lives in Redis, and a wake-up reaches subscribers through Redis.
    expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(200)
    expect(await counted(p.id)).toBe('1')
    wake.notify({ redis, log })
    await until(() => heard === 1)

    // Down (SIGKILL, like a crash).
    server?.kill('SIGKILL')
    await server?.exited
    await until(() => redis.status !== 'ready')

    const list = await env.request('GET', '/contacts?limit=1', { key: p.secretKey })
    expect(list.status).toBe(200)
    // Counted by the local limiter, from zero: Redis had counted one already.
    expect(list.headers.get('ratelimit-limit')).toBe(String(LIMIT))
    expect(list.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1))
    const track = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'outage@example.com', event: 'during-outage' } })
    expect(track.status).toBe(200)
    // The public key counts in its own budget (issue 35, item 2), locally too.
    expect(track.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1))
    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'someone@dest.test', from: p.from, subject: 's', body: 'b' } })
    expect(sent.status).toBe(200)
    expect(sent.body.data.emails[0].status).toBe('queued')
    // A wake-up while Redis is down wakes this process only, and neither throws nor logs a warning.
    expect(() => wake.notify({ redis, log })).not.toThrow()
    const fallbacks = lines.filter((l) => l.msg.startsWith('rate limits fall back'))
    expect(fallbacks).toHaveLength(1)
    expect(fallbacks[0].level).toBe('warn')
    expect(lines.filter((l) => l.level === 'warn' && l.msg.includes('wake-up'))).toHaveLength(0)

    // Back on the same port: ioredis reconnects, the subscription is renewed and counting returns to Redis.
    server = redisServer(port)
    await until(() => redis.status === 'ready')
    const back = await env.request('GET', '/contacts?limit=1', { key: p.secretKey })
    expect(back.status).toBe(200)
    // A fresh Redis (no persistence) counts from zero again.
    expect(back.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1))
    expect(await counted(p.id)).toBe('1')
    expect(lines.filter((l) => l.msg === 'rate limits counted in Redis again')).toHaveLength(1)
    await until(async () => { wake.notify({ redis, log }); await Bun.sleep(20); return heard >= 2 })
    unsubscribe()
  }, 30_000)
}, { rateLimitPerMinute: LIMIT, dnsServers: [dns.server] })
