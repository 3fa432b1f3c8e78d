import type postgres from 'postgres'

/**
 * Table data on PostgreSQL as JSON lines (one `row_to_json` object per row), for backups of a PostgreSQL
 * store, their restore, and `mailctl store copy` (which turns SQLite rows into the same lines). Loading
 * goes through `json_populate_recordset`, so PostgreSQL itself parses every value (timestamps, jsonb,
 * bytea, 64-bit integers) and no value passes through a JavaScript number on the way.
 */

/**
 * PostgreSQL-only tables kept by triggers on `contacts` (the contact search's keys and change log): they
 * are rebuilt as the contacts are loaded, never copied. `schema_migrations` is written by the loader.
 */
export const DERIVED_PG_TABLES = new Set(['contact_search_keys', 'contact_changes', 'schema_migrations'])

/** The one table whose triggers stay on during a load: they fill the derived tables above. */
const TRIGGERS_KEPT = new Set(['contacts'])

export interface PgColumn { name: string; type: string }
export interface PgTable { name: string; columns: PgColumn[]; primaryKey: string[] }

type Q = postgres.Sql | postgres.TransactionSql

/** The quoted identifier. */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/**
 * The tables of the public schema (but the derived ones), parents before children (foreign keys), each
 * with its columns in order and its primary key.
 */
export async function pgTables(q: Q): Promise<PgTable[]> {
  const cols = await q<{ table_name: string; column_name: string; data_type: string }[]>`
    SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
    WHERE c.table_schema = 'public' AND c.is_generated = 'NEVER' ORDER BY c.table_name, c.ordinal_position`
  const pks = await q<{ table_name: string; column_name: string }[]>`
    SELECT cl.relname AS table_name, a.attname AS column_name FROM pg_index i
    JOIN pg_class cl ON cl.oid = i.indrelid JOIN pg_namespace n ON n.oid = cl.relnamespace AND n.nspname = 'public'
    JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
    JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attnum = k.attnum
    WHERE i.indisprimary ORDER BY cl.relname, k.ord`
  const fks = await q<{ child: string; parent: string }[]>`
    SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k
    JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
    WHERE k.contype = 'f' AND k.conrelid <> k.confrelid`
  const byName = new Map<string, PgTable>()
  for (const c of cols) {
    if (DERIVED_PG_TABLES.has(c.table_name)) continue
    let t = byName.get(c.table_name)
    if (!t) { t = { name: c.table_name, columns: [], primaryKey: [] }; byName.set(c.table_name, t) }
    t.columns.push({ name: c.column_name, type: c.data_type })
  }
  for (const k of pks) byName.get(k.table_name)?.primaryKey.push(k.column_name)
  const parents = new Map<string, Set<string>>()
  for (const f of fks) if (byName.has(f.child) && byName.has(f.parent)) {
    if (!parents.has(f.child)) parents.set(f.child, new Set())
    parents.get(f.child)?.add(f.parent)
  }
  const order: PgTable[] = []
  const state = new Map<string, 'visiting' | 'done'>()
  const visit = (name: string) => {
    if (state.get(name) === 'done') return
    if (state.get(name) === 'visiting') throw new Error(`foreign keys form a cycle through ${name}`)
    state.set(name, 'visiting')
    for (const p of [...(parents.get(name) ?? [])].sort()) visit(p)
    state.set(name, 'done')
    order.push(byName.get(name) as PgTable)
  }
  for (const name of [...byName.keys()].sort()) visit(name)
  return order
}

/** Turns off the user triggers of the loaded tables (derived counters are loaded as they were), contacts' excepted. */
export async function setTriggers(q: Q, tables: string[], on: boolean): Promise<void> {
  for (const t of tables) {
    if (TRIGGERS_KEPT.has(t)) continue
    await q.unsafe(`ALTER TABLE ${ident(t)} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER USER`)
  }
}

/** Inserts rows given as JSON object texts (the keys are column names) into a table. */
export async function insertLines(q: Q, table: string, columns: string[], lines: string[]): Promise<void> {
  if (!lines.length) return
  const list = columns.map(ident).join(', ')
  await q.unsafe(`INSERT INTO ${ident(table)} (${list}) SELECT ${list} FROM json_populate_recordset(NULL::${ident(table)}, $1::text::json)`, [`[${lines.join(',')}]`])
}

/** Collects JSON lines and loads them in batches of about `maxBytes`. */
export class LineLoader {
  private lines: string[] = []
  private bytes = 0
  rows = 0
  constructor(private q: Q, private table: string, private columns: string[], private maxBytes = 4 << 20) {}

  async add(line: string): Promise<void> {
    this.lines.push(line)
    this.bytes += line.length
    this.rows++
    if (this.bytes >= this.maxBytes || this.lines.length >= 5000) await this.flush()
  }

  async flush(): Promise<void> {
    const batch = this.lines
    this.lines = []
    this.bytes = 0
    await insertLines(this.q, this.table, this.columns, batch)
  }
}

/** The per-table row count of a loaded table. */
export async function countRows(q: Q, table: string): Promise<number> {
  const [r] = await q.unsafe<{ n: string }[]>(`SELECT count(*)::text AS n FROM ${ident(table)}`)
  return Number(r.n)
}

/**
 * The indexes of the loaded tables that no constraint relies on, dropped before a bulk load and built
 * again after it (one sort per index instead of one insertion per row): `rebuild` recreates them from their
 * own definitions. Primary keys and unique constraints stay (foreign keys and the loads need them).
 */
export async function dropSecondaryIndexes(q: Q, tables: string[]): Promise<{ rebuild(): Promise<void> }> {
  const rows = await q<{ indexname: string; indexdef: string }[]>`
    SELECT i.indexname, i.indexdef FROM pg_indexes i
    JOIN pg_class c ON c.relname = i.indexname JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
    WHERE i.schemaname = 'public' AND i.tablename IN ${q(tables)}
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = c.oid)`
  for (const r of rows) await q.unsafe(`DROP INDEX ${ident(r.indexname)}`)
  return {
    async rebuild() {
      for (const r of rows) await q.unsafe(r.indexdef)
    },
  }
}
