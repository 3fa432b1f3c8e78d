import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { asc, inArray, sql } from 'drizzle-orm'
import type { Store } from '../../src/db/client'
import {
  asStoredJson, boolLiteral, deleteCounted, epochMs, inJsonList, jsonText, laterPlusMs, locked, moment, momentParam,
  noIndex, skipLocked, tryTxLock, utcDay, utcHourMs,
} from '../../src/db/dialect'
import { migratedStore, pgReachableSync } from '../helpers/env'

/**
 * Parity of the SQL fragments the stores spell differently (src/db/dialect.ts): the same assertions on
 * SQLite and on PostgreSQL, over rows of a real table (jobs) in a migrated store.
 */
const AT = new Date('2026-03-04T05:06:07.089Z')

for (const kind of ['sqlite', 'pg'] as const) {
  describe.skipIf(kind === 'pg' && !pgReachableSync())(`dialect fragments [${kind}]`, () => {
    let store: Store
    let cleanup: () => Promise<void>
    beforeAll(async () => {
      ;({ store, cleanup } = await migratedStore(kind, 'dialect'))
      const j = store.t.jobs
      const row = (id: string, ms: number, payload: Record<string, unknown>, status: string) => ({
        id, projectId: null, name: 'dialect', payload, status, attempts: 0, maxAttempts: 1, runAt: new Date(ms),
        total: 0, processed: 0, createdAt: new Date(ms), updatedAt: new Date(ms),
      })
      await store.tx((db) => db.insert(j).values([
        row('a', AT.getTime(), { link: 'https://a.test/x', n: 1, flag: true }, 'queued'),
        row('b', AT.getTime() + 3_600_000, { bb: 2, a: 1, ccc: 3 }, 'queued'),
        row('c', AT.getTime() + 86_400_000, {}, 'done'),
      ]))
    }, 60_000)
    afterAll(() => cleanup())

    const ids = async (where: ReturnType<typeof sql>) =>
      (await store.rows<{ id: string }>(sql`SELECT id FROM jobs WHERE name = 'dialect' AND ${where} ORDER BY id`)).map((r) => r.id)

    test('moment and momentParam compare with timestamp columns', async () => {
      expect(await ids(sql`run_at < ${moment(store, AT.getTime() + 1)}`)).toEqual(['a'])
      expect(await ids(sql`run_at <= ${moment(store, new Date(AT.getTime() + 3_600_000))}`)).toEqual(['a', 'b'])
      expect(await ids(sql`(run_at, id) < (${momentParam(store, AT.getTime() + 3_600_000)}, ${'b'})`)).toEqual(['a'])
      expect(await ids(sql`(run_at, id) < (${momentParam(store, new Date(AT.getTime() + 3_600_000))}, ${'c'})`)).toEqual(['a', 'b'])
    })

    test('epochMs, utcHourMs and utcDay read timestamps', async () => {
      const [r] = await store.rows<{ ms: number | string; hour: number | string; day: string }>(sql`
        SELECT ${epochMs(store, sql.raw('run_at'))} AS ms, ${utcHourMs(store, sql.raw('run_at'))} AS hour, ${utcDay(store, sql.raw('run_at'))} AS day
        FROM jobs WHERE id = 'a'`)
      expect(Number(r.ms)).toBe(AT.getTime())
      expect(Number(r.hour)).toBe(Date.UTC(2026, 2, 4, 5))
      expect(r.day).toBe('2026-03-04')
    })

    test('laterPlusMs takes the later of the column and the moment, plus the span', async () => {
      const later = new Date(AT.getTime() + 10_000)
      const [r] = await store.rows<{ v: number | string; w: number | string }>(sql`
        SELECT ${epochMs(store, sql`(${laterPlusMs(store, sql.raw('run_at'), later, 250)})`)} AS v, ${epochMs(store, sql`(${laterPlusMs(store, sql.raw('run_at'), new Date(0), 250)})`)} AS w
        FROM jobs WHERE id = 'a'`)
      expect(Number(r.v)).toBe(later.getTime() + 250)
      expect(Number(r.w)).toBe(AT.getTime() + 250)
    })

    test('jsonText reads a top-level key (null when absent) and refuses a key that is not plain', async () => {
      const j = store.t.jobs
      const rows = await store.db.select({ id: j.id, link: jsonText(store, j.payload, 'link') }).from(j).where(inArray(j.id, ['a', 'c'])).orderBy(asc(j.id))
      expect(rows).toEqual([{ id: 'a', link: 'https://a.test/x' }, { id: 'c', link: null }])
      expect(await ids(sql`${jsonText(store, sql.raw('payload'), 'link')} = ${'https://a.test/x'}`)).toEqual(['a'])
      expect(() => jsonText(store, j.payload, "x') OR 1=1 --")).toThrow('not a plain key')
    })

    test('inJsonList and noIndex select the same rows on both stores', async () => {
      expect(await ids(inJsonList(store, sql.raw('id'), ['c', 'a', 'zz']))).toEqual(['a', 'c'])
      expect(await ids(inJsonList(store, sql.raw('id'), []))).toEqual([])
      expect(await ids(sql`${noIndex(store, sql.raw('status'))} = ${'queued'}`)).toEqual(['a', 'b'])
      expect(await ids(sql`${noIndex(store, sql.raw('status'), false)} = ${'done'}`)).toEqual(['c'])
    })

    test('boolLiteral is true and false on both stores', async () => {
      const [r] = await store.rows<{ t: unknown; f: unknown }>(sql.raw(`SELECT ${boolLiteral(store, true)} AS t, ${boolLiteral(store, false)} AS f`))
      expect(Boolean(r.t)).toBe(true)
      expect(Boolean(r.f)).toBe(false)
    })

    test('asStoredJson orders keys as the store gives a stored object back', async () => {
      const j = store.t.jobs
      const [row] = await store.db.select({ payload: j.payload }).from(j).where(inArray(j.id, ['b']))
      const built = asStoredJson(store, { bb: 2, a: 1, ccc: 3 })
      expect(Object.keys(built)).toEqual(Object.keys(row.payload))
      expect(built).toEqual({ a: 1, bb: 2, ccc: 3 })
    })

    test('locked and skipLocked read rows to write in a transaction; tryTxLock takes a free lock', async () => {
      const j = store.t.jobs
      const got = await store.tx(async (db) => {
        const a = await locked(store, db.select({ id: j.id }).from(j).where(inArray(j.id, ['a'])))
        const b = await skipLocked(store, db.select({ id: j.id }).from(j).where(inArray(j.id, ['a', 'b'])).orderBy(asc(j.id)))
        return { a: a.map((r) => r.id), b: b.map((r) => r.id), lock: await tryTxLock(store, db, 'dialect-test') }
      })
      expect(got).toEqual({ a: ['a'], b: ['a', 'b'], lock: true })
    })

    test('deleteCounted answers how many rows a DELETE removed', async () => {
      const j = store.t.jobs
      await store.tx((db) => db.insert(j).values([1, 2, 3].map((k) => ({
        id: `del${k}`, projectId: null, name: 'dialect-del', payload: {}, status: 'queued', attempts: 0, maxAttempts: 1,
        runAt: AT, total: 0, processed: 0, createdAt: AT, updatedAt: AT,
      }))))
      expect(await store.tx((db) => deleteCounted(store, db, sql`DELETE FROM jobs WHERE name = 'dialect-del' AND id <> 'del2'`))).toBe(2)
      expect(await store.tx((db) => deleteCounted(store, db, sql`DELETE FROM jobs WHERE name = 'nothing'`))).toBe(0)
    })
  })
}

/** What only PostgreSQL can show: other transactions skip locked rows and do not get a held lock. */
describe.skipIf(!pgReachableSync())('dialect locks across transactions [pg]', () => {
  let store: Store
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    ;({ store, cleanup } = await migratedStore('pg', 'dialect-locks'))
    await store.tx((db) => db.insert(store.t.jobs).values(['x', 'y'].map((id) => ({
      id, projectId: null, name: 'dialect', payload: {}, status: 'queued', attempts: 0, maxAttempts: 1,
      runAt: AT, total: 0, processed: 0, createdAt: AT, updatedAt: AT,
    }))))
  }, 60_000)
  afterAll(() => cleanup())

  test('a row locked by one transaction is skipped by another; its advisory lock is refused there', async () => {
    const j = store.t.jobs
    let release: () => void = () => {}
    const held = new Promise<void>((r) => { release = r })
    let ready: () => void = () => {}
    const lockedNow = new Promise<void>((r) => { ready = r })
    const first = store.tx(async (db) => {
      await locked(store, db.select({ id: j.id }).from(j).where(inArray(j.id, ['x'])))
      expect(await tryTxLock(store, db, 'dialect-shared')).toBe(true)
      ready()
      await held
    })
    await lockedNow
    const other = await store.tx(async (db) => ({
      rows: (await skipLocked(store, db.select({ id: j.id }).from(j).where(inArray(j.id, ['x', 'y'])))).map((r) => r.id),
      lock: await tryTxLock(store, db, 'dialect-shared'),
    }))
    release()
    await first
    expect(other).toEqual({ rows: ['y'], lock: false })
  })
})
