/**
 * The SQL fragments that the two stores spell differently, written once. A repo that needs one of these
 * asks for it here instead of branching on `store.dialect`, so that the difference lives in `src/db`
 * (test/db/dialect.test.ts runs every fragment on both stores with the same assertions).
 *
 * Timestamps: PostgreSQL columns are `timestamptz`; SQLite stores epoch milliseconds (src/db/columns.ts).
 * JSON: PostgreSQL `jsonb`; SQLite JSON text read by its json functions.
 */
import { sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { Db, Store } from './client'

type Expr = AnyColumn | SQL

/** A moment as a bound value of raw SQL, comparable with a timestamp column of either store. */
export function moment(store: Store, at: Date | number): SQL {
  const d = typeof at === 'number' ? new Date(at) : at
  return store.dialect === 'pg' ? sql`${d.toISOString()}::timestamptz` : sql`${d.getTime()}`
}

/**
 * A moment as a plain parameter for drizzle's own comparisons of a raw column (a row-value comparison,
 * `(created_at, id) < (?, ?)`), or for hand-written SQL with placeholders: text PostgreSQL casts to
 * timestamptz by the column's type, or SQLite's epoch milliseconds.
 */
export function momentParam(store: Store, at: Date | number): string | number {
  const ms = typeof at === 'number' ? at : at.getTime()
  return store.dialect === 'pg' ? new Date(ms).toISOString() : ms
}

/** A boolean as a SQL literal (PostgreSQL `true`/`false`; SQLite stores booleans as 1/0). */
export function boolLiteral(store: Store, v: boolean): string {
  return store.dialect === 'pg' ? String(v) : v ? '1' : '0'
}

/** The text of a top-level key of a JSON column (null when absent). `key` is a constant of the code, never input. */
export function jsonText(store: Store, column: Expr, key: string): SQL<string | null> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`jsonText: not a plain key: ${key}`)
  return store.dialect === 'pg'
    ? sql<string | null>`(${column}->>${sql.raw(`'${key}'`)})`
    : sql<string | null>`json_extract(${column}, ${sql.raw(`'$.${key}'`)})`
}

/**
 * `column` is one of `ids`, bound as ONE JSON array parameter: with hundreds of ids, binding each one
 * cost more to build and plan than the look-ups (about 0.6 ms a batch of 285 on SQLite), and PostgreSQL
 * limits a statement to 65,535 parameters.
 */
export function inJsonList(store: Store, column: Expr, ids: readonly string[]): SQL {
  const json = JSON.stringify(ids)
  return store.dialect === 'pg'
    ? sql`${column} = ANY (ARRAY(SELECT jsonb_array_elements_text(${json}::jsonb)))`
    : sql`${column} IN (SELECT value FROM json_each(${json}))`
}

/**
 * `column` as a planner hint when `hint` is set: on SQLite a unary `+` keeps the planner off that
 * column's index (it would pick a project-wide index over the selective one the query is anchored on
 * and walk every row of the project); PostgreSQL's planner has statistics and gets the column as is.
 */
export function noIndex(store: Store, column: Expr, hint = true): SQL {
  return hint && store.dialect === 'sqlite' ? sql`+${column}` : sql`${column}`
}

/** The UTC day of a timestamp column as `YYYY-MM-DD`. */
export function utcDay(store: Store, column: Expr): SQL<string> {
  return store.dialect === 'pg'
    ? sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`
    : sql<string>`strftime('%Y-%m-%d', ${column} / 1000, 'unixepoch')`
}

/** The start of the UTC hour of a timestamp, in epoch milliseconds (hourly counters' key; PostgreSQL: a bigint, read as text). */
export function utcHourMs(store: Store, column: Expr): SQL<number | string> {
  return store.dialect === 'pg'
    ? sql<string>`(floor(extract(epoch from ${column}) / 3600) * 3600000)::bigint`
    : sql<number>`(${column} / 3600000 * 3600000)`
}

/** A timestamp as epoch milliseconds (PostgreSQL: a bigint, read as text). */
export function epochMs(store: Store, column: Expr): SQL<number | string> {
  return store.dialect === 'pg' ? sql<string>`(extract(epoch from ${column}) * 1000)::bigint` : sql<number>`${column}`
}

/** The later of a timestamp column and a moment, plus `ms` milliseconds. */
export function laterPlusMs(store: Store, column: Expr, at: Date, ms: number): SQL {
  return store.dialect === 'pg'
    ? sql`GREATEST(${column}, ${at.toISOString()}::timestamptz) + (${ms} * interval '1 millisecond')`
    : sql`MAX(${column}, ${at.getTime()}) + ${ms}`
}

/**
 * A JSON object as the store gives it back: PostgreSQL's jsonb keeps an object's keys shorter first,
 * then in byte order, so a value built in code (an inline event) reads as a stored one does.
 */
export function asStoredJson(store: Store, data: Record<string, unknown>): Record<string, unknown> {
  if (store.dialect !== 'pg') return data
  const keys = Object.keys(data).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0))
  return Object.fromEntries(keys.map((k) => [k, data[k]]))
}

/**
 * Takes a lock named `key` until `db`'s transaction ends, if no other transaction holds it (false then).
 * On PostgreSQL an advisory lock (other nodes' transactions); SQLite's write transaction already excludes
 * every other writer, so it is always taken there.
 */
export async function tryTxLock(store: Store, db: Db, key: string): Promise<boolean> {
  if (store.dialect !== 'pg') return true
  const [row] = await store.rows<{ ok: boolean }>(sql`SELECT pg_try_advisory_xact_lock(hashtextextended(${key}, 0)) AS ok`, db)
  return row?.ok === true
}

/** Runs a DELETE statement (without RETURNING) in `db` and answers how many rows it deleted. */
export async function deleteCounted(store: Store, db: Db, del: SQL): Promise<number> {
  if (store.dialect === 'pg') {
    const [row] = await store.rows<{ n: string | number }>(sql`WITH d AS (${del} RETURNING 1) SELECT count(*) AS n FROM d`, db)
    return Number(row?.n ?? 0)
  }
  await store.exec(del, db)
  const [row] = await store.rows<{ n: number }>(sql`SELECT changes() AS n`, db)
  return Number(row?.n ?? 0)
}

/**
 * The rows of a JSON array parameter as a FROM item named `alias`, one row per element (read them with
 * jsonElement): PostgreSQL `jsonb_array_elements`, SQLite `json_each`.
 */
export function jsonArrayRows(store: Store, json: string, alias: string): SQL {
  if (!/^[a-z_]+$/.test(alias)) throw new Error(`jsonArrayRows: not a plain alias: ${alias}`)
  return store.dialect === 'pg'
    ? sql`jsonb_array_elements(${json}::jsonb) ${sql.raw(alias)}`
    : sql`json_each(${json}) ${sql.raw(alias)}`
}

/** Element `index` (as text) of the array row `alias` of jsonArrayRows. */
export function jsonElement(store: Store, alias: string, index: number): SQL {
  if (!/^[a-z_]+$/.test(alias) || !Number.isInteger(index) || index < 0) throw new Error('jsonElement: not a plain alias or index')
  return store.dialect === 'pg' ? sql.raw(`(${alias}->>${index})`) : sql.raw(`(${alias}.value ->> ${index})`)
}

/** A JSON text parameter as a value of a JSON column (PostgreSQL jsonb; SQLite stores the text). */
export function jsonValue(store: Store, json: string): SQL {
  return store.dialect === 'pg' ? sql`${json}::jsonb` : sql`${json}`
}

/**
 * The slot of a counter row this transaction adds to: on PostgreSQL one of 8 by transaction id, so that
 * concurrent writers of one counter add to different rows instead of queueing on one until they commit
 * (readers sum the slots); SQLite has one writer: always 0.
 */
export function writerSlot(store: Store): SQL {
  return store.dialect === 'pg' ? sql.raw('((pg_current_xact_id()::text::bigint % 8)::int)') : sql.raw('0')
}

/** A select of drizzle's PostgreSQL builder (the type of every store's queries, src/db/client.ts `Db`). */
interface Lockable { for(strength: 'update' | 'share', config?: { skipLocked?: boolean }): unknown }

/**
 * A claim's read of rows to take: on PostgreSQL `FOR UPDATE SKIP LOCKED` (concurrent claimers on other
 * nodes take other rows instead of waiting); SQLite's single writer already serializes claims.
 */
export function skipLocked<Q extends Lockable>(store: Store, q: Q): Q {
  return store.dialect === 'pg' ? (q.for('update', { skipLocked: true }) as Q) : q
}

/**
 * A read whose rows the transaction will write: locked on PostgreSQL until it commits (`update` keeps
 * every other locker out, `share` only writers); SQLite's write transaction already holds the database.
 */
export function locked<Q extends Lockable>(store: Store, q: Q, strength: 'update' | 'share' = 'update'): Q {
  return store.dialect === 'pg' ? (q.for(strength) as Q) : q
}
