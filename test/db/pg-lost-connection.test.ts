import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { openStore, type Store } from '../../src/db/client'
import { storageError } from '../../src/db/failures'
import { PG_ADMIN_URL, pgReachableSync } from '../helpers/env'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy'
import { until } from '../helpers/worker'

/**
 * A transaction's connection lost while the transaction runs (src/db/pg-reserved.ts): the transaction
 * fails with an error that answers 503 DATABASE_UNAVAILABLE, the process goes on (postgres.js 3.4.9 would
 * write the ROLLBACK that follows to a socket it has set to null, from a setImmediate: an uncaught
 * TypeError, or never answer it), and the store works again once the database can be reached. The
 * connection is cut at an exact point by a loopback proxy in front of the shared server.
 */
describe.skipIf(!pgReachableSync())('a transaction whose connection is lost [pg]', () => {
  const target = new URL(PG_ADMIN_URL)
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} })
  let proxy: TcpProxy
  let store: Store
  const tag = `lost-${Math.random().toString(36).slice(2, 8)}`

  beforeAll(async () => {
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432))
    const url = new URL(PG_ADMIN_URL)
    url.port = String(proxy.port)
    store = openStore(url.toString())
  })
  afterAll(async () => {
    // Up to 5 s: postgres.js's end() waits its timeout for a connection closed in the middle of a statement.
    await store.close()
    await proxy.close()
    await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE ${`%${tag}%`} AND pid <> pg_backend_pid()`
    await admin.end()
  }, 30_000)

  /** Runs a transaction that is in a statement (a long sleep) when the proxy cuts its connection `how`; answers its error. */
  async function cutInFlight(how: 'end' | 'reset', n: number): Promise<unknown> {
    const marker = `${tag}-${n}`
    const failed = store.tx(async (db) => {
      await db.execute(sql`SELECT 1`)
      await db.execute(sql.raw(`SELECT pg_sleep(60) /* ${marker} */`))
    }).then(() => new Error('the transaction committed'), (err: unknown) => err)
    await until(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${marker} */`}`).length > 0, 10_000, 'the statement to be in flight')
    await proxy.cut(how)
    return await failed
  }

  async function recovers() {
    await until(async () => {
      try {
        return (await store.tx(async (db) => store.rows<{ one: number }>(sql`SELECT 1 AS one`, db)))[0].one === 1
      } catch { return false }
    }, 20_000, 'a transaction after the connection came back', 50)
  }

  test('closed by the server (FIN) during a statement: the transaction fails with 503, no crash, and the store recovers', async () => {
    const err = await cutInFlight('end', 1)
    expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
    expect(storageError(err)?.opts.headers?.['retry-after']).toBe('5')
    await recovers()
  }, 60_000)

  test('reset (ECONNRESET) during a statement: the transaction fails with 503 instead of waiting forever for its ROLLBACK; the store recovers', async () => {
    const err = await cutInFlight('reset', 2)
    expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
    await recovers()
  }, 60_000)

  test('closed between two statements of a transaction: the next statement fails with 503, no crash; the store recovers', async () => {
    const err = await store.tx(async (db) => {
      await db.execute(sql`SELECT 1`)
      const before = proxy.accepted
      await proxy.cut('end')
      // The client's side is closed at the proxy; let its own close event run before the next statement.
      await new Promise((r) => setTimeout(r, 0))
      expect(proxy.accepted).toBe(before)
      await db.execute(sql`SELECT 2`)
    }).then(() => new Error('the transaction committed'), (e: unknown) => e)
    expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
    await recovers()
  }, 60_000)
})
