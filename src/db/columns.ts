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

/* eslint-disable @typescript-eslint/no-explicit-any */
export const sqliteCols: Cols = {
  table: sq.sqliteTable as unknown as Cols['table'],
  text: ((name: string) => sq.text(name)) as unknown as Cols['text'],
  int: ((name: string) => sq.integer(name)) as unknown as Cols['int'],
  bigint: ((name: string) => sq.integer(name)) as unknown as Cols['bigint'],
  bool: ((name: string) => sq.integer(name, { mode: 'boolean' })) as unknown as Cols['bool'],
  ts: ((name: string) => sq.integer(name, { mode: 'timestamp_ms' })) as unknown as Cols['ts'],
  json: ((name: string) => sq.text(name, { mode: 'json' })) as unknown as Cols['json'],
  bytes: ((name: string) => sq.blob(name, { mode: 'buffer' })) as unknown as Cols['bytes'],
  index: sq.index as unknown as Cols['index'],
  uniqueIndex: sq.uniqueIndex as unknown as Cols['uniqueIndex'],
  primaryKey: sq.primaryKey as unknown as Cols['primaryKey'],
}
