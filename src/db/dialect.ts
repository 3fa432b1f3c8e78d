/**
 * The SQL fragments that the two stores spell differently, written once. A repo that needs one of these
 * asks for it here instead of branching on `store.dialect`, so that the difference lives in `src/db`
 * (test/db/dialect.test.ts runs every fragment on both stores with the same assertions).
 *
 * Timestamps: PostgreSQL columns are `timestamptz`; SQLite stores epoch milliseconds (src/db/columns.ts).
 * JSON: PostgreSQL `jsonb`; SQLite JSON text read by its json functions.
 */
import { sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { Db, Dialect, Store } from './client'

type Expr = AnyColumn | SQL
/** What a pure fragment needs to know of the store: its kind (the filter compiler has no Store, only this). */
type On = Pick<Store, 'dialect'>

/** Whether a value read from outside (a backup's manifest) names a store kind. */
export function isDialect(v: unknown): v is Dialect {
  return v === 'sqlite' || v === 'pg'
}

/** A moment as a bound value of raw SQL, comparable with a timestamp column of either store. */
export function moment(store: On, at: Date | number): SQL {
  const d = typeof at === 'number' ? new Date(at) : at
  // dialect: PostgreSQL binds a moment as timestamptz text, SQLite as epoch milliseconds
  return store.dialect === 'pg' ? sql`${d.toISOString()}::timestamptz` : sql`${d.getTime()}`
}

/**
 * A moment as a plain parameter for drizzle's own comparisons of a raw column (a row-value comparison,
 * `(created_at, id) < (?, ?)`), or for hand-written SQL with placeholders: text PostgreSQL casts to
 * timestamptz by the column's type, or SQLite's epoch milliseconds.
 */
export function momentParam(store: Store, at: Date | number): string | number {
  const ms = typeof at === 'number' ? at : at.getTime()
  // dialect: PostgreSQL casts ISO text to timestamptz by the column's type; SQLite stores epoch milliseconds
  return store.dialect === 'pg' ? new Date(ms).toISOString() : ms
}

/**
 * A text, a number or a boolean bound as a parameter of its SQL type: PostgreSQL cannot infer a
 * parameter's type inside CASE, json functions or a comparison with an expression, so it gets a cast;
 * SQLite binds the value as it is (booleans as 1/0).
 */
export function textParam(store: On, s: string): SQL {
  // dialect: a typed parameter: PostgreSQL needs the cast where it cannot infer the type, SQLite binds as is
  return store.dialect === 'pg' ? sql`${s}::text` : sql`${s}`
}

export function numberParam(store: On, n: number): SQL {
  // dialect: a typed parameter: PostgreSQL needs the cast where it cannot infer the type, SQLite binds as is
  return store.dialect === 'pg' ? sql`${String(n)}::numeric` : sql`${n}`
}

export function boolParam(store: On, b: boolean): SQL {
  // dialect: a typed parameter: PostgreSQL needs the cast, SQLite stores booleans as 1/0
  return store.dialect === 'pg' ? sql`${b}::boolean` : sql`${b ? 1 : 0}`
}

/** Whether the text `haystack` contains `needle` (case-sensitive): PostgreSQL `strpos`, SQLite `instr`. */
export function textContains(store: On, haystack: SQL, needle: SQL): SQL {
  // dialect: PostgreSQL has strpos, SQLite instr
  return store.dialect === 'pg' ? sql`strpos(${haystack}, ${needle}) > 0` : sql`instr(${haystack}, ${needle}) > 0`
}

/** A boolean as a SQL literal (PostgreSQL `true`/`false`; SQLite stores booleans as 1/0). */
export function boolLiteral(store: Store, v: boolean): string {
  // dialect: PostgreSQL writes booleans true/false, SQLite 1/0
  return store.dialect === 'pg' ? String(v) : v ? '1' : '0'
}

/** The text of a top-level key of a JSON column (null when absent). `key` is a constant of the code, never input. */
export function jsonText(store: Store, column: Expr, key: string): SQL<string | null> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`jsonText: not a plain key: ${key}`)
  // dialect: jsonb's ->> operator against SQLite's json_extract path
  return store.dialect === 'pg'
    ? sql<string | null>`(${column}->>${sql.raw(`'${key}'`)})`
    : sql<string | null>`json_extract(${column}, ${sql.raw(`'$.${key}'`)})`
}

/**
 * `column` is one of `ids`, bound as ONE JSON array parameter: with hundreds of ids, binding each one
 * cost more to build and plan than the look-ups (about 0.6 ms a batch of 285 on SQLite), and PostgreSQL
 * limits a statement to 65,535 parameters.
 */
export function inJsonList(store: On, column: Expr, ids: readonly string[]): SQL {
  const json = JSON.stringify(ids)
  // dialect: PostgreSQL expands a jsonb array, SQLite reads json_each
  return store.dialect === 'pg'
    ? sql`${column} = ANY (ARRAY(SELECT jsonb_array_elements_text(${json}::jsonb)))`
    : sql`${column} IN (SELECT value FROM json_each(${json}))`
}

/**
 * The rows of `table` whose `id` is among `ids`, as `<from> WHERE <test>` for the caller to go on with
 * `AND ...`: each id one primary-key look-up, never a pass over a project's rows. SQLite is given the join
 * order (the id list drives a CROSS JOIN), or its planner, without statistics, may walk a project-wide
 * index instead; PostgreSQL takes the ids as one array parameter (inJsonList) and plans it itself.
 */
export function rowsOfIds(store: On, table: string, ids: readonly string[]): SQL {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`rowsOfIds: not a plain table name: ${table}`)
  const t = sql.raw(table)
  // dialect: SQLite needs the join order spelled out (no statistics); PostgreSQL plans an array parameter
  return store.dialect === 'pg'
    ? sql`${t} WHERE ${inJsonList(store, sql.raw(`${table}.id`), ids)}`
    : sql`json_each(${JSON.stringify(ids)}) AS j CROSS JOIN ${t} ON ${t}.id = j.value WHERE 1 = 1`
}

/**
 * `column` as a planner hint when `hint` is set: on SQLite a unary `+` keeps the planner off that
 * column's index (it would pick a project-wide index over the selective one the query is anchored on
 * and walk every row of the project); PostgreSQL's planner has statistics and gets the column as is.
 */
export function noIndex(store: On, column: Expr, hint = true): SQL {
  // dialect: a planner hint only SQLite needs: it has no statistics to choose between indexes
  return hint && store.dialect === 'sqlite' ? sql`+${column}` : sql`${column}`
}

/** The UTC day of a timestamp column as `YYYY-MM-DD`. */
export function utcDay(store: Store, column: Expr): SQL<string> {
  // dialect: to_char of timestamptz against strftime of epoch milliseconds
  return store.dialect === 'pg'
    ? sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`
    : sql<string>`strftime('%Y-%m-%d', ${column} / 1000, 'unixepoch')`
}

/** The start of the UTC hour of a timestamp, in epoch milliseconds (hourly counters' key; PostgreSQL: a bigint, read as text). */
export function utcHourMs(store: Store, column: Expr): SQL<number | string> {
  // dialect: extract(epoch) of timestamptz against arithmetic on epoch milliseconds
  return store.dialect === 'pg'
    ? sql<string>`(floor(extract(epoch from ${column}) / 3600) * 3600000)::bigint`
    : sql<number>`(${column} / 3600000 * 3600000)`
}

/** A timestamp as epoch milliseconds (PostgreSQL: a bigint, read as text). */
export function epochMs(store: Store, column: Expr): SQL<number | string> {
  // dialect: extract(epoch) of timestamptz; SQLite already stores epoch milliseconds
  return store.dialect === 'pg' ? sql<string>`(extract(epoch from ${column}) * 1000)::bigint` : sql<number>`${column}`
}

/** The later of a timestamp column and a moment, plus `ms` milliseconds. */
export function laterPlusMs(store: Store, column: Expr, at: Date, ms: number): SQL {
  // dialect: GREATEST and an interval on timestamptz against MAX on epoch milliseconds
  return store.dialect === 'pg'
    ? sql`GREATEST(${column}, ${at.toISOString()}::timestamptz) + (${ms} * interval '1 millisecond')`
    : sql`MAX(${column}, ${at.getTime()}) + ${ms}`
}

/**
 * A JSON object as the store gives it back: PostgreSQL's jsonb keeps an object's keys shorter first,
 * then in byte order, so a value built in code (an inline event) reads as a stored one does.
 */
export function asStoredJson(store: Store, data: Record<string, unknown>): Record<string, unknown> {
  // dialect: only PostgreSQL's jsonb reorders an object's keys
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
  // dialect: other nodes write to PostgreSQL at once (advisory lock); SQLite's write transaction excludes every writer
  if (store.dialect !== 'pg') return true
  const [row] = await store.rows<{ ok: boolean }>(sql`SELECT pg_try_advisory_xact_lock(hashtextextended(${key}, 0)) AS ok`, db)
  return row?.ok === true
}

/** Runs a DELETE statement (without RETURNING) in `db` and answers how many rows it deleted. */
export async function deleteCounted(store: Store, db: Db, del: SQL): Promise<number> {
  // dialect: PostgreSQL counts with a CTE over RETURNING, SQLite asks changes()
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
  // dialect: jsonb_array_elements against json_each
  return store.dialect === 'pg'
    ? sql`jsonb_array_elements(${json}::jsonb) ${sql.raw(alias)}`
    : sql`json_each(${json}) ${sql.raw(alias)}`
}

/** Element `index` (as text) of the array row `alias` of jsonArrayRows. */
export function jsonElement(store: Store, alias: string, index: number): SQL {
  if (!/^[a-z_]+$/.test(alias) || !Number.isInteger(index) || index < 0) throw new Error('jsonElement: not a plain alias or index')
  // dialect: jsonb's ->> index against json_each's value
  return store.dialect === 'pg' ? sql.raw(`(${alias}->>${index})`) : sql.raw(`(${alias}.value ->> ${index})`)
}

/** A JSON text parameter as a value of a JSON column (PostgreSQL jsonb; SQLite stores the text). */
export function jsonValue(store: Store, json: string): SQL {
  // dialect: a JSON column is jsonb on PostgreSQL, text on SQLite
  return store.dialect === 'pg' ? sql`${json}::jsonb` : sql`${json}`
}

/**
 * The slot of a counter row this transaction adds to: on PostgreSQL one of 8 by transaction id, so that
 * concurrent writers of one counter add to different rows instead of queueing on one until they commit
 * (readers sum the slots); SQLite has one writer: always 0.
 */
export function writerSlot(store: Store): SQL {
  // dialect: PostgreSQL writers commit side by side (slots by transaction id); SQLite has one writer
  return store.dialect === 'pg' ? sql.raw('((pg_current_xact_id()::text::bigint % 8)::int)') : sql.raw('0')
}

/** A select of drizzle's PostgreSQL builder (the type of every store's queries, src/db/client.ts `Db`). */
interface Lockable { for(strength: 'update' | 'share', config?: { skipLocked?: boolean }): unknown }

/**
 * A claim's read of rows to take: on PostgreSQL `FOR UPDATE SKIP LOCKED` (concurrent claimers on other
 * nodes take other rows instead of waiting); SQLite's single writer already serializes claims.
 */
export function skipLocked<Q extends Lockable>(store: Store, q: Q): Q {
  // dialect: FOR UPDATE SKIP LOCKED for claimers on other nodes; SQLite's single writer already serializes claims
  return store.dialect === 'pg' ? (q.for('update', { skipLocked: true }) as Q) : q
}

/**
 * A read whose rows the transaction will write: locked on PostgreSQL until it commits (`update` keeps
 * every other locker out, `share` only writers); SQLite's write transaction already holds the database.
 */
export function locked<Q extends Lockable>(store: Store, q: Q, strength: 'update' | 'share' = 'update'): Q {
  // dialect: row locks for writers on other nodes; SQLite's write transaction already holds the database
  return store.dialect === 'pg' ? (q.for(strength) as Q) : q
}
