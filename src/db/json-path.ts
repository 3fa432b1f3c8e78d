/**
 * Reading a value at a key path of a JSON column (contacts.data, read by the filter compiler,
 * src/filters/compile.ts): PostgreSQL's jsonb operators and SQLite's json functions name types and cast
 * differently, so each read is written once here for both stores. Every read is NULL when the path is
 * absent; test/filters/ runs the same filters on both stores.
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Store } from './client'
import { textParam } from './dialect'

type On = Pick<Store, 'dialect'>

/** SQLite JSON path `$."k1"."k2"`: each key JSON-quoted, so quotes, dots and brackets inside a key stay a key. */
function sqlitePath(path: string[]): SQL {
  const jsonPath = `$${path.map((k) => `.${JSON.stringify(k)}`).join('')}`
  return sql`${jsonPath}`
}

/** PostgreSQL: the jsonb value at the path. */
function jv(store: On, column: SQL, path: string[]): SQL {
  return sql`jsonb_extract_path(${column}, ${sql.join(path.map((k) => textParam(store, k)), sql.raw(', '))})`
}

/** SQLite: the value at the path as json_extract gives it (a JSON string as text, a number as a number). */
function jraw(column: SQL, path: string[]): SQL {
  return sql`json_extract(${column}, ${sqlitePath(path)})`
}

/**
 * The JSON type at the path: 'null' for a JSON null on both stores; otherwise PostgreSQL's names
 * (string, number, boolean...) or SQLite's (text, integer, real, true, false...).
 */
export function jsonPathType(store: On, column: SQL, path: string[]): SQL {
  // dialect: jsonb_typeof names JSON types, SQLite's json_type names SQL types (text, integer, real)
  return store.dialect === 'pg' ? sql`jsonb_typeof(${jv(store, column, path)})` : sql`json_type(${column}, ${sqlitePath(path)})`
}

/** The scalar as text: strings as they are, numbers in decimal, booleans 'true'/'false'; NULL otherwise. */
export function jsonPathText(store: On, column: SQL, path: string[]): SQL {
  const t = jsonPathType(store, column, path)
  // dialect: the text of a JSON scalar: jsonb's #>> against json_type cases
  if (store.dialect === 'pg') return sql`(CASE WHEN ${t} IN ('string', 'number', 'boolean') THEN ${jv(store, column, path)} #>> '{}' END)`
  const x = jraw(column, path)
  return sql`(CASE ${t} WHEN 'text' THEN ${x} WHEN 'integer' THEN CAST(${x} AS TEXT) WHEN 'real' THEN CAST(${x} AS TEXT) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END)`
}

/**
 * The value as a number: JSON numbers, and strings holding a JSON number ("42", " 4.2e1 ", exponent of at
 * most 4 digits in both stores); NULL otherwise.
 */
export function jsonPathNumber(store: On, column: SQL, path: string[]): SQL {
  // dialect: a JSON number or numeric string: numeric with a regular expression against REAL with GLOB
  if (store.dialect === 'pg') {
    const v = jv(store, column, path)
    return sql`(CASE jsonb_typeof(${v}) WHEN 'number' THEN (${v})::numeric WHEN 'string' THEN (CASE WHEN (${v} #>> '{}') ~ '^[[:space:]]*-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]{1,4})?[[:space:]]*$' THEN (${v} #>> '{}')::numeric END) END)`
  }
  const x = jraw(column, path)
  return sql`(CASE ${jsonPathType(store, column, path)} WHEN 'integer' THEN ${x} WHEN 'real' THEN ${x} WHEN 'text' THEN (CASE WHEN json_valid(${x}) AND json_type(${x}) IN ('integer', 'real') AND NOT ${x} GLOB '*[eE]*[0-9][0-9][0-9][0-9][0-9]*' THEN CAST(${x} AS REAL) END) END)`
}

/**
 * The value as epoch milliseconds: ISO-8601 date/date-time strings (src/filters/check.ts parseIsoDate has
 * the grammar both stores share), and numbers as epoch milliseconds, or seconds when their magnitude is
 * below `secondsBelow`; NULL otherwise.
 */
export function jsonPathDate(store: On, column: SQL, path: string[], secondsBelow: number): SQL {
  const below = sql.raw(String(secondsBelow))
  // dialect: a date from JSON: the mailctl_date_ms function on PostgreSQL, unixepoch on SQLite
  if (store.dialect === 'pg') {
    const v = jv(store, column, path)
    return sql`(CASE jsonb_typeof(${v}) WHEN 'number' THEN (CASE WHEN abs((${v})::numeric) < ${below} THEN (${v})::numeric * 1000 ELSE (${v})::numeric END) WHEN 'string' THEN mailctl_date_ms(${v} #>> '{}') END)`
  }
  const x = jraw(column, path)
  const n = sql`(CASE WHEN abs(${x}) < ${below} THEN ${x} * 1000 ELSE ${x} END)`
  return sql`(CASE ${jsonPathType(store, column, path)} WHEN 'integer' THEN ${n} WHEN 'real' THEN ${n} WHEN 'text' THEN (CASE WHEN ${x} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN round(unixepoch(${x}, 'subsec') * 1000) END) END)`
}

/** Whether the value at the path is the JSON string `s` (never NULL). */
export function jsonPathIsString(store: On, column: SQL, path: string[], s: string): SQL {
  // dialect: jsonb containment (@>) is one pass over the binary value; SQLite compares json_extract's text
  if (store.dialect === 'pg') {
    const probe = path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), s)
    return sql`${column} @> ${JSON.stringify(probe)}::jsonb`
  }
  // json_extract returns SQL text only for a JSON string (numbers come back as numbers, never equal to text).
  return sql`COALESCE(${jraw(column, path)} = ${s}, (1 = 0))`
}
