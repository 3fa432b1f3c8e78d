import { beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'

/** GET/POST /suppressions, GET/DELETE /suppressions/:email. */
forEachStore('suppressions API', (env) => {
  let p: NewProject
  let q: NewProject
  beforeAll(async () => {
    p = await env.project()
    q = await env.project()
  })
  const req = (method: string, path: string, body?: unknown, key: string | null = p.secretKey) => env.request(method, path, { key, body })

  test('add, get, list with filters and cursor pages, remove', async () => {
    for (let i = 0; i < 5; i++) expect((await req('POST', '/suppressions', { email: ` User${i}@Example.ORG ` })).status).toBe(200)
    const again = await req('POST', '/suppressions', { email: 'user0@example.org', note: 'second time' })
    expect(again.body).toMatchObject({ email: 'user0@example.org', reason: 'manual', detail: null })
    const one = await req('GET', '/suppressions/USER3@example.org')
    expect(one.status).toBe(200)
    expect(one.body).toMatchObject({ email: 'user3@example.org', reason: 'manual', emailId: null })
    const page1 = await req('GET', '/suppressions?limit=2')
    expect(page1.body).toMatchObject({ hasMore: true, total: 5 })
    expect(page1.body.data).toHaveLength(2)
    const page2 = await req('GET', `/suppressions?limit=2&cursor=${page1.body.cursor}`)
    const page3 = await req('GET', `/suppressions?limit=2&cursor=${page2.body.cursor}`)
    expect(page2.body.total).toBe(0)
    expect(page3.body).toMatchObject({ hasMore: false, cursor: null })
    const all = [...page1.body.data, ...page2.body.data, ...page3.body.data].map((s: { email: string }) => s.email)
    expect(new Set(all).size).toBe(5)
    expect((await req('GET', '/suppressions?search=ER4')).body.data.map((s: { email: string }) => s.email)).toEqual(['user4@example.org'])
    expect((await req('GET', '/suppressions?reason=bounce')).body).toMatchObject({ data: [], total: 0 })
    expect((await req('GET', '/suppressions?reason=nonsense')).status).toBe(422)
    expect((await req('GET', '/suppressions?cursor=nope')).status).toBe(400)
    const del = await req('DELETE', '/suppressions/user4@example.org')
    expect(del.status).toBe(204)
    expect((await req('DELETE', '/suppressions/user4@example.org')).status).toBe(404)
    expect((await req('GET', '/suppressions/user4@example.org')).status).toBe(404)
  })

  test('errors and security: bad email 422, no key 401, public key 401 INVALID_API_KEY, another project sees nothing', async () => {
    const bad = await req('POST', '/suppressions', { email: 'not-an-email' })
    expect(bad.status).toBe(422)
    expect(bad.body.error.code).toBe('VALIDATION_ERROR')
    expect((await req('GET', '/suppressions', undefined, null)).status).toBe(401)
    const pub = await req('GET', '/suppressions', undefined, p.publicKey)
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
    expect((await req('POST', '/suppressions', { email: 'x@example.org' }, p.publicKey)).status).toBe(401)
    expect((await req('DELETE', '/suppressions/user0@example.org', undefined, p.publicKey)).status).toBe(401)
    // q cannot see or remove p's entries.
    expect((await req('GET', '/suppressions/user0@example.org', undefined, q.secretKey)).status).toBe(404)
    expect((await req('DELETE', '/suppressions/user0@example.org', undefined, q.secretKey)).status).toBe(404)
    expect((await req('GET', '/suppressions', undefined, q.secretKey)).body).toMatchObject({ data: [], total: 0 })
    expect((await req('GET', '/suppressions/user0@example.org')).status).toBe(200)
  })
})
