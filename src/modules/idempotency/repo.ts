import type { Db, Store } from '../../db/client'
import { momentParam } from '../../db/dialect'
import { statementRows } from '../../db/statement'

/**
 * The only SQL of the idempotency module: one text per statement for both stores, run by statementRows
 * (src/db/statement.ts: compiled once on SQLite's connection, off drizzle's query builder). Times are
 * epoch milliseconds here; each store keeps its own column type (momentParam).
 */

/** A key to claim: who, what request, when, until when. */
export interface Claim {
  projectId: string
  key: string
  method: string
  path: string
  requestHash: string
  nowMs: number
  expiresAtMs: number
}

/** The row holding a key: the original request and its outcome so far (null: still running). */
export interface HeldKey { method: string; path: string; requestHash: string; createdAtMs: number; statusCode: number | null }

interface RawHeld { method: string; path: string; request_hash: string; created_at: number | string | Date; status_code: number | null }
function held(r: RawHeld): HeldKey {
  return { method: r.method, path: r.path, requestHash: r.request_hash, createdAtMs: new Date(r.created_at).getTime(), statusCode: r.status_code === null ? null : Number(r.status_code) }
}

/**
 * In `db`'s transaction: drops an expired row of the key, then claims the key with `statusCode` (null:
 * the work runs after this transaction; a number: the work commits in this same transaction). Returns
 * null when claimed, else the row that holds the key. Concurrent claims settle on the primary key: on
 * SQLite one writer at a time, on PostgreSQL the second insert waits for the first transaction.
 */
export async function claimIn(store: Store, db: Db, c: Claim, statusCode: number | null): Promise<HeldKey | null> {
  const now = momentParam(store, c.nowMs)
  await statementRows(store, db, 'DELETE FROM idempotency_keys WHERE project_id = $1 AND key = $2 AND expires_at < $3', c.projectId, c.key, now)
  const ins = await statementRows(store, db, `INSERT INTO idempotency_keys (project_id, key, method, path, request_hash, status_code, created_at, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING 1 AS claimed`,
  c.projectId, c.key, c.method, c.path, c.requestHash, statusCode, now, momentParam(store, c.expiresAtMs))
  if (ins.length) return null
  const [r] = await statementRows<RawHeld>(store, db, 'SELECT method, path, request_hash, created_at, status_code FROM idempotency_keys WHERE project_id = $1 AND key = $2', c.projectId, c.key)
  return r ? held(r) : null
}

/** Records the outcome of the claimed request. */
export async function setStatus(store: Store, db: Db, projectId: string, key: string, statusCode: number): Promise<void> {
  await statementRows(store, db, 'UPDATE idempotency_keys SET status_code = $1 WHERE project_id = $2 AND key = $3', statusCode, projectId, key)
}

/** Frees the key (the request was refused: it may be sent again). */
export async function release(store: Store, db: Db, projectId: string, key: string): Promise<void> {
  await statementRows(store, db, 'DELETE FROM idempotency_keys WHERE project_id = $1 AND key = $2', projectId, key)
}

/** Removes expired keys. */
export async function deleteExpired(store: Store, db: Db, nowMs: number): Promise<void> {
  await statementRows(store, db, 'DELETE FROM idempotency_keys WHERE expires_at < $1', momentParam(store, nowMs))
}
