import { sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'

/**
 * The only SQL of the idempotency module. On SQLite the statements are compiled once on the connection
 * (bun:sqlite caches `query()`), off drizzle's query builder; PostgreSQL runs the same text through
 * drizzle's `sql` template. Times are epoch milliseconds here; each store keeps its own column type.
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
  if (store.dialect === 'sqlite') {
    const q = sqliteConnection(db)
    q.query('DELETE FROM idempotency_keys WHERE project_id = ? AND key = ? AND expires_at < ?').run(c.projectId, c.key, c.nowMs)
    const ins = q.query('INSERT INTO idempotency_keys (project_id, key, method, path, request_hash, status_code, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
      .run(c.projectId, c.key, c.method, c.path, c.requestHash, statusCode, c.nowMs, c.expiresAtMs)
    if (ins.changes === 1) return null
    const r = q.query('SELECT method, path, request_hash, created_at, status_code FROM idempotency_keys WHERE project_id = ? AND key = ?').get(c.projectId, c.key) as RawHeld | null
    return r ? held(r) : null
  }
  const now = new Date(c.nowMs).toISOString()
  await store.exec(sql`DELETE FROM idempotency_keys WHERE project_id = ${c.projectId} AND key = ${c.key} AND expires_at < ${now}`, db)
  const ins = await store.rows(sql`
    INSERT INTO idempotency_keys (project_id, key, method, path, request_hash, status_code, created_at, expires_at)
    VALUES (${c.projectId}, ${c.key}, ${c.method}, ${c.path}, ${c.requestHash}, ${statusCode}, ${now}, ${new Date(c.expiresAtMs).toISOString()})
    ON CONFLICT DO NOTHING RETURNING 1 AS claimed`, db)
  if (ins.length) return null
  const [r] = await store.rows<RawHeld>(sql`SELECT method, path, request_hash, created_at, status_code FROM idempotency_keys WHERE project_id = ${c.projectId} AND key = ${c.key}`, db)
  return r ? held(r) : null
}

/** Records the outcome of the claimed request. */
export async function setStatus(store: Store, db: Db, projectId: string, key: string, statusCode: number): Promise<void> {
  if (store.dialect === 'sqlite') {
    sqliteConnection(db).query('UPDATE idempotency_keys SET status_code = ? WHERE project_id = ? AND key = ?').run(statusCode, projectId, key)
    return
  }
  await store.exec(sql`UPDATE idempotency_keys SET status_code = ${statusCode} WHERE project_id = ${projectId} AND key = ${key}`, db)
}

/** Frees the key (the request was refused: it may be sent again). */
export async function release(store: Store, db: Db, projectId: string, key: string): Promise<void> {
  if (store.dialect === 'sqlite') {
    sqliteConnection(db).query('DELETE FROM idempotency_keys WHERE project_id = ? AND key = ?').run(projectId, key)
    return
  }
  await store.exec(sql`DELETE FROM idempotency_keys WHERE project_id = ${projectId} AND key = ${key}`, db)
}

/** Removes expired keys. */
export async function deleteExpired(store: Store, db: Db, nowMs: number): Promise<void> {
  if (store.dialect === 'sqlite') {
    sqliteConnection(db).query('DELETE FROM idempotency_keys WHERE expires_at < ?').run(nowMs)
    return
  }
  await store.exec(sql`DELETE FROM idempotency_keys WHERE expires_at < ${new Date(nowMs).toISOString()}`, db)
}
