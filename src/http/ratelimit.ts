import type Redis from 'ioredis'
import { systemClock, type Clock } from '../clock'
import { errorFields, type Logger } from '../log'

export interface RateLimitResult { allowed: boolean; limit: number; remaining: number; resetSeconds: number }

/** Fixed-window counters: in memory on one node, in Redis when REDIS_URL is set (shared by every node). */
export interface RateLimiter {
  /** Counts one hit; the memory limiter answers synchronously (no promise on every request). */
  hit(key: string, limit: number, windowMs: number): RateLimitResult | Promise<RateLimitResult>
  reset(key: string): Promise<void>
}

export function memoryLimiter(clock: Clock = systemClock): RateLimiter {
  const windows = new Map<string, { count: number; resetAt: number }>()
  let sweepAt = 0
  return {
    hit(key, limit, windowMs) {
      const now = clock.now()
      if (now > sweepAt) {
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
        sweepAt = now + 60_000
      }
      let w = windows.get(key)
      if (!w || w.resetAt <= now) {
        w = { count: 0, resetAt: now + windowMs }
        windows.set(key, w)
      }
      w.count++
      return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetSeconds: Math.ceil((w.resetAt - now) / 1000) }
    },
    async reset(key) { windows.delete(key) },
  }
}

/**
 * Counts `ARGV[2]` hits at once (INCRBY) in a window of `ARGV[1]` ms, and answers the count and the
 * window's milliseconds left. A counter without an expiry (made by INCRBY alone, whatever made it) gets
 * one: it never counts forever. Old nodes' one-hit script (INCR) counts in the same keys.
 */
const HIT_SCRIPT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`

/** The limiter's script as an ioredis command: sent as EVALSHA (EVAL once per connection, to load it). */
const HIT_COMMAND = 'mailctlRateHit'
type HitCommand = (key: string, windowMs: string, hits: string) => Promise<[number, number]>

/** How long a Redis limiter waits for Redis before it counts locally instead. */
export const REDIS_LIMIT_TIMEOUT_MS = 250

export interface RedisLimiterOptions {
  prefix?: string
  /** Counts while Redis is down or slow (a node-local budget); a memory limiter when absent. */
  fallback?: RateLimiter
  /** Logs the fallback once per outage and the return to Redis. */
  log?: Logger
  timeoutMs?: number
}

/** Hits of one counter waiting for the next round trip: each with its own limit, answered in order. */
interface Waiting { key: string; windowMs: number; hits: Array<{ limit: number; resolve: (r: RateLimitResult | Promise<RateLimitResult>) => void }> }

/**
 * Counts in Redis while the client is connected; otherwise (not connected, an error, no answer within
 * `timeoutMs`) counts in the local fallback, so a Redis outage never fails or delays a request: Redis
 * shares the budget between nodes, it is not needed to enforce one.
 *
 * The hits of one turn of the event loop go to Redis together: one command per counter, however many
 * requests of the turn it counts (INCRBY n; hit i of the turn is count n_before + i, exactly what n INCRs
 * would answer), with one deadline for all. Under track load a turn holds several requests of one
 * project: about 8 per command instead of one, and 12 % less of the main thread per track at 32
 * connections (none measured at 16; docs/benchmarks.md).
 */
export function redisLimiter(redis: Redis, opts: RedisLimiterOptions = {}): RateLimiter {
  const prefix = opts.prefix ?? 'mailctl:rl:'
  const fallback = opts.fallback ?? memoryLimiter()
  const timeoutMs = opts.timeoutMs ?? REDIS_LIMIT_TIMEOUT_MS
  if (!(HIT_COMMAND in redis)) redis.defineCommand(HIT_COMMAND, { numberOfKeys: 1, lua: HIT_SCRIPT })
  const command = (redis as unknown as Record<string, HitCommand>)[HIT_COMMAND].bind(redis)
  let down = false
  const fail = (err: unknown) => {
    if (down) return
    down = true
    opts.log?.warn('rate limits fall back to local counters: Redis unavailable', errorFields(err))
  }
  const local = (key: string, limit: number, windowMs: number, err: unknown) => {
    fail(err)
    return fallback.hit(key, limit, windowMs)
  }
  /** The counters hit in this turn of the loop, by window and key. */
  let waiting = new Map<string, Waiting>()
  let scheduled = false

  const send = () => {
    scheduled = false
    const groups = waiting
    waiting = new Map()
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from Redis within ${timeoutMs} ms`)), timeoutMs)
    })
    timeout.catch(() => {})
    const answered = [...groups.values()].map((g) => {
      const counted = redis.status === 'ready' ? command(prefix + g.key, String(g.windowMs), String(g.hits.length)) : Promise.reject(new Error(`Redis connection ${redis.status}`))
      return Promise.race([counted, timeout]).then(([count, ttl]) => {
        if (down) {
          down = false
          opts.log?.info('rate limits counted in Redis again')
        }
        const resetSeconds = Math.ceil((ttl > 0 ? ttl : g.windowMs) / 1000)
        const before = count - g.hits.length
        g.hits.forEach((h, i) => {
          const n = before + i + 1
          h.resolve({ allowed: n <= h.limit, limit: h.limit, remaining: Math.max(0, h.limit - n), resetSeconds })
        })
      }).catch((err: unknown) => {
        // Every hit is answered: counted locally (a fallback that fails rejects only its own hit).
        for (const h of g.hits) h.resolve(Promise.resolve().then(() => local(g.key, h.limit, g.windowMs, err)))
      })
    })
    void Promise.all(answered).finally(() => clearTimeout(timer))
  }

  return {
    hit(key, limit, windowMs) {
      if (redis.status !== 'ready') return local(key, limit, windowMs, new Error(`Redis connection ${redis.status}`))
      return new Promise<RateLimitResult>((resolve) => {
        const id = `${windowMs} ${key}`
        let g = waiting.get(id)
        if (!g) {
          g = { key, windowMs, hits: [] }
          waiting.set(id, g)
        }
        g.hits.push({ limit, resolve })
        if (!scheduled) {
          scheduled = true
          // After the requests read in this turn of the loop: they share the round trip.
          setImmediate(send)
        }
      })
    },
    async reset(key) {
      await fallback.reset(key)
      if (redis.status === 'ready') await redis.del(prefix + key).catch(fail)
    },
  }
}
