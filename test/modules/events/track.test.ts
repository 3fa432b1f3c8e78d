import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import type { EventRow } from '../../../src/modules/events/stream'
import { registerEventConsumer } from '../../../src/modules/events/consumers'
import { settleEvents } from '../../helpers/events'

async function contactOf(env: TestEnv, key: string, email: string) {
  const r = await env.request('POST', '/contacts/lookup', { key, body: { emails: [email] } })
  const id = r.body.results[0].id
  return id ? (await env.request('GET', `/contacts/${id}`, { key })).body : null
}

async function eventRows(env: TestEnv, projectId: string) {
  const rows = await env.store.rows<{ name: string; data: unknown; contact_id: string }>(sql`SELECT name, data, contact_id FROM events WHERE project_id = ${projectId} ORDER BY created_at, id`)
  return rows.map((r) => ({ name: r.name, contactId: r.contact_id, data: typeof r.data === 'string' ? JSON.parse(r.data) : r.data }))
}

forEachStore('POST /v1/track', (env) => {
  test('public key: creates the contact (subscribed) and the event; answers the track result', async () => {
    const p = await env.consumedProject()
    const seen: EventRow[] = []
    env.onStop(registerEventConsumer({ name: 'test.seen', interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0", async handle(_c, rows) { seen.push(...rows) } }))
    const r = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: ' New@Example.com', event: 'signed-up', data: { plan: 'pro' } } })
    expect(r.status).toBe(200)
    expect(r.body.success).toBe(true)
    expect(Object.keys(r.body.data).sort()).toEqual(['contact', 'event', 'timestamp'])
    expect(new Date(r.body.data.timestamp).toISOString()).toBe(r.body.data.timestamp)
    const c = await contactOf(env, p.secretKey, 'new@example.com')
    expect(c).toMatchObject({ id: r.body.data.contact, subscribed: true, data: { plan: 'pro' } })
    const evs = await eventRows(env, p.id)
    expect(evs).toEqual([{ name: 'signed-up', contactId: c.id, data: { plan: 'pro' } }])
    // the consumers get the committed event, through the outbox
    await settleEvents()
    expect(seen.filter((e) => e.projectId === p.id).map((e) => [e.id, e.name])).toEqual([[r.body.data.event, 'signed-up']])
  })

  test('secret key is accepted too (docs/decisions.md, API keys); POST /events/track needs the secret key', async () => {
    const p = await env.project()
    expect((await env.request('POST', '/v1/track', { key: p.secretKey, body: { email: 'a@example.com', event: 'x' } })).status).toBe(200)
    const viaDash = await env.request('POST', '/events/track', { key: p.secretKey, body: { email: 'a@example.com', event: 'y' } })
    expect(viaDash.status).toBe(200)
    expect(viaDash.body.success).toBe(true)
    const pub = await env.request('POST', '/events/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'y' } })
    expect(pub.status).toBe(401)
    expect(pub.body.error.code).toBe('INVALID_API_KEY')
  })

  test('security: no key 401, unknown key 401 INVALID_API_KEY', async () => {
    for (const path of ['/v1/track', '/events/track']) {
      const none = await env.request('POST', path, { body: { email: 'a@example.com', event: 'x' } })
      expect(none.status).toBe(401)
      const bad = await env.request('POST', path, { key: `pk_${'a'.repeat(64)}`, body: { email: 'a@example.com', event: 'x' } })
      expect(bad.status).toBe(401)
      expect(bad.body.error.code).toBe('INVALID_API_KEY')
    }
  })

  test('a project never sees another project\'s contacts through track', async () => {
    const p = await env.project()
    const q = await env.project()
    const a = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'shared@example.com', event: 'x', data: { owner: 'p' } } })
    const b = await env.request('POST', '/v1/track', { key: q.publicKey, body: { email: 'shared@example.com', event: 'x' } })
    expect(a.body.data.contact).not.toBe(b.body.data.contact)
    expect((await contactOf(env, q.secretKey, 'shared@example.com')).data).toEqual({})
  })

  test('validation: missing/invalid email and event are 422', async () => {
    const p = await env.project()
    for (const body of [{ event: 'x' }, { email: 'nope', event: 'x' }, { email: 'a@example.com' }, { email: 'a@example.com', event: '' }, { email: 'a@example.com', event: 'x', subscribed: 'yes' }, { email: 'a@example.com', event: 'x', data: 'str' }]) {
      const r = await env.request('POST', '/v1/track', { key: p.publicKey, body })
      expect([JSON.stringify(body), r.status, r.body?.error?.code ?? r.text]).toEqual([JSON.stringify(body), 422, 'VALIDATION_ERROR'])
    }
    const bad = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'nope', event: 'x' } })
    expect(bad.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' })
  })

  test('reserved names are refused with 422 reserved_event and nothing is stored', async () => {
    const p = await env.project()
    for (const event of ['email.sent', 'email.anything', 'Email.Open', 'contact.subscribed', 'contact.unsubscribed', 'segment.vip.entry', 'segment.vip.exit']) {
      const r = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'r@example.com', event } })
      expect([event, r.status]).toEqual([event, 422])
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
      expect(r.body.error.errors[0]).toMatchObject({ field: 'event', code: 'reserved_event' })
    }
    expect(await contactOf(env, p.secretKey, 'r@example.com')).toBeNull()
    for (const event of ['emails.sent', 'contact.created', 'segment.vip', 'my.email.sent']) {
      expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'r@example.com', event } })).status).toBe(200)
    }
  })

  test('subscription: new contacts default to subscribed; false tracks without resubscribing; changes emit once', async () => {
    const p = await env.project()
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'n@example.com', event: 'x', subscribed: false } })
    expect((await contactOf(env, p.secretKey, 'n@example.com')).subscribed).toBe(false)
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'n@example.com', event: 'x' } })
    expect((await contactOf(env, p.secretKey, 'n@example.com')).subscribed).toBe(false)
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'n@example.com', event: 'x', subscribed: true } })
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'n@example.com', event: 'x', subscribed: true } })
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'n@example.com', event: 'x', subscribed: false } })
    expect((await eventRows(env, p.id)).map((e) => e.name)).toEqual(['x', 'x', 'contact.subscribed', 'x', 'x', 'contact.unsubscribed', 'x'])
  })

  test('without Idempotency-Key the same event twice makes two records', async () => {
    const p = await env.project()
    const body = { email: 'twice@example.com', event: 'clicked' }
    const a = await env.request('POST', '/v1/track', { key: p.publicKey, body })
    const b = await env.request('POST', '/v1/track', { key: p.publicKey, body })
    expect(a.body.data.event).not.toBe(b.body.data.event)
    expect((await eventRows(env, p.id)).length).toBe(2)
  })

  test('data rules on track: one test per rule', async () => {
    const p = await env.project()
    const track = (data: unknown) => env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'dr@example.com', event: 'e', data } })
    const stored = async () => (await contactOf(env, p.secretKey, 'dr@example.com')).data
    // 1. primitives and plain objects are stored
    await track({ s: 'x', n: 2, b: true, o: { a: { b: 1 } } })
    expect(await stored()).toEqual({ s: 'x', n: 2, b: true, o: { a: { b: 1 } } })
    // 2. null deletes
    await track({ s: null })
    expect(await stored()).toEqual({ n: 2, b: true, o: { a: { b: 1 } } })
    // 3. empty string ignored
    await track({ n: '' })
    expect((await stored()).n).toBe(2)
    // 4. {value, persistent:false}: not stored on the contact (the event keeps it for its workflows)
    await track({ code: { value: 'C-1', persistent: false }, kept: { value: 5, persistent: true } })
    const s4 = await stored()
    expect(s4.code).toBeUndefined()
    expect(s4.kept).toBe(5)
    const evs = await eventRows(env, p.id)
    expect(evs[evs.length - 1].data).toEqual({ code: 'C-1', kept: 5 })
    // 5. reserved keys dropped
    await track({ id: 'x', service_id: 1, service_email: 'y', email: 'other@example.com', unsubscribeUrl: 'u', subscribeUrl: 's', manageUrl: 'm' })
    expect(await stored()).toEqual(s4)
    expect((await contactOf(env, p.secretKey, 'other@example.com'))).toBeNull()
  })

  test('Idempotency-Key: a reused key is 409 with details, not performed again', async () => {
    const p = await env.project()
    const body = { email: 'idem@example.com', event: 'paid' }
    const a = await env.request('POST', '/v1/track', { key: p.publicKey, body, headers: { 'idempotency-key': 'order-1' } })
    expect(a.status).toBe(200)
    const b = await env.request('POST', '/v1/track', { key: p.publicKey, body, headers: { 'idempotency-key': 'order-1' } })
    expect(b.status).toBe(409)
    expect(b.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect(b.body.error.details).toMatchObject({ key: 'order-1', originalRequest: { method: 'POST', path: '/v1/track' }, originalStatusCode: 200 })
    expect((await eventRows(env, p.id)).length).toBe(1)
    // scoped to the project
    const q = await env.project()
    expect((await env.request('POST', '/v1/track', { key: q.publicKey, body, headers: { 'idempotency-key': 'order-1' } })).status).toBe(200)
    // a 4xx answer releases the key
    const bad = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'idem@example.com', event: 'email.x' }, headers: { 'idempotency-key': 'k2' } })
    expect(bad.status).toBe(422)
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body, headers: { 'idempotency-key': 'k2' } })).status).toBe(200)
    const longKey = await env.request('POST', '/v1/track', { key: p.publicKey, body, headers: { 'idempotency-key': 'x'.repeat(256) } })
    expect(longKey.status).toBe(422)
  })

  test('Idempotency-Key race: 50 concurrent requests with one key, exactly one performed, the others 409', async () => {
    const p = await env.project()
    const body = { email: 'race@example.com', event: 'charged', data: { amount: 10 } }
    const rs = await Promise.all(Array.from({ length: 50 }, () =>
      env.request('POST', '/v1/track', { key: p.publicKey, body, headers: { 'idempotency-key': 'race-key' } })))
    const codes = rs.map((r) => r.status)
    expect(codes.filter((c) => c === 200).length).toBe(1)
    expect(codes.filter((c) => c === 409).length).toBe(49)
    expect(rs.filter((r) => r.status === 409).every((r) => r.body.error.code === 'IDEMPOTENCY_KEY_REUSED')).toBe(true)
    expect((await eventRows(env, p.id)).filter((e) => e.name === 'charged').length).toBe(1)
  })

  test('concurrent tracks of one new email create one contact and every event', async () => {
    const p = await env.project()
    const rs = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'burst@example.com', event: 'tick', data: { [`k${i}`]: i } } })))
    expect(rs.every((r) => r.status === 200)).toBe(true)
    expect(new Set(rs.map((r) => r.body.data.contact)).size).toBe(1)
    expect((await eventRows(env, p.id)).length).toBe(30)
    expect(Object.keys((await contactOf(env, p.secretKey, 'burst@example.com')).data).length).toBe(30)
  })

  test('a track refused inside a batch (the contact would outgrow the data limit) fails alone; its batch-mates commit', async () => {
    const p = await env.project()
    const big = 'x'.repeat(40_000)
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'full@example.com', event: 'first', data: { a: big } } })).status).toBe(200)
    const rs = await Promise.all([
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'one@example.com', event: 'ok', data: { n: 1 } } }),
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'full@example.com', event: 'too-much', data: { b: big } } }),
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'two@example.com', event: 'ok', data: { n: 2 } } }),
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'one@example.com', event: 'ok', data: { m: 3 } } }),
    ])
    expect(rs.map((r) => r.status)).toEqual([200, 422, 200, 200])
    expect(rs[1].body.error.code).toBe('VALIDATION_ERROR')
    expect((await eventRows(env, p.id)).map((e) => e.name).sort()).toEqual(['first', 'ok', 'ok', 'ok'])
    expect((await contactOf(env, p.secretKey, 'one@example.com')).data).toEqual({ n: 1, m: 3 })
    expect(Object.keys((await contactOf(env, p.secretKey, 'full@example.com')).data)).toEqual(['a'])
  })

  test('tracks that change a subscription in one batch: each contact.(un)subscribed event is stored before its track\'s event', async () => {
    const p = await env.project()
    for (const email of ['a@example.com', 'b@example.com']) {
      expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email, event: 'seen' } })).status).toBe(200)
    }
    const rs = await Promise.all([
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'left', subscribed: false } }),
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'b@example.com', event: 'stayed' } }),
      env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'c@example.com', event: 'came', subscribed: false } }),
    ])
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200])
    const events = await eventRows(env, p.id)
    const of = (i: number) => events.filter((e) => e.contactId === rs[i].body.data.contact).map((e) => e.name)
    expect(of(0)).toEqual(['seen', 'contact.unsubscribed', 'left'])
    expect(of(1)).toEqual(['seen', 'stayed'])
    expect(of(2)).toEqual(['came'])
    expect((await contactOf(env, p.secretKey, 'a@example.com')).subscribed).toBe(false)
    expect((await contactOf(env, p.secretKey, 'c@example.com')).subscribed).toBe(false)
  })
})
