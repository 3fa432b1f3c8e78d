import { Database } from 'bun:sqlite'
import { databaseUrlProblem, redactUrl, type Config } from '../config'
import { sqlitePath, type Store } from '../db/client'
import { embeddedMigrations } from '../db/migrations.macro' with { type: 'macro' }
import { appliedMigrations, knownMigrations } from '../db/migrate'
import { endPool, openPool, reservedTransaction } from '../db/pg-reserved'
import { REPAIRS } from '../db/repairs'
import { badRequest, conflict } from '../errors'
import { dkimKey, jwtSecret } from '../secrets'
import { dropSecondaryIndexes, ident, LineLoader, pgTables, setTriggers, type PgColumn } from './pg-data'

/**
 * `mailctl store copy --to postgres://...`: a SQLite install's data into an empty PostgreSQL database.
 * - The source is read in one SQLite read transaction (a consistent snapshot; the server may keep writing).
 * - The target gets the current schema and every row, with the same ids, in ONE transaction: a copy killed
 *   midway leaves the target as it was (empty), never half-filled.
 * - Before COMMIT each table's row count and checksum are compared with the source's (an order-free sum of
 *   a 128-bit hash of each row's canonical values); any difference rolls everything back.
 * - A value PostgreSQL cannot store (a NUL character, a lone UTF-16 surrogate in JSON) is never changed:
 *   the row is reported (table, key, column) and the copy rolls back, so the operator fixes the source.
 * - The SQLite-only change log of the contact search (`contact_changes`) is not copied: PostgreSQL's own
 *   is rebuilt by the contacts' triggers as the rows arrive (pg-data.ts).
 */

export interface CopyOptions { force?: boolean; onProgress?: (message: string) => void }

export interface Unstorable { table: string; key: Record<string, unknown>; column: string; problem: string }

export interface CopyTable { name: string; rows: number; targetRows: number; checksum: string; targetChecksum: string; ok: boolean }

export interface CopyResult {
  ok: boolean
  target: string
  migrationLevel: string | null
  durationMs: number
  tables: CopyTable[]
  unstorable: Unstorable[]
  /** The settings every node on the new database needs (the keys this install signs and encrypts with). */
  settings: Record<string, string>
}

const PG_MIGRATIONS = embeddedMigrations('pg')
const PG_SCHEMA_MIGRATIONS = 'CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ(3) NOT NULL DEFAULT now())'
/** SQLite tables that are not data: the migration bookkeeping and the contact search's change log. */
const NOT_COPIED = new Set(['schema_migrations', 'contact_changes'])
const UNSTORABLE_SHOWN = 1000

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

function stringProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'NUL character (PostgreSQL text cannot hold U+0000)'
  if (LONE_SURROGATE.test(s)) return 'lone UTF-16 surrogate (PostgreSQL cannot store it)'
  return null
}

function jsonProblem(v: unknown): string | null {
  if (typeof v === 'string') return stringProblem(v)
  if (Array.isArray(v)) { for (const x of v) { const p = jsonProblem(x); if (p) return p } return null }
  if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      const p = stringProblem(k) ?? jsonProblem(x)
      if (p) return p
    }
  }
  return null
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`).join(',')}}`
  return JSON.stringify(v)
}

const isTs = (t: string) => t.startsWith('timestamp')
const isJson = (t: string) => t === 'jsonb' || t === 'json'

const MASK128 = (1n << 128n) - 1n

/** A table's checksum: the sum modulo 2^128 of each row's 128-bit hash (two seeded wyhashes), so row order does not matter. */
class TableSum {
  private sum = 0n
  rows = 0
  constructor(private columns: PgColumn[]) {}
  add(row: Record<string, unknown>): void {
    const canon = this.columns.map((c) => {
      const v = row[c.name]
      if (v === null || v === undefined) return null
      if (isTs(c.type)) return typeof v === 'string' ? Date.parse(v) : v
      if (isJson(c.type)) return stable(v)
      if (typeof v === 'number' || typeof v === 'bigint') return String(v)
      return v
    })
    // Two 64-bit wyhashes with different seeds: a verification of what was written, not a defence
    // against tampering, at a fraction of SHA-256's cost per row.
    const text = JSON.stringify(canon)
    this.sum = (this.sum + (BigInt(Bun.hash.wyhash(text, 1n)) << 64n) + BigInt(Bun.hash.wyhash(text, 2n))) & MASK128
    this.rows++
  }
  hex(): string { return this.sum.toString(16).padStart(32, '0') }
}

/** A SQLite value as the JSON `json_populate_recordset` reads for a column of this PostgreSQL type; or a problem. */
function convert(type: string, v: unknown): { value: unknown } | { problem: string } {
  if (v === null || v === undefined) return { value: null }
  if (isTs(type)) return { value: typeof v === 'number' ? new Date(v).toISOString() : v }
  if (type === 'boolean') return { value: typeof v === 'number' || typeof v === 'bigint' ? v !== 0 && v !== 0n : Boolean(v) }
  if (isJson(type)) {
    let parsed: unknown
    try { parsed = typeof v === 'string' ? JSON.parse(v) : v } catch { return { problem: 'not valid JSON' } }
    const p = jsonProblem(parsed)
    return p ? { problem: p } : { value: parsed }
  }
  if (type === 'bytea') return { value: `\\x${Buffer.from(v as Uint8Array).toString('hex')}` }
  if (typeof v === 'string') {
    const p = stringProblem(v)
    return p ? { problem: p } : { value: v }
  }
  if (typeof v === 'bigint') return { value: v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString() }
  return { value: v }
}

class CopyRefused extends Error {}

export async function copyStore(source: { config: Config; store: Store }, to: string, opts: CopyOptions = {}): Promise<CopyResult> {
  const started = performance.now()
  const progress = opts.onProgress ?? (() => {})
  // dialect: store copy moves a SQLite install to PostgreSQL, never the other way
  if (source.store.dialect !== 'sqlite') throw badRequest('store copy reads a SQLite install: DATABASE_URL is PostgreSQL already (use `mailctl backup` and `mailctl restore` to move it)')
  if (!/^postgres(ql)?:/.test(to)) throw badRequest('--to must be a postgres:// URL')
  const problem = databaseUrlProblem(to)
  if (problem) throw badRequest(problem.replace('DATABASE_URL', '--to'))
  const applied = new Set(await appliedMigrations(source.store))
  const pending = knownMigrations(source.store).filter((m) => !applied.has(m))
  if (pending.length) throw badRequest(`the SQLite store has pending migrations (${pending.join(', ')}): run \`mailctl migrate\` first`)
  const settings = { MAILCTL_JWT_SECRET: jwtSecret(source.config), MAILCTL_DKIM_KEY: dkimKey(source.config).toString('base64') }

  const target = openPool(to, { max: 1, onnotice: () => {}, connection: { application_name: 'mailctl store copy' } })
  const snapshot = new Database(sqlitePath(source.store.url), { readonly: true })
  const unstorable: Unstorable[] = []
  let unstorableCount = 0
  const tables: CopyTable[] = []
  try {
    const [{ n: existing }] = await target<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`
    if (existing > 0 && !opts.force) throw conflict(`the target database (${redactUrl(to)}) is not empty: copy into an empty database, or pass --force to replace its tables (the final pass of a switch)`)
    snapshot.run('PRAGMA busy_timeout = 5000')
    // One read transaction for the whole copy: every table is read as of the same moment.
    snapshot.run('BEGIN')
    const sourceTables = new Set((snapshot.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name))
    try {
      await reservedTransaction(target, async (q) => {
        if (existing > 0) {
          progress('dropping the target\'s tables (--force)')
          await q.unsafe('DROP SCHEMA public CASCADE')
          await q.unsafe('CREATE SCHEMA public')
        }
        progress('creating the schema')
        await q.unsafe(PG_SCHEMA_MIGRATIONS)
        for (const m of PG_MIGRATIONS) {
          await q.unsafe(m.sql).simple()
          await q`INSERT INTO schema_migrations (name) VALUES (${m.name})`
        }
        for (const r of REPAIRS.pg) await q`INSERT INTO schema_migrations (name) VALUES (${r.name})`
        const order = (await pgTables(q)).filter((t) => sourceTables.has(t.name) && !NOT_COPIED.has(t.name))
        await setTriggers(q, order.map((t) => t.name), false)
        const indexes = await dropSecondaryIndexes(q, order.map((t) => t.name))
        const sums = new Map<string, { sum: TableSum; cols: PgColumn[] }>()
        for (const t of order) {
          progress(`copying ${t.name}`)
          const sourceCols = new Set((snapshot.query(`PRAGMA table_info(${ident(t.name)})`).all() as Array<{ name: string }>).map((c) => c.name))
          const cols = t.columns.filter((c) => sourceCols.has(c.name))
          const key = t.primaryKey.length ? t.primaryKey : cols.slice(0, 1).map((c) => c.name)
          const sum = new TableSum(cols)
          sums.set(t.name, { sum, cols })
          const loader = new LineLoader(q, t.name, cols.map((c) => c.name))
          const stmt = snapshot.query(`SELECT ${cols.map((c) => ident(c.name)).join(', ')} FROM ${ident(t.name)}`)
          for (const raw of stmt.iterate() as IterableIterator<Record<string, unknown>>) {
            const row: Record<string, unknown> = {}
            let bad = false
            for (const c of cols) {
              const r = convert(c.type, raw[c.name])
              if ('problem' in r) {
                bad = true
                unstorableCount++
                if (unstorable.length < UNSTORABLE_SHOWN) unstorable.push({ table: t.name, key: Object.fromEntries(key.map((k) => [k, raw[k]])), column: c.name, problem: r.problem })
              } else row[c.name] = r.value
            }
            if (bad) continue
            sum.add(row)
            await loader.add(JSON.stringify(row))
          }
          await loader.flush()
        }
        progress('building the indexes')
        await indexes.rebuild()
        await setTriggers(q, order.map((t) => t.name), true)
        progress('verifying row counts and checksums')
        for (const t of order) {
          const { sum: want, cols } = sums.get(t.name) as { sum: TableSum; cols: PgColumn[] }
          const got = new TableSum(cols)
          const cursor = q.unsafe<Array<{ j: string }>>(`SELECT row_to_json(t)::text AS j FROM ${ident(t.name)} t`).cursor(5000)
          for await (const batch of cursor) for (const r of batch) got.add(JSON.parse(r.j) as Record<string, unknown>)
          tables.push({ name: t.name, rows: want.rows, targetRows: got.rows, checksum: want.hex(), targetChecksum: got.hex(), ok: want.rows === got.rows && want.hex() === got.hex() })
        }
        if (unstorableCount || tables.some((t) => !t.ok)) throw new CopyRefused()
      }, { what: 'the copy' })
    } catch (err) {
      if (!(err instanceof CopyRefused)) throw err
    }
  } finally {
    if (snapshot.inTransaction) snapshot.run('COMMIT')
    snapshot.close()
    await endPool(target, 5)
  }
  const ok = unstorableCount === 0 && tables.every((t) => t.ok)
  return {
    ok, target: redactUrl(to), migrationLevel: PG_MIGRATIONS.at(-1)?.name ?? null, durationMs: Math.round(performance.now() - started),
    tables, unstorable, settings,
  }
}
