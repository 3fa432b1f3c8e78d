import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { openStore, type Store } from '../../src/db/client'
import { storageError } from '../../src/db/failures'
import { migrate } from '../../src/db/migrate'
import { endPool, openPool, reservedTransaction } from '../../src/db/pg-reserved'
import { currentIndex } from '../../src/modules/contacts/search/index'
import { verifiedAmong } from '../../src/modules/domains/repo'
import { freshPgDatabase, PG_ADMIN_URL, pgReachableSync } from '../helpers/env'
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

  async function recovers(on: Store = store) {
    await until(async () => {
      try {
        return (await on.tx(async (db) => on.rows<{ one: number }>(sql`SELECT 1 AS one`, db)))[0].one === 1
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

  /**
   * A proxy of its own for a test whose cut must find only its own connections: the shared store may be
   * connecting again after the previous test's cut.
   */
  async function ownProxy(base = PG_ADMIN_URL): Promise<{ proxy: TcpProxy; url: string }> {
    const own = await startTcpProxy(target.hostname, Number(target.port || 5432))
    const url = new URL(base)
    url.port = String(own.port)
    return { proxy: own, url: url.toString() }
  }

  /**
   * Lost right after its start: postgres.js 3.4.9 sends a query for the server's array types after the
   * authentication of every connection it makes, without awaiting it, and a connection lost with that
   * query in flight rejected it with nobody to catch it: an unhandled rejection, which ends a Bun process
   * (a database restart while the pool reconnected could stop a node). patches/postgres+3.4.9.patch
   * handles it; the loss fails the caller's statement (a reservation gets the connection started again).
   * The cut comes as the connection sends that query (it reads pg_catalog.pg_type).
   */
  test('reset with its types query in flight: the statement that started it gets 503, a transaction gets the connection started again; no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const record = (reason: unknown) => { unhandled.push(reason) }
    process.on('unhandledRejection', record)
    const own = await ownProxy()
    const s = openStore(own.url)
    const t = openStore(own.url)
    try {
      const cut = own.proxy.cutAt('pg_catalog.pg_type', 'reset')
      const err = await s.rows(sql`SELECT 1 AS one`).then(() => new Error('the statement was answered'), (e: unknown) => e)
      await cut
      expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
      await recovers(s)
      // A transaction's reservation starts the connection: it waits for the connection started again.
      const cutTx = own.proxy.cutAt('pg_catalog.pg_type', 'reset')
      const done = t.tx(async (db) => t.rows<{ one: number }>(sql`SELECT 1 AS one`, db)).then((r) => r[0].one, (e: unknown) => e)
      await cutTx
      expect(await Promise.race([done, Bun.sleep(20_000).then(() => 'no answer')])).toBe(1)
      // A rejection nobody handled is reported after the turn it happened in.
      await Bun.sleep(50)
      expect(unhandled.map((e) => (e instanceof Error ? e.message : String(e)))).toEqual([])
    } finally {
      process.off('unhandledRejection', record)
      await s.close()
      await t.close()
      await own.proxy.close()
    }
  }, 60_000)

  test('lost with its COMMIT in flight: the error says it may or may not have committed (503); lost before, that nothing was written', async () => {
    const own = await ownProxy()
    const s = openStore(own.url)
    try {
      const commit = own.proxy.cutAt('COMMIT', 'end')
      const err = await s.tx(async (db) => { await db.execute(sql`SELECT 1`) }).then(() => new Error('the transaction committed'), (e: unknown) => e)
      await commit
      expect((err as Error).message).toMatch(/^the database connection was lost while the COMMIT of the transaction was in flight \(.*\); it may or may not have committed$/)
      expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
      await recovers(s)
      const before = own.proxy.cutAt('SELECT 2', 'end')
      const early = await s.tx(async (db) => { await db.execute(sql`SELECT 2`) }).then(() => new Error('the transaction committed'), (e: unknown) => e)
      await before
      expect((early as Error).message).toMatch(/^the database connection was lost during the transaction \(.*\); it was not committed: nothing of it was written$/)
    } finally {
      await s.close()
      await own.proxy.close()
    }
  }, 60_000)

  test('a transaction waiting for a free connection when the busy ones are lost gets one (postgres.js dropped its reservation: it waited forever)', async () => {
    const marker = `${tag}-busy`
    // The pool's 10 connections each in a transaction, in a statement; an eleventh transaction waits.
    const busy = Array.from({ length: 10 }, () => store.tx(async (db) => { await db.execute(sql.raw(`SELECT pg_sleep(60) /* ${marker} */`)) }).then(() => null, (e: unknown) => e))
    await until(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${marker} */`}`).length === 10, 10_000, 'ten statements in flight')
    const waiting = store.tx(async (db) => store.rows<{ one: number }>(sql`SELECT 1 AS one`, db)).then((r) => r[0].one, (e: unknown) => e)
    await proxy.cut('end')
    for (const err of await Promise.all(busy)) expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
    expect(await Promise.race([waiting, Bun.sleep(20_000).then(() => 'no answer')])).toBe(1)
  }, 60_000)

  test('reset while a cursor of a transaction waits for its rows: the transaction fails with the loss instead of waiting forever for its ROLLBACK', async () => {
    const own = await ownProxy()
    const client = openPool(own.url, { max: 1, onnotice: () => {} })
    try {
      const marker = `${tag}-cursor`
      const read = reservedTransaction(client, async (q) => {
        for await (const _ of q.unsafe(`SELECT pg_sleep(60) /* ${marker} */`).cursor(1)) { /* no row comes */ }
      }, { what: 'the read' }).then(() => new Error('the read finished'), (e: unknown) => e)
      await until(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${marker} */`}`).length > 0, 10_000, 'the cursor\'s statement to be in flight')
      await own.proxy.cut('reset')
      // A cursor's failure reaches only its iterator, not the statement's promise: without watching it the
      // connection was not known lost, and the ROLLBACK sent after the socket error was never answered.
      const err = await Promise.race([read, Bun.sleep(20_000).then(() => 'no answer')])
      expect((err as Error).message).toMatch(/^the database connection was lost during the read \(.*ECONNRESET\); it was not committed: nothing of it was written$/)
      // The pool's one connection is connected again for the next transaction.
      const next = reservedTransaction(client, async (q) => (await q`SELECT 1 AS one`)[0].one)
      expect(await Promise.race([next, Bun.sleep(20_000).then(() => 'no answer')])).toBe(1)
    } finally {
      await endPool(client, 5)
      await own.proxy.close()
    }
  }, 60_000)

  test('a migration whose connection is lost fails naming it, leaves nothing of it, and migrating again applies it', async () => {
    const db = await freshPgDatabase()
    const own = await ownProxy(db.url)
    const fresh = openStore(own.url)
    const direct = postgres(db.url, { max: 1, onnotice: () => {} })
    try {
      // The first migration has run its SQL in its transaction when its bookkeeping row goes out.
      const cut = own.proxy.cutAt('INSERT INTO schema_migrations', 'end')
      const err = await Promise.race([migrate(fresh).then(() => new Error('it migrated'), (e: unknown) => e), Bun.sleep(20_000).then(() => 'no answer')])
      await cut
      expect((err as Error).message).toMatch(/^the database connection was lost during the migration \w+ \(.*\); it was not committed: nothing of it was written$/)
      expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
      // Only the bookkeeping table, made before the migrations, and empty.
      expect((await direct`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`).map((r) => r.tablename)).toEqual(['schema_migrations'])
      expect((await direct`SELECT count(*)::int AS n FROM schema_migrations`)[0].n).toBe(0)
      await until(async () => (await migrate(fresh).then(() => true, () => false)), 20_000, 'a migration once the database can be reached', 50)
      expect(((await direct`SELECT count(*)::int AS n FROM schema_migrations`)[0].n as number)).toBeGreaterThan(0)
    } finally {
      await fresh.close()
      await own.proxy.close()
      await direct.end()
      await db.drop()
    }
  }, 60_000)

  test('outside a transaction: a statement in flight at a reset fails with 503, and close does not wait for its timeout (5 s)', async () => {
    const own = await ownProxy()
    const closing = openStore(own.url)
    try {
      const marker = `${tag}-plain`
      const failed = closing.rows(sql.raw(`SELECT pg_sleep(60) /* ${marker} */`)).then(() => null, (e: unknown) => e)
      await until(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${marker} */`}`).length > 0, 10_000, 'the statement to be in flight')
      await own.proxy.cut('reset')
      expect(storageError(await failed)?.code).toBe('DATABASE_UNAVAILABLE')
      // postgres.js keeps the lost statement as its connection's current one, and its end() waited for its answer.
      const closed = closing.close().then(() => 'closed')
      expect(await Promise.race([closed, Bun.sleep(4_000).then(() => 'still closing after 4 s')])).toBe('closed')
    } finally {
      await closing.close()
      await own.proxy.close()
      // PostgreSQL does not notice a lost client while it sleeps: end the backend instead of leaving it 60 s.
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE ${`%${tag}-plain */`} AND pid <> pg_backend_pid()`
    }
  }, 60_000)

  test('the direct reads of the sender gate and of the contact search answer 503 within the read deadline when the server stops answering', async () => {
    const db = await freshPgDatabase()
    const own = await ownProxy(db.url)
    const direct = openStore(db.url)
    // A store each, each with a connection already open through the proxy: a read that needed a new
    // connection would fail at postgres.js's connect timeout (also a 503), guard or no guard.
    const gateStore = openStore(own.url)
    const searchStore = openStore(own.url)
    try {
      await migrate(direct)
      expect(await verifiedAmong(gateStore, gateStore.db, 'p1', ['example.com'])).toEqual([])
      await searchStore.rows(sql`SELECT 1`)
      own.proxy.freeze()
      const gate = verifiedAmong(gateStore, gateStore.db, 'p1', ['example.com']).then(() => new Error('answered'), (e: unknown) => e)
      const search = currentIndex(searchStore, 'p1').then(() => new Error('answered'), (e: unknown) => e)
      for (const err of await Promise.all([gate, search].map((p) => Promise.race([p, Bun.sleep(20_000).then(() => 'no answer')])))) {
        expect(storageError(err)?.code).toBe('DATABASE_UNAVAILABLE')
        // The guard's deadline answered, not a connect timeout.
        expect((err as Error).message).toMatch(/did not answer within \d+ ms/)
      }
    } finally {
      await own.proxy.close()
      await Promise.all([gateStore.close(), searchStore.close(), direct.close()])
      await db.drop()
    }
  }, 60_000)

  test('close after a lost connection does not wait for its timeout (5 s); a statement in flight on a healthy connection still finishes', async () => {
    const own = await ownProxy()
    const closing = openStore(own.url)
    try {
      // A transaction in a statement when its connection is reset: postgres.js keeps that statement as the
      // connection's current one, and its end() waited for its answer.
      const marker = `${tag}-close`
      const failed = closing.tx(async (db) => { await db.execute(sql.raw(`SELECT pg_sleep(60) /* ${marker} */`)) }).then(() => null, (e: unknown) => e)
      await until(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${marker} */`}`).length > 0, 10_000, 'the statement to be in flight')
      await own.proxy.cut('reset')
      expect(storageError(await failed)?.code).toBe('DATABASE_UNAVAILABLE')
      // Once the database answers again, a statement on another connection is in flight as the store closes.
      await until(async () => (await closing.rows(sql`SELECT 1 AS one`).then(() => true, () => false)), 20_000, 'the store to answer again', 50)
      const healthy = `${tag}-healthy`
      const running = closing.rows<{ done: string }>(sql.raw(`SELECT 'finished' AS done FROM pg_sleep(0.5) /* ${healthy} */`))
      await until(async () => (await admin`SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE ${`%${healthy} */`}`).length > 0, 10_000, 'the healthy statement to be in flight')
      const closed = closing.close().then(() => 'closed')
      expect(await Promise.race([closed, Bun.sleep(4_000).then(() => 'still closing after 4 s')])).toBe('closed')
      expect((await running)[0].done).toBe('finished')
    } finally {
      await closing.close()
      await own.proxy.close()
    }
  }, 60_000)
})
