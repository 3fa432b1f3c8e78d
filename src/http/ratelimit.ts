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

const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`

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

/**
 * Counts in Redis while the client is connected; otherwise (not connected, an error, no answer within
 * `timeoutMs`) counts in the local fallback, so a Redis outage never fails or delays a request: Redis
 * shares the budget between nodes, it is not needed to enforce one.
 */
export function redisLimiter(redis: Redis, opts: RedisLimiterOptions = {}): RateLimiter {
  const prefix = opts.prefix ?? 'mailctl:rl:'
  const fallback = opts.fallback ?? memoryLimiter()
  const timeoutMs = opts.timeoutMs ?? REDIS_LIMIT_TIMEOUT_MS
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
  return {
    hit(key, limit, windowMs) {
      if (redis.status !== 'ready') return local(key, limit, windowMs, new Error(`Redis connection ${redis.status}`))
      let timer: ReturnType<typeof setTimeout> | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer from Redis within ${timeoutMs} ms`)), timeoutMs)
      })
      const counted = (redis.eval(HIT_SCRIPT, 1, prefix + key, String(windowMs)) as Promise<[number, number]>)
        .then(([count, ttl]): RateLimitResult => {
          if (down) {
            down = false
            opts.log?.info('rate limits counted in Redis again')
          }
          const ms = ttl > 0 ? ttl : windowMs
          return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds: Math.ceil(ms / 1000) }
        })
      return Promise.race([counted, timeout])
        .catch((err) => local(key, limit, windowMs, err))
        .finally(() => clearTimeout(timer))
    },
    async reset(key) {
      await fallback.reset(key)
      if (redis.status === 'ready') await redis.del(prefix + key).catch(fail)
    },
  }
}
