import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { openStore, type Store } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { readiness, sqliteFreeBytes } from '../../src/db/readiness'
import { freshPgDatabase, migratedStore, pgReachableSync } from '../helpers/env'

/**
 * /ready's database and migrations checks read through `store.probe`, a connection of their own: with
 * every connection of the pool busy (as right after an outage, when the pool reconnects under the load
 * that waited), they still answer within the deadline. Through the pool they waited behind it and said
 * "no answer within 1000 ms" although the database answered.
 */
describe.skipIf(!pgReachableSync())('readiness beside a busy pool [pg]', () => {
  let store: Store
  let drop: () => Promise<void>
  beforeAll(async () => {
    const db = await freshPgDatabase()
    drop = db.drop
    store = openStore(db.url)
    await migrate(store)
  }, 60_000)
  afterAll(async () => {
    await store.close()
    await drop()
  })

  test('every pool connection held by a slow read: the database and migrations checks still pass', async () => {
    const slow = Array.from({ length: 12 }, () => store.rows(sql`SELECT pg_sleep(2)`))
    await Bun.sleep(200)
    const started = performance.now()
    const r = await readiness(store, 1_000)
    expect(performance.now() - started).toBeLessThan(1_900)
    expect(r.checks.database).toBe(true)
    expect(r.checks.migrations).toBe(true)
    await Promise.all(slow)
  })

  test('the probe reads on its own connection, not the pool', async () => {
    const [row] = await store.probe<{ app: string }>("SELECT current_setting('application_name') AS app")
    expect(row.app).toBe('mailctl-probe')
  })
})

/** The disk check of /ready: a file-backed SQLite store watches its file system's free bytes; PostgreSQL's disk is the server's. */
for (const kind of ['sqlite', 'pg'] as const) {
  describe.skipIf(kind === 'pg' && !pgReachableSync())(`readiness's disk check [${kind}]`, () => {
    test('free bytes are read exactly for a store with a file, and the store is ready', async () => {
      const { store, cleanup } = await migratedStore(kind, 'ready-disk')
      try {
        const free = sqliteFreeBytes(store)
        expect(free === null).toBe(kind === 'pg')
        if (free !== null) expect(free).toBeGreaterThan(0)
        expect(await readiness(store)).toEqual({ ready: true, checks: { database: true, migrations: true, storage: true } })
      } finally { await cleanup() }
    })
  })
}
