import { afterAll, afterEach, beforeEach, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { startTestDns } from '../../helpers/dns'
import { until } from '../../helpers/worker'
import { settleEvents } from '../../helpers/events'
import { ctxFor } from '../../../src/deps'
import { Dispatcher } from '../../../src/modules/hooks/dispatcher'
import { createDeliveries } from '../../../src/modules/hooks/service'
import { RETRY_WINDOW_MS } from '../../../src/modules/hooks/schedule'
import { pruneFinished } from '../../../src/modules/hooks/repo'
import type { NewProject } from '../../../src/modules/projects/service'
import { startReceiver, verified } from './receiver'

/**
 * Customer webhook deliveries end to end: tracked events become deliveries (the event consumer), the
 * dispatcher posts them to receivers on 127.0.0.1, which verify every signature with the standardwebhooks
 * package. The dispatcher's clock is the test's (retries over days run in no time); the receivers'
 * answers decide the outcomes.
 */

const dns = await startTestDns()
afterAll(() => dns.close())

forEachStore('webhook deliveries', (env) => {
  const HOUR = 3600_000
  // The delivery queue is shared by every project: each test starts with it empty, so a drain sees only its own.
  beforeEach(async () => { await env.store.tx((db) => db.delete(env.store.t.webhookDeliveries)) })
  afterEach(() => env.clock.reset())
  const req = (method: string, path: string, key: string | null, body?: unknown) => env.request(method, path, { key, body })

  /** Stops the env's clock a second ahead of the real time, so that rows made until now are due. */
  function clock() {
    env.clock.set(Date.now() + 1000)
    return env.clock
  }

  async function endpoint(p: NewProject, url: string, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
    const res = await req('POST', '/webhooks/endpoints', p.secretKey, { url, ...body })
    expect(res.status).toBe(201)
    return res.body
  }

  async function track(p: NewProject, event: string, email = 'ada@example.org', data: Record<string, unknown> = {}) {
    const res = await req('POST', '/v1/track', p.secretKey, { email, event, data })
    expect(res.status).toBe(200)
    await settleEvents()
    return res.body.data
  }

  const deliveriesOf = async (p: NewProject, endpointId: string, q = '') => (await req('GET', `/webhooks/endpoints/${endpointId}/deliveries?limit=100${q}`, p.secretKey)).body.data
  const endpointOf = async (p: NewProject, id: string) => (await req('GET', `/webhooks/endpoints/${id}`, p.secretKey)).body

  function dispatcher(env: TestEnv, opts: ConstructorParameters<typeof Dispatcher>[1] = {}) {
    return new Dispatcher(env.deps, opts)
  }

  test('signed deliveries verify with standardwebhooks; one per event and matching endpoint', async () => {
    const rx = startReceiver()
    const p = await env.project()
    const all = await endpoint(p, rx.url)
    const some = await endpoint(p, rx.url, { eventTypes: ['signup', 'email.*'] })
    const none = await endpoint(p, rx.url, { eventTypes: ['email.*', 'contact.*'] })
    await track(p, 'signup', 'ada@example.org', { plan: 'pro' })
    await track(p, 'purchase', 'bob@example.org', { total: 12 })
    clock()
    expect(await dispatcher(env).drain()).toBe(3)
    expect(rx.received).toHaveLength(3)
    const bySecret = (s: string) => rx.received.filter((r) => { try { verified(s, r); return true } catch { return false } })
    const toAll = bySecret(all.secret).map((r) => verified(all.secret, r))
    expect(toAll.map((b) => b.type).sort()).toEqual(['purchase', 'signup'])
    const signup = toAll.find((b) => b.type === 'signup')
    expect(signup).toEqual({ type: 'signup', timestamp: expect.any(String), data: { plan: 'pro' }, contact: { id: expect.any(String), email: 'ada@example.org' } })
    expect(bySecret(some.secret).map((r) => verified(some.secret, r).type)).toEqual(['signup'])
    expect(bySecret(none.secret)).toEqual([])
    for (const r of rx.received) {
      expect(r.headers['content-type']).toBe('application/json')
      expect(r.headers['webhook-id']).toMatch(/^msg_/)
    }
    const log = await deliveriesOf(p, all.id)
    expect(log.map((d: { status: string }) => d.status)).toEqual(['delivered', 'delivered'])
    expect(log.map((d: { id: string }) => d.id).sort()).toEqual(bySecret(all.secret).map((r) => r.headers['webhook-id']).sort())
    // A wrong secret or a changed body does not verify.
    expect(() => verified(none.secret, rx.received[0])).toThrow()
    expect(() => verified(all.secret, { ...rx.received[0], body: rx.received[0].body.replace('pro', 'free') })).toThrow()
    rx.stop()
  }, 30_000)

  test('an answer with a NUL in its body is logged with U+FFFD, and the outcomes written with it are written too', async () => {
    const bad = startReceiver(() => new Response('down\u0000here', { status: 500 }))
    const good = startReceiver()
    const p = await env.project()
    const e = await endpoint(p, bad.url)
    const other = await endpoint(p, good.url)
    await track(p, 'signup')
    clock()
    await dispatcher(env).drain()
    const attempts = (await req('GET', `/webhooks/endpoints/${e.id}/attempts`, p.secretKey)).body.data
    expect(attempts.map((a: { response: string }) => a.response)).toEqual(['down\uFFFDhere'])
    expect((await deliveriesOf(p, e.id)).map((d: { status: string }) => d.status)).toEqual(['pending'])
    expect((await deliveriesOf(p, other.id)).map((d: { status: string }) => d.status)).toEqual(['delivered'])
    bad.stop()
    good.stop()
  }, 30_000)

  test('an event handled again makes no second delivery (unique per endpoint and event)', async () => {
    const rx = startReceiver()
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    await track(p, 'signup')
    const { events } = env.store.t
    const rows = await env.store.db.select().from(events).where(eq(events.projectId, p.id))
    const ctx = ctxFor(env.deps, p.id, { kind: 'job', name: 'test' })
    expect(await createDeliveries(ctx, rows)).toBe(0)
    expect(await createDeliveries(ctx, [...rows, ...rows])).toBe(0)
    expect(await deliveriesOf(p, e.id)).toHaveLength(rows.length)
    rx.stop()
  }, 30_000)

  test('retries follow failures on the schedule, with the same id, and stop when the endpoint succeeds', async () => {
    const rx = startReceiver((n) => new Response(n <= 3 ? 'down' : 'ok', { status: n <= 3 ? 500 : 200 }))
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    await track(p, 'signup')
    const c = clock()
    const d = dispatcher(env)
    const start = c.now()
    const next = async () => new Date((await deliveriesOf(p, e.id))[0].nextAttemptAt).getTime() - c.now()
    expect(await d.drain()).toBe(1)
    expect(await next()).toBe(5_000)
    expect((await endpointOf(p, e.id)).failingSince).toBe(new Date(start).toISOString())
    expect(await d.drain()).toBe(0)
    c.advance(5_000)
    expect(await d.drain()).toBe(1)
    expect(await next()).toBe(5 * 60_000)
    c.advance(5 * 60_000)
    expect(await d.drain()).toBe(1)
    expect(await next()).toBe(30 * 60_000)
    c.advance(30 * 60_000)
    expect(await d.drain()).toBe(1)
    c.advance(10 * HOUR)
    expect(await d.drain()).toBe(0)
    const [done] = await deliveriesOf(p, e.id)
    expect(done).toMatchObject({ status: 'delivered', attempts: 4, lastStatus: 200, lastError: null, nextAttemptAt: null })
    expect(new Set(rx.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([done.id]))
    for (const r of rx.received) verified(e.secret, r)
    expect((await endpointOf(p, e.id)).failingSince).toBeNull()
    const log = (await req('GET', `/webhooks/endpoints/${e.id}/attempts`, p.secretKey)).body.data
    expect(log.map((a: { attempt: number; outcome: string; status: number }) => [a.attempt, a.outcome, a.status])).toEqual([[4, 'success', 200], [3, 'http_error', 500], [2, 'http_error', 500], [1, 'http_error', 500]])
    expect(log[1]).toMatchObject({ response: 'down', latencyMs: expect.any(Number) })
    const one = (await req('GET', `/webhooks/endpoints/${e.id}/deliveries/${done.id}`, p.secretKey)).body
    expect(one.attemptLog).toHaveLength(4)
    expect(JSON.parse(one.body).type).toBe('signup')
    rx.stop()
  }, 30_000)

  test('3 days of failures fail the delivery; 5 days disable the endpoint, and the project sees why', async () => {
    const rx = startReceiver(() => new Response('x'.repeat(5000), { status: 503 }))
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    await track(p, 'signup')
    const c = clock()
    const d = dispatcher(env)
    const first = c.now()
    let attempts = 0
    for (let i = 0; i < 50; i++) {
      attempts += await d.drain()
      const [row] = await deliveriesOf(p, e.id)
      if (row.status !== 'pending') break
      c.set(new Date(row.nextAttemptAt).getTime())
    }
    const [failed] = await deliveriesOf(p, e.id)
    expect(failed).toMatchObject({ status: 'failed', lastStatus: 503, lastError: 'HTTP 503', nextAttemptAt: null })
    expect(attempts).toBe(failed.attempts)
    expect(attempts).toBe(12)
    expect(c.now() - first).toBeLessThanOrEqual(RETRY_WINDOW_MS)
    const log = (await req('GET', `/webhooks/endpoints/${e.id}/attempts?limit=1`, p.secretKey)).body
    expect(log.data[0].response.length).toBeLessThanOrEqual(1025)
    expect(log.hasMore).toBe(true)
    expect((await endpointOf(p, e.id)).enabled).toBe(true)
    // Two days later the endpoint still fails: five days in a row disable it.
    c.set(first + 5 * 24 * HOUR)
    await track(p, 'purchase')
    expect(await d.drain()).toBe(1)
    const disabled = await endpointOf(p, e.id)
    expect(disabled).toMatchObject({ enabled: false, disabledAt: expect.any(String) })
    expect(disabled.disabledReason).toContain('5 days')
    // A disabled endpoint gets no new deliveries.
    await track(p, 'later')
    expect(await d.drain()).toBe(0)
    expect(await deliveriesOf(p, e.id)).toHaveLength(2)
    rx.stop()
  }, 30_000)

  test('410 Gone disables the endpoint at once and fails what waits for it', async () => {
    const rx = startReceiver(() => new Response('gone', { status: 410 }))
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    await track(p, 'a')
    await track(p, 'b')
    clock()
    await dispatcher(env, { perEndpoint: 1, concurrency: 1 }).drain(1)
    expect(rx.received).toHaveLength(1)
    const ep = await endpointOf(p, e.id)
    expect(ep).toMatchObject({ enabled: false, disabledReason: 'The endpoint answered 410 Gone' })
    expect((await deliveriesOf(p, e.id)).map((d: { status: string }) => d.status)).toEqual(['failed', 'failed'])
    expect(await dispatcher(env).drain()).toBe(0)
    expect(rx.received).toHaveLength(1)
    rx.stop()
  }, 30_000)

  test('rotation: both secrets sign for 24 hours, then only the new one', async () => {
    const rx = startReceiver()
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    const rotated = (await req('POST', `/webhooks/endpoints/${e.id}/rotate-secret`, p.secretKey)).body
    await track(p, 'signup')
    const c = clock()
    await dispatcher(env).drain()
    expect(rx.received[0].headers['webhook-signature'].split(' ')).toHaveLength(2)
    expect(verified(e.secret, rx.received[0]).type).toBe('signup')
    expect(verified(rotated.secret, rx.received[0]).type).toBe('signup')
    c.advance(25 * HOUR)
    await track(p, 'later')
    await dispatcher(env).drain()
    expect(rx.received[1].headers['webhook-signature'].split(' ')).toHaveLength(1)
    expect(verified(rotated.secret, rx.received[1]).type).toBe('later')
    expect(() => verified(e.secret, rx.received[1])).toThrow()
    rx.stop()
  }, 30_000)

  test('replay one delivery and every failed one since a time: same ids, sent again', async () => {
    let up = false
    const rx = startReceiver(() => new Response('', { status: up ? 204 : 500 }))
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    const since = new Date().toISOString()
    await track(p, 'a')
    await track(p, 'b')
    const c = clock()
    const d = dispatcher(env)
    await d.drain()
    c.advance(4 * 24 * HOUR)
    await d.drain()
    expect((await deliveriesOf(p, e.id, '&status=failed'))).toHaveLength(2)
    up = true
    const before = rx.received.length
    const replayed = await req('POST', `/webhooks/endpoints/${e.id}/replay`, p.secretKey, { since })
    expect(replayed.status).toBe(200)
    expect(replayed.body.replayed).toBe(2)
    expect(await d.drain()).toBe(2)
    const ids = new Set(rx.received.slice(before).map((r) => r.headers['webhook-id']))
    expect(ids).toEqual(new Set(replayed.body.ids))
    expect((await deliveriesOf(p, e.id, '&status=delivered'))).toHaveLength(2)
    const one = await req('POST', `/webhooks/endpoints/${e.id}/deliveries/${replayed.body.ids[0]}/replay`, p.secretKey)
    expect(one.status).toBe(200)
    expect(one.body).toMatchObject({ id: replayed.body.ids[0], status: 'pending' })
    expect(await d.drain()).toBe(1)
    expect(rx.received.at(-1)?.headers['webhook-id']).toBe(replayed.body.ids[0])
    expect((await req('POST', `/webhooks/endpoints/${e.id}/deliveries/msg_nope/replay`, p.secretKey)).status).toBe(404)
    rx.stop()
  }, 30_000)

  test('a dead endpoint holds at most its cap and does not slow a healthy one', async () => {
    const healthy = startReceiver()
    const dead = startReceiver(() => dead.hang())
    const p = await env.project()
    const h = await endpoint(p, healthy.url)
    await endpoint(p, dead.url)
    // A running dispatcher on the real clock: rows made while it runs are due when made.
    const d = new Dispatcher(env.deps, { perEndpoint: 2, pollMs: 50, fetch: { timeoutMs: 120_000 } })
    await d.start()
    try {
      for (let i = 0; i < 20; i++) await track(p, `e${i}`, `u${i}@example.org`)
      await until(async () => (await deliveriesOf(p, h.id, '&status=delivered')).length === 20, 20_000, 'the healthy endpoint to get all 20')
      expect(healthy.received).toHaveLength(20)
      expect(dead.received).toHaveLength(2)
      expect(d.inFlight).toBe(2)
    } finally {
      dead.releaseAll()
      await d.stop()
      healthy.stop()
      dead.stop()
    }
  }, 30_000)

  test('the guard applies: a name that resolves to loopback is refused at delivery, and the receiver never hears of it', async () => {
    const rx = startReceiver()
    // A loopback address the allow-list (127.0.0.1 here, for the receivers) does not name: an address entry
    // allows that address whatever name resolves to it (src/net/address-guard.ts), any other is refused.
    dns.set('rebind.hooks.test', [{ type: 'A', address: '127.0.0.2' }])
    const p = await env.project()
    const port = new URL(rx.url).port
    const e = await endpoint(p, `http://rebind.hooks.test:${port}/hook`)
    await track(p, 'signup')
    clock()
    await dispatcher(env).drain()
    expect(rx.received).toHaveLength(0)
    const [a] = (await req('GET', `/webhooks/endpoints/${e.id}/attempts`, p.secretKey)).body.data
    expect(a).toMatchObject({ outcome: 'blocked', status: null })
    expect(a.response).toContain('loopback')
    rx.stop()
  }, 30_000)

  test('pruning deletes finished deliveries made before a time, with their log; pending ones stay', async () => {
    const rx = startReceiver((n) => new Response('', { status: n === 1 ? 200 : 500 }))
    const p = await env.project()
    const e = await endpoint(p, rx.url)
    await track(p, 'a')
    clock()
    await dispatcher(env, { perEndpoint: 1, concurrency: 1 }).drain(1)
    await track(p, 'b')
    clock()
    await dispatcher(env).drain()
    const before = await deliveriesOf(p, e.id)
    expect(before.map((d: { status: string }) => d.status).sort()).toEqual(['delivered', 'pending'])
    expect(await pruneFinished(env.store, new Date(Date.now() + 60_000))).toBe(1)
    const after = await deliveriesOf(p, e.id)
    expect(after.map((d: { status: string }) => d.status)).toEqual(['pending'])
    const log = (await req('GET', `/webhooks/endpoints/${e.id}/attempts`, p.secretKey)).body.data
    expect(log.map((a: { deliveryId: string }) => a.deliveryId)).toEqual([after[0].id])
    rx.stop()
  }, 30_000)
}, { webhookAllowHosts: ['127.0.0.1'], dnsServers: [dns.server] })
