import { and, eq, lt } from 'drizzle-orm'
import { createHash } from 'node:crypto'
import type { Ctx } from '../../deps'
import { AppError, invalidField } from '../../errors'

const KEY_RE = /^[\x20-\x7e]{1,255}$/

export interface IdempotentRequest { method: string; path: string; body: unknown }

/**
 * The Idempotency-Key mechanism (API.md Limits, DECISIONS.md): the key is claimed with a unique row
 * before the work starts, so concurrent requests with one key settle in the database and only one runs.
 * A 4xx outcome releases the key; 2xx and 5xx keep it until it expires (MAILCTL_IDEMPOTENCY_TTL_HOURS).
 * A reused key answers 409 IDEMPOTENCY_KEY_REUSED and the work is not performed again.
 */
export async function withIdempotency<T>(ctx: Ctx, key: string | null | undefined, req: IdempotentRequest, work: () => Promise<T>): Promise<T> {
  if (key === null || key === undefined) return work()
  if (!KEY_RE.test(key)) {
    throw invalidField('Idempotency-Key', 'Idempotency-Key must be 1-255 printable ASCII characters', 'invalid_string', key)
  }
  const { idempotencyKeys: ik } = ctx.store.t
  const now = new Date()
  const ttl = ctx.deps.config.idempotencyTtlHours * 3600_000
  const requestHash = createHash('sha256').update(JSON.stringify(req.body ?? null)).digest('hex')
  const claimed = await ctx.store.tx(async (db) => {
    await db.delete(ik).where(and(eq(ik.projectId, ctx.projectId), eq(ik.key, key), lt(ik.expiresAt, now)))
    const rows = await db.insert(ik).values({
      projectId: ctx.projectId, key, method: req.method, path: req.path, requestHash,
      statusCode: null, createdAt: now, expiresAt: new Date(now.getTime() + ttl),
    }).onConflictDoNothing().returning({ key: ik.key })
    if (rows.length) return null
    const [existing] = await db.select().from(ik).where(and(eq(ik.projectId, ctx.projectId), eq(ik.key, key))).limit(1)
    return existing ?? null
  })
  if (claimed) {
    throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used by this project; the request was not performed again', {
      details: {
        key,
        originalRequest: { method: claimed.method, path: claimed.path, sameBody: claimed.requestHash === requestHash },
        originalRequestAt: claimed.createdAt.toISOString(),
        originalStatusCode: claimed.statusCode,
      },
      suggestion: 'Use a new Idempotency-Key for a new request',
    })
  }
  const where = and(eq(ik.projectId, ctx.projectId), eq(ik.key, key))
  try {
    const result = await work()
    await ctx.store.tx((db) => db.update(ik).set({ statusCode: 200 }).where(where))
    return result
  } catch (err) {
    const status = err instanceof AppError ? err.status : 500
    if (status >= 400 && status < 500) await ctx.store.tx((db) => db.delete(ik).where(where))
    else await ctx.store.tx((db) => db.update(ik).set({ statusCode: status }).where(where))
    throw err
  }
}

/** Removes expired keys (run by the scheduler). */
export async function sweepExpiredKeys(ctx: Pick<Ctx, 'store'>, now = new Date()): Promise<void> {
  const { idempotencyKeys: ik } = ctx.store.t
  await ctx.store.tx((db) => db.delete(ik).where(lt(ik.expiresAt, now)))
}
