import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sqliteConnection } from '../../src/db/client'
import { TestEnv } from '../helpers/env'
import { describePrivatePg } from '../helpers/private-pg'
import { until } from '../helpers/worker'

/**
 * Storage failures answer 503 with Retry-After and a code naming the cause, in the error envelope, and
 * /ready names the failing check within its deadline: a full disk on SQLite (the database capped at its
 * size with `PRAGMA max_page_count`, so a write needing a new page fails with SQLITE_FULL as on a full
 * volume), and PostgreSQL down (a private server, stopped as a crash would).
 */

const rnd = () => Math.random().toString(36).slice(2, 8)

describe('storage full [sqlite]', () => {
  const env = new TestEnv('sqlite')
  beforeAll(() => env.start(), 60_000)
  afterAll(() => env.stop(), 60_000)

  /** Caps the database at its current size (null: lifts the cap). */
  const cap = (on: boolean) => env.store.tx(async (db) => {
    const c = sqliteConnection(db)
    const { page_count } = c.query('PRAGMA page_count').get() as { page_count: number }
    c.run(`PRAGMA max_page_count = ${on ? page_count : 1_073_741_823}`)
  })

  test('writes answer 503 STORAGE_FULL with Retry-After; /ready says storage is failing; both recover when space is back', async () => {
    const p = await env.project()
    const body = () => ({ email: `full.${rnd()}@example.com`, data: { note: 'x'.repeat(500) } })
    expect((await env.request('GET', '/ready')).status).toBe(200)
    await cap(true)
    let res = await env.request('POST', '/contacts', { key: p.secretKey, body: body() })
    for (let i = 0; i < 500 && res.status < 300; i++) res = await env.request('POST', '/contacts', { key: p.secretKey, body: body() })
    try {
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('30')
      expect(res.body).toMatchObject({ success: false, error: { code: 'STORAGE_FULL', statusCode: 503 } })
      expect(typeof res.body.error.requestId).toBe('string')
      const ready = await env.request('GET', '/ready')
      expect(ready.status).toBe(503)
      expect(ready.body).toMatchObject({ status: 'not_ready', checks: { database: true, migrations: true, storage: false } })
      expect(ready.body.problems.storage).toContain('disk full')
    } finally {
      await cap(false)
    }
    expect((await env.request('GET', '/ready')).body).toEqual({ status: 'ready', checks: { database: true, migrations: true, storage: true } })
    expect((await env.request('POST', '/contacts', { key: p.secretKey, body: body() })).status).toBe(201)
  })
})

describePrivatePg('database down [pg]', {}, (s) => {
  test('with PostgreSQL down, requests answer 503 DATABASE_UNAVAILABLE and /ready names the database within a second; both recover', async () => {
    const p = await s.env.project()
    const body = () => ({ email: `down.${rnd()}@example.com` })
    expect((await s.env.request('POST', '/contacts', { key: p.secretKey, body: body() })).status).toBe(201)
    await s.pg.stop()
    try {
      const res = await s.env.request('POST', '/contacts', { key: p.secretKey, body: body() })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('5')
      expect(res.body).toMatchObject({ success: false, error: { code: 'DATABASE_UNAVAILABLE', statusCode: 503 } })
      const ready = await s.env.request('GET', '/ready')
      expect(ready.status).toBe(503)
      expect(ready.body).toMatchObject({ status: 'not_ready', checks: { database: false, migrations: false, storage: false } })
      expect(ready.body.problems.database).toContain('database unavailable')
    } finally {
      await s.pg.start()
    }
    await until(async () => (await s.env.request('GET', '/ready')).status === 200, 20_000, '/ready after PostgreSQL came back')
    expect((await s.env.request('POST', '/contacts', { key: p.secretKey, body: body() })).status).toBe(201)
  }, 60_000)

  test('a database that does not answer: /ready answers 503 at its deadline instead of hanging', async () => {
    await s.pg.freeze(true)
    try {
      const ready = await s.env.request('GET', '/ready')
      expect(ready.status).toBe(503)
      expect(ready.body).toMatchObject({ status: 'not_ready', checks: { database: false, migrations: false, storage: false } })
      expect(ready.body.problems.database).toMatch(/no answer within|did not answer within|database unavailable/)
    } finally {
      await s.pg.freeze(false)
    }
    await until(async () => (await s.env.request('GET', '/ready')).status === 200, 20_000, '/ready after PostgreSQL answered again')
  }, 60_000)

  test('a database that does not answer: every request answers 503 DATABASE_UNAVAILABLE (none waits for it); all work again once it answers', async () => {
    const p = await s.env.project()
    const body = () => ({ email: `frozen.${rnd()}@example.com` })
    expect((await s.env.request('POST', '/contacts', { key: p.secretKey, body: body() })).status).toBe(201)
    await s.pg.freeze(true)
    const hung = Symbol('hung')
    try {
      // Requests arriving over a while: the first wait for the deadline, the later are refused at once.
      const answers: Array<Promise<unknown>> = []
      for (let i = 0; i < 20; i++) {
        answers.push(Promise.race([s.env.request('POST', '/contacts', { key: p.secretKey, body: body() }), Bun.sleep(20_000).then(() => hung)]))
        await Bun.sleep(100)
      }
      const got = await Promise.all(answers)
      expect(got.filter((r) => r === hung)).toHaveLength(0)
      for (const r of got as Array<{ status: number; body: { error: { code: string } }; headers: Headers }>) {
        expect(r.status).toBe(503)
        expect(r.body.error.code).toBe('DATABASE_UNAVAILABLE')
        expect(r.headers.get('retry-after')).toBe('5')
      }
    } finally {
      await s.pg.freeze(false)
    }
    await until(async () => (await s.env.request('POST', '/contacts', { key: p.secretKey, body: body() })).status === 201, 20_000, 'a write after PostgreSQL answered again')
    expect((await s.env.request('GET', '/ready')).status).toBe(200)
  }, 90_000)
})
