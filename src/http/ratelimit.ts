import type Redis from 'ioredis'

export interface RateLimitResult { allowed: boolean; limit: number; remaining: number; resetSeconds: number }

/** Fixed-window counters: in memory on one node, in Redis when REDIS_URL is set (shared by every node). */
export interface RateLimiter {
  /** Counts one hit; the memory limiter answers synchronously (no promise on every request). */
  hit(key: string, limit: number, windowMs: number): RateLimitResult | Promise<RateLimitResult>
  reset(key: string): Promise<void>
}

export function memoryLimiter(): RateLimiter {
  const windows = new Map<string, { count: number; resetAt: number }>()
  let sweepAt = 0
  return {
    hit(key, limit, windowMs) {
      const now = Date.now()
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

export function redisLimiter(redis: Redis, prefix = 'mailctl:rl:'): RateLimiter {
  return {
    async hit(key, limit, windowMs) {
      const [count, ttl] = (await redis.eval(HIT_SCRIPT, 1, prefix + key, String(windowMs))) as [number, number]
      const ms = ttl > 0 ? ttl : windowMs
      return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetSeconds: Math.ceil(ms / 1000) }
    },
    async reset(key) { await redis.del(prefix + key) },
  }
}
