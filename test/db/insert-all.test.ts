import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { asc, eq } from 'drizzle-orm'
import type { Store } from '../../src/db/client'
import { insertAll } from '../../src/db/insert-all'
import { migratedStore, pgReachableSync } from '../helpers/env'

/**
 * insertAll (src/db/insert-all.ts) writes rows exactly as drizzle's insert would, on both stores: the same
 * rows come back from a drizzle select, whatever the values (timestamps to the millisecond, nulls, nested
 * JSON with quotes, backslashes and characters outside the BMP), and a batch larger than one statement's
 * chunk is written whole. On PostgreSQL a failing row fails the statement (nothing of the chunk is written).
 */
const AT = new Date('2026-03-04T05:06:07.089Z')

for (const kind of ['sqlite', 'pg'] as const) {
  describe.skipIf(kind === 'pg' && !pgReachableSync())(`insertAll [${kind}]`, () => {
    let store: Store
    let cleanup: () => Promise<void>
    beforeAll(async () => {
      ({ store, cleanup } = await migratedStore(kind, 'insert-all'))
    }, 60_000)
    afterAll(() => cleanup())

    const row = (id: string, name: string, i: number) => ({
      id, projectId: null, name, uniqueKey: i % 2 ? null : `k-${i}`,
      payload: { text: `a "quoted" \\ back\\slash ${'😀'} ü ${i}`, nested: { list: [1, 'two', null, { three: true }] }, n: i, f: 1.5 },
      status: 'queued', attempts: i % 3, maxAttempts: 5, runAt: new Date(AT.getTime() + i), lockedUntil: i % 2 ? new Date(AT.getTime() + 1000) : null,
      lockedBy: i % 2 ? 'node-1' : null, lastError: null, total: 0, processed: 0, result: i % 2 ? null : { ok: i },
      createdAt: AT, updatedAt: AT, finishedAt: null,
    })

    test('the rows come back as written, as drizzle would write them', async () => {
      const mine = Array.from({ length: 5 }, (_, i) => row(`ia-${i}`, 'insert-all', i))
      const theirs = Array.from({ length: 5 }, (_, i) => row(`dz-${i}`, 'drizzle', i))
      const j = store.t.jobs
      await store.tx((db) => insertAll(store, db, j, mine))
      await store.tx(async (db) => { await db.insert(j).values(theirs) })
      const read = async (name: string) => (await store.db.select().from(j).where(eq(j.name, name)).orderBy(asc(j.id))).map((r) => ({ ...r, id: r.id.slice(3), name: '' }))
      const a = await read('insert-all')
      expect(a).toHaveLength(5)
      expect(a).toEqual(await read('drizzle'))
      expect(a[1].payload).toEqual(mine[1].payload)
      expect(a[1].lockedUntil?.getTime()).toBe(AT.getTime() + 1000)
      expect(a[0].runAt.getTime()).toBe(AT.getTime())
    })

    test('a batch above one statement\'s chunk is written whole; an empty one writes nothing', async () => {
      const many = Array.from({ length: 2_345 }, (_, i) => row(`big-${String(i).padStart(5, '0')}`, 'big', i))
      const j = store.t.jobs
      await store.tx(async (db) => { await insertAll(store, db, j, many); await insertAll(store, db, j, []) })
      const ids = (await store.db.select({ id: j.id }).from(j).where(eq(j.name, 'big')).orderBy(asc(j.id))).map((r) => r.id)
      expect(ids).toEqual(many.map((r) => r.id))
    })

    test('a row that breaks a constraint fails the write and the transaction leaves nothing', async () => {
      const j = store.t.jobs
      const rows = [row('dup-1', 'dup', 1), row('dup-1', 'dup', 2)]
      await expect(store.tx((db) => insertAll(store, db, j, rows))).rejects.toThrow()
      expect(await store.db.select({ id: j.id }).from(j).where(eq(j.name, 'dup'))).toEqual([])
    })
  })
}
