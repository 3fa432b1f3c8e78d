import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openStore, type Store } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'

// store.tx(fn, { durable: false }): the commit does not wait for the disk, for that transaction only.
// What is checked is the safety level each transaction runs at, read inside it, and that the work commits.

const insert = (s: Store, db: Parameters<Parameters<Store['tx']>[0]>[0], id: string) => s.exec(sql`INSERT INTO projects (id, name, public_key, secret_key_hash, disabled, tracking_enabled, settings, created_at, updated_at)
  VALUES (${id}, 'p', ${`pk_${id}`}, ${`h_${id}`}, false, true, '{}', ${new Date(0).toISOString()}, ${new Date(0).toISOString()})`, db)

describe('store.tx durable: false [sqlite]', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-durability-'))
  const store = openStore(`sqlite://${join(dir, 'mailctl.db')}`, { sqliteSynchronous: 'FULL' })
  afterAll(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const level = async (db: Parameters<Parameters<Store['tx']>[0]>[0]) => Number((await store.rows<{ synchronous: number }>(sql`PRAGMA synchronous`, db))[0].synchronous)
  const exists = async (id: string) => (await store.rows(sql`SELECT 1 AS x FROM projects WHERE id = ${id}`)).length === 1

  test('runs at synchronous=NORMAL and commits; the next transaction is back at FULL', async () => {
    await migrate(store)
    const inside = await store.tx(async (db) => { await insert(store, db, 'lazy-1'); return level(db) }, { durable: false })
    expect(inside).toBe(1) // NORMAL
    expect(await exists('lazy-1')).toBe(true)
    expect(await store.tx((db) => level(db))).toBe(2) // FULL
  })

  test('a failing transaction rolls back and still puts FULL back', async () => {
    const err = await store.tx(async (db) => { await insert(store, db, 'lazy-2'); throw new Error('boom') }, { durable: false }).catch((e: Error) => e)
    expect((err as Error).message).toBe('boom')
    expect(await exists('lazy-2')).toBe(false)
    expect(await store.tx((db) => level(db))).toBe(2)
  })

  test('joining a durable outer transaction keeps its level', async () => {
    const inner = await store.tx(async () => store.tx(async (db) => level(db), { durable: false }))
    expect(inner).toBe(2)
  })
})

const pgRun = pgReachableSync()
;(pgRun ? describe : describe.skip)('store.tx durable: false [pg]', () => {
  let store: Store
  let drop: () => Promise<void>
  afterAll(async () => {
    await store?.close()
    await drop?.()
  })
  const level = async (db: Parameters<Parameters<Store['tx']>[0]>[0]) => String((await store.rows<{ synchronous_commit: string }>(sql`SHOW synchronous_commit`, db))[0].synchronous_commit)

  test('runs with synchronous_commit off and commits; the next transaction is back on', async () => {
    const fresh = await freshPgDatabase()
    drop = fresh.drop
    store = openStore(fresh.url)
    await migrate(store)
    const inside = await store.tx(async (db) => { await insert(store, db, 'lazy-1'); return level(db) }, { durable: false })
    expect(inside).toBe('off')
    expect((await store.rows(sql`SELECT 1 AS x FROM projects WHERE id = 'lazy-1'`)).length).toBe(1)
    expect(await store.tx((db) => level(db))).toBe('on')
  }, 60_000)
})
