import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { asc, inArray, sql } from 'drizzle-orm'
import type { Store } from '../../src/db/client'
import {
  asStoredJson, boolLiteral, boolParam, deleteCounted, epochMs, inJsonList, isDialect, jsonArrayRows, jsonElement, jsonText,
  jsonValue, laterPlusMs, locked, moment, momentParam, noIndex, numberParam, rowsOfIds, skipLocked, textContains, textParam, tryTxLock,
  utcDay, utcHourMs, writerSlot,
} from '../../src/db/dialect'
import { statementRows } from '../../src/db/statement'
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

    test('rowsOfIds reads the rows of an id list, and the caller goes on with AND', async () => {
      const got = async (list: string[]) => (await store.rows<{ id: string }>(sql`SELECT jobs.id FROM ${rowsOfIds(store, 'jobs', list)} AND jobs.status = ${'queued'} ORDER BY jobs.id`)).map((r) => r.id)
      expect(await got(['c', 'b', 'a', 'zz'])).toEqual(['a', 'b'])
      expect(await got([])).toEqual([])
      expect(() => rowsOfIds(store, 'jobs; DROP', ['a'])).toThrow('not a plain table name')
    })

    test('boolLiteral is true and false on both stores', async () => {
      const [r] = await store.rows<{ t: unknown; f: unknown }>(sql.raw(`SELECT ${boolLiteral(store, true)} AS t, ${boolLiteral(store, false)} AS f`))
      expect(Boolean(r.t)).toBe(true)
      expect(Boolean(r.f)).toBe(false)
    })

    test('textParam, numberParam and boolParam bind typed values; textContains finds a substring', async () => {
      expect(await ids(sql`status = ${textParam(store, 'queued')}`)).toEqual(['a', 'b'])
      const [r] = await store.rows<{ n: number | string; t: number; f: number; c: number }>(sql`
        SELECT ${numberParam(store, 2.5)} + 1 AS n,
          CASE WHEN ${boolParam(store, true)} THEN 1 ELSE 0 END AS t, CASE WHEN ${boolParam(store, false)} THEN 1 ELSE 0 END AS f,
          CASE WHEN ${textContains(store, textParam(store, 'Queued'), textParam(store, 'ueu'))} THEN 1 ELSE 0 END AS c`)
      expect({ n: Number(r.n), t: Number(r.t), f: Number(r.f), c: Number(r.c) }).toEqual({ n: 3.5, t: 1, f: 0, c: 1 })
      expect(await ids(textContains(store, sql.raw('status'), textParam(store, 'ueu')))).toEqual(['a', 'b'])
      expect(await ids(textContains(store, sql.raw('status'), textParam(store, 'Q')))).toEqual([])
    })

    test('jsonArrayRows and jsonElement read a JSON array parameter as rows; jsonValue stores JSON text', async () => {
      const rows = await store.rows<{ a: string; b: string }>(sql`
        SELECT ${jsonElement(store, 'r', 0)} AS a, ${jsonElement(store, 'r', 1)} AS b FROM ${jsonArrayRows(store, '[["x","y"],["z","w"]]', 'r')}`)
      expect(rows).toEqual([{ a: 'x', b: 'y' }, { a: 'z', b: 'w' }])
      const [v] = await store.rows<{ v: string }>(sql`SELECT ${jsonText(store, sql`(${jsonValue(store, '{"k":"v"}')})`, 'k')} AS v`)
      expect(v.v).toBe('v')
      expect(() => jsonArrayRows(store, '[]', 'r; DROP')).toThrow('not a plain alias')
    })

    test('writerSlot is one of the counter rows a transaction may add to', async () => {
      const [r] = await store.tx((db) => store.rows<{ s: number | string }>(sql`SELECT ${writerSlot(store)} AS s`, db))
      expect(Number(r.s)).toBeGreaterThanOrEqual(0)
      expect(Number(r.s)).toBeLessThan(8)
    })

    test('statementRows runs one text on both stores: placeholders reused and out of order, list parameters, in the transaction', async () => {
      const seen = await store.tx(async (db) => {
        const ins = await statementRows<{ id: string }>(store, db, `INSERT INTO jobs (id, project_id, name, payload, status, attempts, max_attempts, run_at, total, processed, created_at, updated_at)
          VALUES ($1, NULL, $2, $3, 'queued', 0, 1, $4, 0, 0, $4, $4) RETURNING id`, 'st1', 'dialect-st', '{"k":1}', momentParam(store, AT))
        const read = await statementRows<{ id: string; k: string }>(store, db, 'SELECT id, status AS k FROM jobs WHERE name = $2 AND id = $1 AND run_at = $3', 'st1', 'dialect-st', momentParam(store, AT))
        const none = await statementRows(store, db, 'DELETE FROM jobs WHERE name = $1 AND id = $1', 'dialect-st')
        const listed = await statementRows<{ id: string }>(store, db, "SELECT id FROM jobs WHERE name = 'dialect' AND id IN $2[] AND status = $1 ORDER BY id", 'queued', ['c', 'b', 'a', 'zz'])
        const emptyList = await statementRows(store, db, 'SELECT id FROM jobs WHERE id IN $1[]', [])
        return { ins, read, none, listed: listed.map((r) => r.id), emptyList }
      })
      expect(seen).toEqual({ ins: [{ id: 'st1' }], read: [{ id: 'st1', k: 'queued' }], none: [], listed: ['a', 'b'], emptyList: [] })
      const after = await store.tx((db) => statementRows<{ n: number | string }>(store, db, 'SELECT count(*) AS n FROM jobs WHERE name = $1', 'dialect-st'))
      expect(Number(after[0]?.n)).toBe(1)
    })

    test('statementRows refuses texts its rewriting would get wrong: a placeholder in a string or a comment, NOT IN a list', async () => {
      const run = (text: string, ...params: Array<string | string[]>) => store.tx((db) => statementRows(store, db, text, ...params)).then(() => 'ran', (e: Error) => e.message)
      expect(await run("SELECT id FROM jobs WHERE name = '$1' AND id = $1", 'x')).toContain('inside a quoted string or a comment')
      expect(await run('SELECT id FROM jobs WHERE id = $1 -- not $2\n', 'x')).toContain('inside a quoted string or a comment')
      expect(await run('SELECT id FROM jobs WHERE id NOT IN $1[]', ['a'])).toContain('NOT IN $n[] is not supported')
      expect(await run("SELECT id FROM jobs WHERE NOT (id IN $1[]) AND name <> 'it''s $'", ['a'])).toBe('ran')
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

test('isDialect accepts the two store kinds only', () => {
  expect(['sqlite', 'pg', 'postgres', '', null, 1].map(isDialect)).toEqual([true, true, false, false, false, false])
})

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
