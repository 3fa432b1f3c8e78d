import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'

/**
 * GET/POST /suppressions, GET/DELETE /suppressions/:email. Every test makes its own projects and entries, so
 * each runs alone (`bun test -t`) as well as in the suite.
 */
forEachStore('suppressions API', (env) => {
  const req = (method: string, path: string, key: string | null, body?: unknown) => env.request(method, path, { key, body })

  /** A project with `n` manual entries user0..user{n-1}@example.org, and another project. */
  async function projects(env: TestEnv, n = 1): Promise<{ p: NewProject; q: NewProject }> {
    const p = await env.project()
    const q = await env.project()
    for (let i = 0; i < n; i++) expect((await req('POST', '/suppressions', p.secretKey, { email: `user${i}@example.org` })).status).toBe(200)
    return { p, q }
  }

  async function expectUnauthorized(method: string, path: string, p: NewProject, body?: unknown) {
    const none = await req(method, path, null, body)
    expect(none.status).toBe(401)
    expect(none.body.error.code).toBe('UNAUTHORIZED')
    const pub = await req(method, path, p.publicKey, body)
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    const wrong = await req(method, path, 'sk_not_a_real_key', body)
    expect(wrong.status).toBe(401)
    expect(wrong.body.error.code).toBe('INVALID_API_KEY')
  }

  test('POST: adds a manual entry (trimmed, lower-cased); a second POST returns the first entry unchanged', async () => {
    const { p } = await projects(env, 0)
    const first = await req('POST', '/suppressions', p.secretKey, { email: ' User@Example.ORG ', note: 'asked by phone' })
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ email: 'user@example.org', reason: 'manual', emailId: null, detail: 'asked by phone', createdAt: expect.any(String) })
    const again = await req('POST', '/suppressions', p.secretKey, { email: 'user@example.org', note: 'second time' })
    expect(again.body).toEqual(first.body)
  })

  test('POST: a bad or missing email and a too long note are 422 VALIDATION_ERROR; no key, a public key or an unknown key 401', async () => {
    const { p } = await projects(env, 0)
    for (const body of [{ email: 'not-an-email' }, {}, { email: 7 }, { email: 'a@example.org', note: 'x'.repeat(1001) }]) {
      const bad = await req('POST', '/suppressions', p.secretKey, body)
      expect(bad.status).toBe(422)
      expect(bad.body.error.code).toBe('VALIDATION_ERROR')
    }
    await expectUnauthorized('POST', '/suppressions', p, { email: 'x@example.org' })
    expect((await req('GET', '/suppressions', p.secretKey)).body.total).toBe(0)
  })

  test('GET list: newest first in cursor pages, search and reason filters', async () => {
    const { p } = await projects(env, 5)
    const page1 = await req('GET', '/suppressions?limit=2', p.secretKey)
    expect(page1.status).toBe(200)
    expect(page1.body).toMatchObject({ hasMore: true, total: 5 })
    expect(page1.body.data).toHaveLength(2)
    const page2 = await req('GET', `/suppressions?limit=2&cursor=${page1.body.cursor}`, p.secretKey)
    const page3 = await req('GET', `/suppressions?limit=2&cursor=${page2.body.cursor}`, p.secretKey)
    expect(page2.body.total).toBe(0)
    expect(page3.body).toMatchObject({ hasMore: false, cursor: null })
    const all = [...page1.body.data, ...page2.body.data, ...page3.body.data].map((s: { email: string }) => s.email)
    expect(all.sort()).toEqual(['user0@example.org', 'user1@example.org', 'user2@example.org', 'user3@example.org', 'user4@example.org'])
    expect((await req('GET', '/suppressions?search=ER4', p.secretKey)).body.data.map((s: { email: string }) => s.email)).toEqual(['user4@example.org'])
    expect((await req('GET', '/suppressions?reason=manual', p.secretKey)).body.total).toBe(5)
    expect((await req('GET', '/suppressions?reason=bounce', p.secretKey)).body).toMatchObject({ data: [], total: 0 })
  })

  test('GET list: a bad reason or cursor 400 BAD_REQUEST (the reason named); 401 without a secret key; another project sees nothing', async () => {
    const { p, q } = await projects(env, 2)
    const reason = await req('GET', '/suppressions?reason=nonsense', p.secretKey)
    expect(reason.status).toBe(400)
    expect(reason.body.error.code).toBe('BAD_REQUEST')
    expect(reason.body.error.errors[0].field).toBe('reason')
    const cursor = await req('GET', '/suppressions?cursor=nope', p.secretKey)
    expect(cursor.status).toBe(400)
    expect(cursor.body.error.code).toBe('BAD_REQUEST')
    await expectUnauthorized('GET', '/suppressions', p)
    expect((await req('GET', '/suppressions', q.secretKey)).body).toEqual({ data: [], cursor: null, hasMore: false, total: 0 })
  })

  test('GET /:email: the entry, whatever the case of the address; 404 NOT_FOUND when absent or another project\'s; 401 without a secret key', async () => {
    const { p, q } = await projects(env, 1)
    const one = await req('GET', '/suppressions/USER0@example.org', p.secretKey)
    expect(one.status).toBe(200)
    expect(one.body).toMatchObject({ email: 'user0@example.org', reason: 'manual', emailId: null, detail: null })
    const absent = await req('GET', '/suppressions/nobody@example.org', p.secretKey)
    expect(absent.status).toBe(404)
    expect(absent.body.error.code).toBe('NOT_FOUND')
    const other = await req('GET', '/suppressions/user0@example.org', q.secretKey)
    expect(other.status).toBe(404)
    expect(other.body.error.code).toBe('NOT_FOUND')
    await expectUnauthorized('GET', '/suppressions/user0@example.org', p)
  })

  test('DELETE /:email: 204, then 404; another project cannot remove the entry; 401 without a secret key', async () => {
    const { p, q } = await projects(env, 2)
    const other = await req('DELETE', '/suppressions/user0@example.org', q.secretKey)
    expect(other.status).toBe(404)
    expect(other.body.error.code).toBe('NOT_FOUND')
    await expectUnauthorized('DELETE', '/suppressions/user0@example.org', p)
    expect((await req('GET', '/suppressions/user0@example.org', p.secretKey)).status).toBe(200)
    const del = await req('DELETE', '/suppressions/User0@Example.org', p.secretKey)
    expect(del.status).toBe(204)
    expect(del.text).toBe('')
    const again = await req('DELETE', '/suppressions/user0@example.org', p.secretKey)
    expect(again.status).toBe(404)
    expect(again.body.error.code).toBe('NOT_FOUND')
    expect((await req('GET', '/suppressions/user0@example.org', p.secretKey)).status).toBe(404)
    expect((await req('GET', '/suppressions', p.secretKey)).body.data.map((s: { email: string }) => s.email)).toEqual(['user1@example.org'])
  })
})
