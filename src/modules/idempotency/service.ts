import { createHash } from 'node:crypto'
import type { Ctx } from '../../deps'
import { AppError, invalidField } from '../../errors'
import * as repo from './repo'

export type { Claim } from './repo'

const KEY_RE = /^[\x20-\x7e]{1,255}$/

export interface IdempotentRequest { method: string; path: string; body: unknown }

/**
 * The Idempotency-Key mechanism (docs/decisions.md, Idempotency): the key is claimed with a unique row
 * before the work starts, so concurrent requests with one key settle in the database and only one runs.
 * A 4xx outcome releases the key; 2xx and 5xx keep it until it expires (MAILCTL_IDEMPOTENCY_TTL_HOURS).
 * A reused key answers 409 IDEMPOTENCY_KEY_REUSED and the work is not performed again.
 *
 * Two ways to use it:
 * - `withIdempotency(ctx, key, req, work)`: claim (one transaction), work, record the outcome;
 * - a write that runs in one transaction (track) claims inside that transaction with `repo.claimIn(...,
 *   200)`: claim and work commit together, or neither does (a failure inside releases the key by the
 *   rollback; `keepFailed` then records a 5xx).
 */

/** The claim of `key` for `req` (null without a key); a malformed key is a 422. */
export function idempotencyClaim(ctx: Ctx, key: string | null | undefined, req: IdempotentRequest): repo.Claim | null {
  if (key === null || key === undefined) return null
  if (!KEY_RE.test(key)) {
    throw invalidField('Idempotency-Key', 'Idempotency-Key must be 1-255 printable ASCII characters', 'invalid_string', key)
  }
  const nowMs = ctx.deps.clock.now()
  return {
    projectId: ctx.projectId, key, method: req.method, path: req.path,
    requestHash: createHash('sha256').update(JSON.stringify(req.body ?? null)).digest('hex'),
    nowMs, expiresAtMs: nowMs + ctx.deps.config.idempotencyTtlHours * 3600_000,
  }
}

/** The 409 for a key held by `held`. */
export function keyReused(claim: repo.Claim, held: repo.HeldKey): AppError {
  return new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used by this project; the request was not performed again', {
    details: {
      key: claim.key,
      originalRequest: { method: held.method, path: held.path, sameBody: held.requestHash === claim.requestHash },
      originalRequestAt: new Date(held.createdAtMs).toISOString(),
      originalStatusCode: held.statusCode,
    },
    suggestion: 'Use a new Idempotency-Key for a new request',
  })
}

function statusOf(err: unknown): number {
  return err instanceof AppError ? err.status : 500
}

/**
 * After a one-transaction write that claimed `claim` failed (so its claim was rolled back): a 5xx keeps
 * the key, recorded with that status; a 4xx leaves it free.
 */
export async function keepFailed(ctx: Ctx, claim: repo.Claim, err: unknown): Promise<void> {
  const status = statusOf(err)
  if (status < 500) return
  await ctx.store.tx(async (db) => { await repo.claimIn(ctx.store, db, claim, status) })
}

export async function withIdempotency<T>(ctx: Ctx, key: string | null | undefined, req: IdempotentRequest, work: () => Promise<T>): Promise<T> {
  const claim = idempotencyClaim(ctx, key, req)
  if (!claim) return work()
  const held = await ctx.store.tx((db) => repo.claimIn(ctx.store, db, claim, null))
  if (held) throw keyReused(claim, held)
  try {
    const result = await work()
    await ctx.store.tx((db) => repo.setStatus(ctx.store, db, claim.projectId, claim.key, 200))
    return result
  } catch (err) {
    const status = statusOf(err)
    if (status >= 400 && status < 500) await ctx.store.tx((db) => repo.release(ctx.store, db, claim.projectId, claim.key))
    else await ctx.store.tx((db) => repo.setStatus(ctx.store, db, claim.projectId, claim.key, status))
    throw err
  }
}

/** Removes expired keys (run by the scheduler). */
export async function sweepExpiredKeys(ctx: Pick<Ctx, 'store'>, now: Date): Promise<void> {
  await ctx.store.tx((db) => repo.deleteExpired(ctx.store, db, now.getTime()))
}
