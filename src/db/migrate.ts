import { sql } from 'drizzle-orm'
import { embeddedMigrations } from './migrations.macro' with { type: 'macro' }
import type { Migration } from './migrations.macro'
import type { Dialect, Store } from './client'
import { moment } from './dialect'
import { REPAIRS, type Repair } from './repairs'

/** Each store's schema steps: its own migrations (migrations/<dialect>) and data repairs. */
const STEPS: Record<Dialect, { migrations: Migration[]; repairs: Repair[] }> = {
  sqlite: { migrations: embeddedMigrations('sqlite'), repairs: REPAIRS.sqlite },
  pg: { migrations: embeddedMigrations('pg'), repairs: REPAIRS.pg },
}

/** The names of every migration and repair a store of this kind has once migrated (a restore asks before it opens one). */
export function knownMigrations(store: Pick<Store, 'dialect'>): string[] {
  // dialect: each store has its own migration files (its own SQL) and data repairs
  const steps = STEPS[store.dialect]
  return [...steps.migrations.map((m) => m.name), ...steps.repairs.map((r) => r.name)].sort()
}

async function ensureTable(store: Store) {
  await store.script(
    // dialect: timestamptz with a default on PostgreSQL, epoch milliseconds on SQLite
    store.dialect === 'pg'
      ? 'CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ(3) NOT NULL DEFAULT now())'
      : 'CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)',
  )
}

/**
 * The migrations applied, by name; none when `schema_migrations` does not exist yet. Any other failure
 * (the database down) is thrown: "no migration applied" must not stand for "could not ask".
 */
export async function appliedMigrations(store: Store): Promise<string[]> {
  try {
    const rows = await store.rows<{ name: string }>(sql`SELECT name FROM schema_migrations ORDER BY name`)
    return rows.map((r) => r.name)
  } catch (err) {
    if (noSuchTable(err)) return []
    throw err
  }
}

/** The error of a query on a table that does not exist (SQLite's message, PostgreSQL's 42P01), through causes. */
function noSuchTable(err: unknown): boolean {
  const seen = new Set<unknown>()
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e)
    if ((e as { code?: unknown }).code === '42P01' || /no such table/i.test(e.message)) return true
  }
  return false
}

/** Runs a data repair unless schema_migrations names it, and records it, in one transaction. */
function applyRepair(store: Store, r: Repair): Promise<boolean> {
  return store.tx(async (db) => {
    const [seen] = await store.rows(sql`SELECT 1 AS seen FROM schema_migrations WHERE name = ${r.name}`, db)
    if (seen) return false
    await r.run(store, db)
    await store.exec(sql`INSERT INTO schema_migrations (name, applied_at) VALUES (${r.name}, ${moment(store, Date.now())})`, db)
    return true
  })
}

/**
 * Applies every embedded migration not yet applied, each in its own transaction, then the data repairs
 * (src/db/repairs.ts) not yet applied. Returns the names applied.
 */
export async function migrate(store: Store): Promise<string[]> {
  await ensureTable(store)
  const done: string[] = []
  // dialect: each store has its own migration files (its own SQL) and data repairs
  const steps = STEPS[store.dialect]
  for (const m of steps.migrations) {
    if (await store.applyMigration(m.name, m.sql)) done.push(m.name)
  }
  for (const r of steps.repairs) {
    if (await applyRepair(store, r)) done.push(r.name)
  }
  return done
}

/** True when every embedded migration is applied (throws when the store cannot be asked), read by `store.probe`. */
export async function migrationsApplied(store: Store): Promise<boolean> {
  let names: string[]
  try {
    names = (await store.probe<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name)
  } catch (err) {
    if (!noSuchTable(err)) throw err
    names = []
  }
  const applied = new Set(names)
  return knownMigrations(store).every((n) => applied.has(n))
}
