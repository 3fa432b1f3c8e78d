/**
 * Raw SQLite statements for the sending hot paths (every email is inserted, queued, claimed, loaded and
 * recorded): drizzle's query builder costs several times more per query than running it, so on SQLite
 * these paths use statements compiled once on the connection (bun:sqlite caches `query(text)` by text).
 * Values cross with the table's own column mappers (Date <-> epoch ms, boolean <-> 0/1, JSON <-> text),
 * so rows look exactly as drizzle would return them. PostgreSQL keeps drizzle.
 */
import type { SQLQueryBindings } from 'bun:sqlite'
import { getTableColumns, getTableName, type Table } from 'drizzle-orm'
import { sqliteConnection, type Db } from './client'

interface ColumnMap {
  key: string
  name: string
  toDriver(v: unknown): SQLQueryBindings
  fromDriver(v: unknown): unknown
}

interface TableMap {
  columns: ColumnMap[]
  /** Comma-separated column names, in `columns` order. */
  names: string
  insert: string
}

// A cache, not state: a table's column mapping, computed once from its definition.
const maps = new WeakMap<Table, TableMap>()

function tableMap(table: Table): TableMap {
  let m = maps.get(table)
  if (!m) {
    const columns = Object.entries(getTableColumns(table)).map(([key, c]) => ({
      key,
      name: c.name,
      // A SQLite column's mapper yields what bun:sqlite binds (number, string, Buffer); drizzle types it unknown.
      toDriver: (v: unknown) => c.mapToDriverValue(v) as SQLQueryBindings,
      fromDriver: (v: unknown) => c.mapFromDriverValue(v),
    }))
    const names = columns.map((c) => c.name).join(', ')
    m = { columns, names, insert: `INSERT INTO ${getTableName(table)} (${names}) VALUES (${columns.map(() => '?').join(', ')})` }
    maps.set(table, m)
  }
  return m
}

/** `t.col1, t.col2...` of every column of `table` (for SELECT and RETURNING lists). */
export function columnList(table: Table, alias?: string): string {
  const m = tableMap(table)
  return alias ? m.columns.map((c) => `${alias}.${c.name}`).join(', ') : m.names
}

/** Inserts rows (every column given, as drizzle's `insert(table).values(rows)` would). */
export function insertRows<T extends Record<string, unknown>>(db: Db, table: Table, rows: T[]): void {
  if (!rows.length) return
  const m = tableMap(table)
  const st = sqliteConnection(db).query(m.insert)
  const params: SQLQueryBindings[] = new Array(m.columns.length)
  for (const row of rows) {
    for (let i = 0; i < m.columns.length; i++) {
      const c = m.columns[i]
      const v = row[c.key]
      params[i] = v === undefined || v === null ? null : c.toDriver(v)
    }
    st.run(...params)
  }
}

/** A raw row (keyed by column name, as selected with `columnList`) as the table's row type. */
export function fromRaw<T>(table: Table, raw: Record<string, unknown>): T {
  const m = tableMap(table)
  const out: Record<string, unknown> = {}
  for (const c of m.columns) {
    const v = raw[c.name]
    out[c.key] = v === null || v === undefined ? null : c.fromDriver(v)
  }
  return out as T
}
