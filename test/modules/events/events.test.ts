import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { registerUsageProvider } from '../../../src/modules/contacts/usage'

async function track(env: TestEnv, key: string, email: string, event: string, data?: Record<string, unknown>) {
  const r = await env.request('POST', '/v1/track', { key, body: { email, event, data } })
  expect(r.status).toBe(200)
  return r.body.data as { contact: string; event: string; timestamp: string }
}

forEachStore('events endpoints', (env) => {
  test('GET /events: newest first, cursor pages, name and contact filters, total on the first page', async () => {
    const p = await env.project()
    const ids: string[] = []
    for (let i = 0; i < 7; i++) ids.push((await track(env, p.publicKey, `e${i % 2}@example.com`, i % 3 ? 'viewed' : 'bought', { i })).event)
    const first = await env.request('GET', '/events?limit=3', { key: p.secretKey })
    expect(first.status).toBe(200)
    expect(first.body.total).toBe(7)
    expect(first.body.hasMore).toBe(true)
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(4).reverse())
    expect(first.body.data[0]).toMatchObject({ name: 'bought', data: { i: 6 }, contact: { email: 'e0@example.com' }, emailId: null })
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const r: { body: { data: Array<{ id: string }>; cursor: string | null; total: number } } = await env.request('GET', `/events?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { key: p.secretKey })
      if (cursor) expect(r.body.total).toBe(0)
      seen.push(...r.body.data.map((e) => e.id))
      cursor = r.body.cursor
    } while (cursor)
    expect(seen).toEqual([...ids].reverse())
    const bought = await env.request('GET', '/events?name=bought', { key: p.secretKey })
    expect(bought.body.total).toBe(3)
    const c = first.body.data[0].contactId
    const mine = await env.request('GET', `/events?contactId=${c}`, { key: p.secretKey })
    expect(mine.body.total).toBe(4)
    expect((await env.request('GET', '/events?cursor=zzz', { key: p.secretKey })).status).toBe(400)
  })

  test('GET /events/contact/:contactId: that contact only; 404 for an unknown or foreign contact', async () => {
    const p = await env.project()
    const q = await env.project()
    const a = await track(env, p.publicKey, 'a@example.com', 'one')
    await track(env, p.publicKey, 'a@example.com', 'two')
    await track(env, p.publicKey, 'b@example.com', 'three')
    const r = await env.request('GET', `/events/contact/${a.contact}`, { key: p.secretKey })
    expect(r.status).toBe(200)
    expect(r.body.data.map((e: { name: string }) => e.name)).toEqual(['two', 'one'])
    expect(r.body.total).toBe(2)
    const foreign = await env.request('GET', `/events/contact/${a.contact}`, { key: q.secretKey })
    expect(foreign.status).toBe(404)
    expect(foreign.body.error.code).toBe('NOT_FOUND')
    expect((await env.request('GET', '/events/contact/nope', { key: p.secretKey })).status).toBe(404)
  })

  test('GET /events/stats and /events/names', async () => {
    const p = await env.project()
    await track(env, p.publicKey, 'a@example.com', 'viewed')
    await track(env, p.publicKey, 'b@example.com', 'viewed')
    await track(env, p.publicKey, 'a@example.com', 'bought')
    await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'bought', subscribed: false } })
    const s = await env.request('GET', '/events/stats?days=7', { key: p.secretKey })
    expect(s.status).toBe(200)
    expect(s.body).toMatchObject({ totalEvents: 5, periodDays: 7, eventsInPeriod: 5, uniqueNames: 3, uniqueContacts: 2 })
    expect(s.body.topEvents).toEqual([{ name: 'bought', count: 2 }, { name: 'viewed', count: 2 }, { name: 'contact.unsubscribed', count: 1 }])
    expect(s.body.daily).toEqual([{ date: new Date().toISOString().slice(0, 10), count: 5 }])
    expect((await env.request('GET', '/events/stats', { key: p.secretKey })).body.periodDays).toBe(30)
    const n = await env.request('GET', '/events/names', { key: p.secretKey })
    expect(n.status).toBe(200)
    expect(n.body.data.map((x: { name: string; count: number; reserved: boolean }) => [x.name, x.count, x.reserved])).toEqual([
      ['bought', 2, false], ['viewed', 2, false], ['contact.unsubscribed', 1, true],
    ])
    expect(new Date(n.body.data[0].lastSeenAt).getTime()).toBeGreaterThan(Date.now() - 60_000)
    const empty = await env.project()
    expect((await env.request('GET', '/events/names', { key: empty.secretKey })).body.data).toEqual([])
    expect((await env.request('GET', '/events/stats', { key: empty.secretKey })).body.totalEvents).toBe(0)
  })

  test('GET /events/:eventName/usage: count and registered providers; 404 for an unknown name', async () => {
    const p = await env.project()
    await track(env, p.publicKey, 'a@example.com', 'order.placed')
    const u = await env.request('GET', '/events/order.placed/usage', { key: p.secretKey })
    expect(u.status).toBe(200)
    expect(u.body).toEqual({ eventName: 'order.placed', count: 1, inUse: false, segments: [], campaigns: [], workflows: [] })
    const off = registerUsageProvider({
      kind: 'workflows',
      async eventUsage(ctx, name) { return ctx.projectId === p.id && name === 'order.placed' ? [{ id: 'w1', name: 'Welcome', where: 'trigger' }] : [] },
    })
    try {
      const u2 = await env.request('GET', '/events/order.placed/usage', { key: p.secretKey })
      expect(u2.body.inUse).toBe(true)
      expect(u2.body.workflows).toEqual([{ id: 'w1', name: 'Welcome', where: 'trigger' }])
    } finally { off() }
    expect((await env.request('GET', '/events/never/usage', { key: p.secretKey })).status).toBe(404)
    const q = await env.project()
    expect((await env.request('GET', '/events/order.placed/usage', { key: q.secretKey })).status).toBe(404)
  })

  test('DELETE /events/:eventName deletes that name only, in this project only; service events are refused', async () => {
    const p = await env.project()
    const q = await env.project()
    await track(env, p.publicKey, 'a@example.com', 'gone')
    await track(env, p.publicKey, 'b@example.com', 'gone')
    await track(env, p.publicKey, 'a@example.com', 'kept')
    await track(env, q.publicKey, 'a@example.com', 'gone')
    expect((await env.request('DELETE', '/events/gone', { key: q.secretKey })).body).toEqual({ eventName: 'gone', deleted: 1 })
    const d = await env.request('DELETE', '/events/gone', { key: p.secretKey })
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ eventName: 'gone', deleted: 2 })
    expect((await env.request('DELETE', '/events/gone', { key: p.secretKey })).status).toBe(404)
    expect((await env.request('GET', '/events/names', { key: p.secretKey })).body.data.map((x: { name: string }) => x.name)).toEqual(['kept'])
    const svc = await env.request('DELETE', '/events/contact.unsubscribed', { key: p.secretKey })
    expect(svc.status).toBe(422)
    expect(svc.body.error.errors[0].code).toBe('reserved_event')
  })

  test('security: no key 401, public key 401 INVALID_API_KEY on every /events endpoint', async () => {
    const p = await env.project()
    const t = await track(env, p.publicKey, 'a@example.com', 'x')
    const calls: Array<[string, string]> = [['GET', '/events'], ['GET', '/events/stats'], ['GET', '/events/names'], ['GET', `/events/contact/${t.contact}`], ['GET', '/events/x/usage'], ['DELETE', '/events/x']]
    for (const [method, path] of calls) {
      expect([path, (await env.request(method, path)).status]).toEqual([path, 401])
      const pub = await env.request(method, path, { key: p.publicKey })
      expect([path, pub.status, pub.body.error.code]).toEqual([path, 401, 'INVALID_API_KEY'])
    }
    const q = await env.project()
    expect((await env.request('GET', '/events', { key: q.secretKey })).body.data).toEqual([])
    expect((await env.request('DELETE', '/events/x', { key: q.secretKey })).status).toBe(404)
  })
})
