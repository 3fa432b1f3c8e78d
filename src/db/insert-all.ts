import { getTableColumns, getTableName, sql, type SQL, type Table } from 'drizzle-orm'
import type { Db, Store } from './client'
import { insertRows } from './sqlite-statements'

/**
 * Inserts rows of `table`, every column given (as drizzle's `insert(table).values(rows)` would), on both
 * stores, for the paths that insert many rows at once (emails, their contents and queue rows of a batch of
 * sends or of a campaign's slice).
 *
 * - SQLite: one compiled statement run per row (sqlite-statements.ts, insertRows).
 * - PostgreSQL: one statement per chunk of rows with ONE parameter, the rows as JSON, expanded by
 *   `json_populate_recordset` with the table's own row type, so PostgreSQL parses every value by its column's
 *   type (timestamps, booleans, jsonb). drizzle's multi-row insert builds one parameter per value: for a
 *   500-row chunk of emails (30 columns) that building took more CPU than everything else the main thread did
 *   per message during a PostgreSQL campaign (profiled with bench/campaign.ts), and every chunk size was a new
 *   statement text to parse and plan. This statement's text is the same for every chunk.
 */
export async function insertAll<T extends object>(store: Store, db: Db, table: Table, rows: T[]): Promise<void> {
  if (!rows.length) return
  // dialect: SQLite inserts with statements compiled once; PostgreSQL one json_populate_recordset statement per chunk
  if (store.dialect === 'sqlite') return insertRows(db, table, rows as Array<Record<string, unknown>>)
  const m = pgInsertOf(table)
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = i === 0 && rows.length <= CHUNK ? rows : rows.slice(i, i + CHUNK)
    const out: Array<Record<string, unknown>> = new Array(chunk.length)
    for (let r = 0; r < chunk.length; r++) {
      const row = chunk[r] as Record<string, unknown>
      const o: Record<string, unknown> = {}
      for (const c of m.columns) o[c.name] = row[c.key] ?? null
      out[r] = o
    }
    // Dates become ISO 8601 text in JSON, which timestamptz reads; objects stay JSON for jsonb columns.
    await store.exec(m.statement(JSON.stringify(out)), db)
  }
}

/** Rows per statement: a JSON text of a few MB at most for emails with their contents. */
const CHUNK = 1000

interface PgInsert {
  columns: Array<{ key: string; name: string }>
  statement(payload: string): SQL
}

// A cache, not state: a table's insert statement, computed once from its definition.
const pgInserts = new WeakMap<Table, PgInsert>()

function pgInsertOf(table: Table): PgInsert {
  let m = pgInserts.get(table)
  if (!m) {
    const columns = Object.entries(getTableColumns(table)).map(([key, c]) => ({ key, name: c.name }))
    const names = columns.map((c) => `"${c.name}"`).join(', ')
    const name = `"${getTableName(table)}"`
    const head = sql.raw(`INSERT INTO ${name} (${names}) SELECT ${names} FROM json_populate_recordset(NULL::${name}, `)
    const tail = sql.raw('::json)')
    m = { columns, statement: (payload) => sql`${head}${payload}${tail}` }
    pgInserts.set(table, m)
  }
  return m
}
