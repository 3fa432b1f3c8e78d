/**
 * The one place where the two stores differ in column types.
 *
 * Every table is written once, as a function of a `Cols` set. The PostgreSQL set is the reference type;
 * the SQLite set builds SQLite columns with the same names and the same JavaScript types (boolean, Date,
 * number, parsed JSON), so repositories written against the reference types run unchanged on both.
 */
import * as pg from 'drizzle-orm/pg-core'
import * as sq from 'drizzle-orm/sqlite-core'

export const pgCols = {
  table: pg.pgTable,
  text: (name: string) => pg.text(name),
  int: (name: string) => pg.integer(name),
  /** 64-bit integer returned as a JS number (counters, byte sizes). */
  bigint: (name: string) => pg.bigint(name, { mode: 'number' }),
  bool: (name: string) => pg.boolean(name),
  /** Timestamp with millisecond precision, as a Date. */
  ts: (name: string) => pg.timestamp(name, { mode: 'date', withTimezone: true, precision: 3 }),
  json: <T>(name: string) => pg.jsonb(name).$type<T>(),
  bytes: (name: string) => pg.customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' })(name),
  index: pg.index,
  uniqueIndex: pg.uniqueIndex,
  primaryKey: pg.primaryKey,
}

export type Cols = typeof pgCols

/**
 * The SQLite builders under the reference names. TypeScript sees SQLite and PostgreSQL column builders as
 * unrelated types, so the set is cast once; `satisfies` keeps its keys those of `Cols`.
 */
export const sqliteCols = {
  table: sq.sqliteTable,
  text: (name: string) => sq.text(name),
  int: (name: string) => sq.integer(name),
  bigint: (name: string) => sq.integer(name),
  bool: (name: string) => sq.integer(name, { mode: 'boolean' }),
  ts: (name: string) => sq.integer(name, { mode: 'timestamp_ms' }),
  json: (name: string) => sq.text(name, { mode: 'json' }),
  bytes: (name: string) => sq.blob(name, { mode: 'buffer' }),
  index: sq.index,
  uniqueIndex: sq.uniqueIndex,
  primaryKey: sq.primaryKey,
} satisfies Record<keyof Cols, unknown> as unknown as Cols
