import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openStore } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'

// SQLite only: the reader's snapshot per event-loop turn is a property of the SQLite store.
const dir = mkdtempSync(join(tmpdir(), 'mailctl-snapshot-'))
const url = `sqlite://${join(dir, 'mailctl.db')}`
const store = openStore(url)
const other = openStore(url) // another connection to the same file: a writer thread, the CLI
afterAll(async () => {
  await store.close()
  await other.close()
  rmSync(dir, { recursive: true, force: true })
})

const nextTurn = () => new Promise((r) => setImmediate(r))
const count = async () => Number((await store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM projects`))[0].n)
const insert = (s: typeof store, id: string) => s.exec(sql`INSERT INTO projects (id, name, public_key, secret_key_hash, disabled, tracking_enabled, settings, created_at, updated_at)
  VALUES (${id}, 'p', ${`pk_${id}`}, ${`h_${id}`}, 0, 1, '{}', 0, 0)`)

test('reads see this process\'s own commits at once, within the same turn', async () => {
  await migrate(store)
  await nextTurn()
  const before = await count()
  await insert(store, 'own-1')
  expect(await count()).toBe(before + 1)
})

test('another connection\'s commit is seen from the next turn on, or at once after refresh()', async () => {
  await nextTurn()
  const before = await count()
  await insert(other, 'other-1')
  // Same turn, snapshot still open: the other connection's row is not visible yet.
  expect(await count()).toBe(before)
  store.refresh()
  expect(await count()).toBe(before + 1)
  await insert(other, 'other-2')
  await nextTurn()
  expect(await count()).toBe(before + 2)
})

test('dataVersion() moves after another connection\'s commit (next turn) and after our own (at once)', async () => {
  await nextTurn()
  const v0 = store.dataVersion()
  await insert(other, 'other-3')
  await nextTurn()
  const v1 = store.dataVersion()
  expect(v1).not.toBe(v0)
  await insert(store, 'own-2')
  // Our own commit is visible without waiting for a turn. (data_version counts other connections' commits;
  // our writer is a separate connection from our reader, so it moves too.)
  expect(store.dataVersion()).not.toBe(v1)
})

test('a write waiting for another connection\'s write lock does not block the event loop, and commits after it', async () => {
  let ticks = 0
  const timer = setInterval(() => ticks++, 5)
  try {
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    // The other connection takes the write lock and keeps it for about 100 ms.
    const holder = other.tx(async () => {
      await insert(other, 'lock-holder')
      await held
    })
    await Bun.sleep(5)
    const t0 = Date.now()
    const waiting = insert(store, 'lock-waiter')
    setTimeout(release, 100)
    await waiting
    await holder
    // The waiter committed only after the holder released the lock; meanwhile timers kept firing.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90)
    expect(ticks).toBeGreaterThanOrEqual(10)
    await nextTurn()
    const ids = (await store.rows<{ id: string }>(sql`SELECT id FROM projects WHERE id IN ('lock-holder', 'lock-waiter') ORDER BY id`)).map((r) => r.id)
    expect(ids).toEqual(['lock-holder', 'lock-waiter'])
  } finally {
    clearInterval(timer)
  }
})
