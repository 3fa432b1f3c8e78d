/**
 * Readiness (GET /ready): the checks a load balancer or an orchestrator needs before it sends traffic,
 * each bounded by a deadline so that a database that does not answer makes /ready say so, not hang:
 * - database: the store answers a query;
 * - migrations: every embedded migration is applied;
 * - storage: a write can be made. A write transaction that needs a new page (a table created, then
 *   rolled back: nothing stays) fails on a database that cannot grow (SQLITE_FULL, PostgreSQL's disk_full,
 *   a read-only standby); on SQLite the free space of the database's file system is also read, since a
 *   rolled-back write touches no disk.
 */
import { sql } from 'drizzle-orm'
import { describeStoreError, type Store } from './client'
import { freeBytesFor, MIN_FREE_BYTES, storageFailure } from './failures'
import { migrationsApplied } from './migrate'

/** How long each check may take before it counts as failed. */
export const READY_DEADLINE_MS = 1_000

export interface Readiness {
  ready: boolean
  checks: { database: boolean; migrations: boolean; storage: boolean }
  /** Why each failed check failed (absent when all pass). */
  problems?: Partial<Record<keyof Readiness['checks'], string>>
}

class Deadline extends Error {}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: Timer | null = null
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Deadline(`no answer within ${ms} ms`)), ms) })
  return Promise.race([p, late]).finally(() => { if (timer) clearTimeout(timer) })
}

const rollback = new Error('readiness probe: roll back')

/**
 * Bytes free for this process on the file system of a file-backed SQLite store (null: PostgreSQL, in
 * memory, or unknown). Root may also use the blocks reserved for it.
 */
export function sqliteFreeBytes(store: Store): number | null {
  // dialect: only a file-backed SQLite store has a disk to watch here
  return store.file === null ? null : freeBytesFor(store.file)
}

/** A write that needs a new page, rolled back; throws what the store throws. */
async function probeWrite(store: Store): Promise<void> {
  const free = sqliteFreeBytes(store)
  if (free !== null && free < MIN_FREE_BYTES) throw new Error(`disk full: ${free} bytes free on the database's file system`)
  try {
    await store.tx(async (db) => {
      await store.exec(sql`CREATE TABLE mailctl_ready_probe (x INTEGER)`, db)
      throw rollback
    })
  } catch (err) {
    if (err !== rollback) throw err
  }
}

function problem(err: unknown): string {
  if (err instanceof Deadline) return err.message
  const kind = storageFailure(err)
  if (kind === 'full' || /^disk full/.test((err as Error)?.message ?? '')) return `disk full: ${describeStoreError(err)}`
  return kind === 'unavailable' ? `database unavailable: ${describeStoreError(err)}` : describeStoreError(err)
}

/** Runs the checks at once, each within `deadlineMs`; never waits longer than that. */
export async function readiness(store: Store, deadlineMs = READY_DEADLINE_MS): Promise<Readiness> {
  const [database, migrations, storage] = await Promise.allSettled([
    within(store.probe('SELECT 1 AS one'), deadlineMs),
    within(migrationsApplied(store), deadlineMs),
    within(probeWrite(store), deadlineMs),
  ])
  const checks = {
    database: database.status === 'fulfilled',
    migrations: migrations.status === 'fulfilled' && migrations.value === true,
    storage: storage.status === 'fulfilled',
  }
  const problems: Readiness['problems'] = {}
  if (database.status === 'rejected') problems.database = problem(database.reason)
  if (migrations.status === 'rejected') problems.migrations = problem(migrations.reason)
  else if (!migrations.value) problems.migrations = 'migrations not applied: run `mailctl migrate`'
  if (storage.status === 'rejected') problems.storage = problem(storage.reason)
  const ready = checks.database && checks.migrations && checks.storage
  return ready ? { ready, checks } : { ready, checks, problems }
}
