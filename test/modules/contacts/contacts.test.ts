import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import type { EventRow } from '../../../src/modules/events/stream'
import { registerEventConsumer } from '../../../src/modules/events/consumers'
import { settleEvents } from '../../helpers/events'

async function eventsOf(env: TestEnv, projectId: string): Promise<string[]> {
  const rows = await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${projectId} ORDER BY created_at, id`)
  return rows.map((r) => r.name)
}

forEachStore('contacts endpoints', (env) => {
  test('POST /contacts creates (201, isNew) then updates (200, isUpdate) by email', async () => {
    const p = await env.project()
    const a = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: '  Bob@Example.com ', data: { plan: 'pro' } } })
    expect(a.status).toBe(201)
    expect(a.body).toMatchObject({ email: 'bob@example.com', subscribed: true, data: { plan: 'pro' }, _meta: { isNew: true, isUpdate: false } })
    expect(typeof a.body.id).toBe('string')
    expect(new Date(a.body.createdAt).toISOString()).toBe(a.body.createdAt)
    const b = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'bob@example.com', subscribed: false, data: { seats: 3 } } })
    expect(b.status).toBe(200)
    expect(b.body).toMatchObject({ id: a.body.id, subscribed: false, data: { plan: 'pro', seats: 3 }, _meta: { isNew: false, isUpdate: true } })
    expect(await eventsOf(env, p.id)).toEqual(['contact.unsubscribed'])
  })

  test('POST /contacts: missing email is a flat 400 {error}; a bad email is 422; unknown fields are ignored', async () => {
    const p = await env.project()
    const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { data: { a: 1 } } })
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'Email is required' })
    const empty = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: '' } })
    expect(empty.status).toBe(400)
    expect(empty.body).toEqual({ error: 'Email is required' })
    const nobody = await env.request('POST', '/contacts', { key: p.secretKey })
    expect(nobody.status).toBe(400)
    expect(nobody.body).toEqual({ error: 'Email is required' })
    const bad = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'not-an-email' } })
    expect(bad.status).toBe(422)
    expect(bad.body.error.code).toBe('VALIDATION_ERROR')
    expect(bad.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' })
    const extra = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'x@example.com', type: 'html' } })
    expect(extra.status).toBe(201)
    const malformed = await env.request('POST', '/contacts', { key: p.secretKey, raw: '{"email":', headers: { 'content-type': 'application/json' } })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error.code).toBe('BAD_REQUEST')
  })

  test('security: no key 401, public key 401 INVALID_API_KEY, other project 404', async () => {
    const p = await env.project()
    const q = await env.project()
    const c = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'sec@example.com' } })).body
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/contacts'], ['POST', '/contacts', { email: 'a@b.co' }], ['GET', `/contacts/${c.id}`],
      ['PATCH', `/contacts/${c.id}`, { subscribed: false }], ['DELETE', `/contacts/${c.id}`],
      ['POST', '/contacts/lookup', { emails: ['a@b.co'] }], ['GET', '/contacts/fields'],
      ['GET', '/contacts/fields/plan/values'], ['GET', '/contacts/fields/plan/usage'], ['DELETE', '/contacts/fields/plan'],
      ['POST', '/contacts/bulk-subscribe', { contactIds: [c.id] }], ['POST', '/contacts/bulk-unsubscribe', { contactIds: [c.id] }],
      ['POST', '/contacts/bulk-delete', { contactIds: [c.id] }], ['GET', '/contacts/bulk/x'], ['GET', '/contacts/import/x'],
    ]
    for (const [method, path, body] of calls) {
      const none = await env.request(method, path, { body })
      expect([method, path, none.status]).toEqual([method, path, 401])
      expect(none.body.error.code).toBe('UNAUTHORIZED')
      const pub = await env.request(method, path, { key: p.publicKey, body })
      expect([method, path, pub.status, pub.body.error.code]).toEqual([method, path, 401, 'INVALID_API_KEY'])
      const bogus = await env.request(method, path, { key: `sk_${'0'.repeat(64)}`, body })
      expect([method, path, bogus.status]).toEqual([method, path, 401])
    }
    const form = () => { const f = new FormData(); f.append('file', new Blob(['email\na@b.co\n'], { type: 'text/csv' }), 'a.csv'); return f }
    expect((await env.request('POST', '/contacts/import', { raw: form() })).status).toBe(401)
    expect((await env.request('POST', '/contacts/import', { raw: form(), key: p.publicKey })).body.error.code).toBe('INVALID_API_KEY')
    for (const [method, path, body] of [['GET', `/contacts/${c.id}`], ['PATCH', `/contacts/${c.id}`, { subscribed: false }], ['DELETE', `/contacts/${c.id}`]] as const) {
      const other = await env.request(method, path, { key: q.secretKey, body })
      expect([method, other.status, other.body.error.code]).toEqual([method, 404, 'NOT_FOUND'])
    }
    const list = await env.request('GET', '/contacts', { key: q.secretKey })
    expect(list.body.data).toEqual([])
    const look = await env.request('POST', '/contacts/lookup', { key: q.secretKey, body: { emails: ['sec@example.com'] } })
    expect(look.body.results[0].exists).toBe(false)
    // still there for its own project
    expect((await env.request('GET', `/contacts/${c.id}`, { key: p.secretKey })).status).toBe(200)
  })

  test('GET /contacts/:id and DELETE /contacts/:id', async () => {
    const p = await env.project()
    const c = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'del@example.com' } })).body
    const g = await env.request('GET', `/contacts/${c.id}`, { key: p.secretKey })
    expect(g.status).toBe(200)
    expect(g.body).toEqual({ id: c.id, email: 'del@example.com', subscribed: true, data: {}, createdAt: c.createdAt, updatedAt: c.updatedAt })
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'del@example.com', event: 'x' } })
    const d = await env.request('DELETE', `/contacts/${c.id}`, { key: p.secretKey })
    expect(d.status).toBe(204)
    expect(d.text).toBe('')
    expect((await env.request('GET', `/contacts/${c.id}`, { key: p.secretKey })).status).toBe(404)
    expect((await env.request('DELETE', `/contacts/${c.id}`, { key: p.secretKey })).status).toBe(404)
    expect(await eventsOf(env, p.id)).toEqual([])
    const missing = await env.request('GET', '/contacts/nope', { key: p.secretKey })
    expect(missing.status).toBe(404)
    expect(missing.body.error.code).toBe('NOT_FOUND')
  })

  test('PATCH /contacts/:id: email change, 409 on a taken email, subscription events once per flip, data rules', async () => {
    const p = await env.consumedProject()
    const seen: EventRow[] = []
    const off = registerEventConsumer({ name: 'test.seen', interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0", async handle(_ctx, rows) { seen.push(...rows) } })
    env.onStop(off)
    const a = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'a@example.com', data: { keep: 1, drop: 2 } } })).body
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'b@example.com' } })
    const taken = await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { email: 'B@example.com' } })
    expect(taken.status).toBe(409)
    expect(taken.body.error.code).toBe('CONFLICT')
    const moved = await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { email: ' New@Example.com ' } })
    expect(moved.status).toBe(200)
    expect(moved.body.email).toBe('new@example.com')
    const same = await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { email: 'new@example.com' } })
    expect(same.status).toBe(200)
    const r1 = await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { subscribed: false, data: { drop: null, keep: '', id: 'x', email: 'e', nested: { a: [1] }, tmp: { value: 1, persistent: false } } } })
    expect(r1.status).toBe(200)
    expect(r1.body.subscribed).toBe(false)
    expect(r1.body.data).toEqual({ keep: 1, nested: { a: [1] } })
    await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { subscribed: false } })
    await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { subscribed: true } })
    expect(await eventsOf(env, p.id)).toEqual(['contact.unsubscribed', 'contact.subscribed'])
    await settleEvents()
    expect(seen.filter((e) => e.projectId === p.id).map((e) => e.name)).toEqual(['contact.unsubscribed', 'contact.subscribed'])
    const bad = await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { subscribed: 'yes' } })
    expect(bad.status).toBe(422)
    for (const data of ['text', [1, 2], 5]) {
      const r = await env.request('PATCH', `/contacts/${a.id}`, { key: p.secretKey, body: { data } })
      expect([JSON.stringify(data), r.status, r.body.error.errors[0].field]).toEqual([JSON.stringify(data), 422, 'data'])
    }
    expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'd@example.com', data: 'text' } })).status).toBe(422)
    expect((await env.request('GET', `/contacts/${a.id}`, { key: p.secretKey })).body.data).toEqual({ keep: 1, nested: { a: [1] } })
  })

  test('concurrent PATCHes of two contacts to one email: one wins, the other is 409, never 500', async () => {
    const p = await env.project()
    const a = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'c1@example.com' } })).body
    const b = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'c2@example.com' } })).body
    const rs = await Promise.all([a, b].map((c) => env.request('PATCH', `/contacts/${c.id}`, { key: p.secretKey, body: { email: 'same@example.com' } })))
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409])
  })

  test('concurrent POSTs of one new email: one contact, no 500', async () => {
    const p = await env.project()
    const rs = await Promise.all(Array.from({ length: 10 }, () => env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'dup@example.com' } })))
    expect(rs.every((r) => r.status === 200 || r.status === 201)).toBe(true)
    expect(rs.filter((r) => r.status === 201).length).toBe(1)
    expect(new Set(rs.map((r) => r.body.id)).size).toBe(1)
  })

  test('data rules on POST /contacts: one test per rule', async () => {
    const p = await env.project()
    const post = (data: unknown) => env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'rules@example.com', data } })
    // 1. primitives and plain objects are stored
    expect((await post({ s: 'x', n: 1.5, b: false, o: { deep: { x: 1 } } })).body.data).toEqual({ s: 'x', n: 1.5, b: false, o: { deep: { x: 1 } } })
    // 2. null deletes
    expect((await post({ s: null })).body.data).toEqual({ n: 1.5, b: false, o: { deep: { x: 1 } } })
    // 3. empty string is ignored
    expect((await post({ n: '' })).body.data.n).toBe(1.5)
    // 4. {value, persistent:false} is not stored
    expect((await post({ otp: { value: '1234', persistent: false } })).body.data.otp).toBeUndefined()
    // 5. reserved keys are dropped
    const r5 = await post({ id: 'i', service_id: 1, service_email: 1, email: 'x', unsubscribeUrl: 'u', subscribeUrl: 's', manageUrl: 'm', ok: 1 })
    expect(r5.body.data).toEqual({ n: 1.5, b: false, o: { deep: { x: 1 } }, ok: 1 })
    expect(r5.body.email).toBe('rules@example.com')
  })

  test('POST /contacts/lookup: found and missing in order, at most 500', async () => {
    const p = await env.project()
    const c = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'here@example.com', subscribed: false } })).body
    const r = await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: ['nobody@example.com', ' HERE@example.com'] } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      results: [
        { email: 'nobody@example.com', exists: false, id: null, subscribed: null },
        { email: 'here@example.com', exists: true, id: c.id, subscribed: false },
      ],
      found: 1, missing: 1,
    })
    const many = await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: Array.from({ length: 501 }, (_, i) => `u${i}@example.com`) } })
    expect(many.status).toBe(422)
    expect(many.body.error.errors[0]).toMatchObject({ field: 'emails', code: 'too_big' })
    expect((await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: [] } })).status).toBe(422)
    expect((await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: {} })).status).toBe(422)
    const ok500 = await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: Array.from({ length: 500 }, (_, i) => `u${i}@example.com`) } })
    expect(ok500.status).toBe(200)
    expect(ok500.body.missing).toBe(500)
  })
})
