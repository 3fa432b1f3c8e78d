import { expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startWorkerProcess, until } from '../../helpers/worker'
import { settleEvents } from '../../helpers/events'
import { startReceiver, verified } from './receiver'

/**
 * Crash safety of webhook deliveries: a real `mailctl serve --role worker` delivers to a slow receiver on
 * 127.0.0.1 and is killed with SIGKILL mid-way, then started again. Every delivery arrives at least once,
 * with its one id (the receiver's deduplication key), signed; none recorded as delivered before the kill
 * arrives again after it.
 */
forEachStore('webhook crash safety', (env) => {
  test('kill -9 with deliveries pending: after the restart each is delivered, at least once, with the same id', async () => {
    const rx = startReceiver(async () => { await Bun.sleep(150); return new Response('ok') })
    const p = await env.project()
    const made = await env.request('POST', '/webhooks/endpoints', { key: p.secretKey, body: { url: rx.url } })
    expect(made.status).toBe(201)
    const N = 60
    for (let i = 0; i < N; i++) {
      expect((await env.request('POST', '/v1/track', { key: p.secretKey, body: { email: `c${i}@example.org`, event: 'crash.test' } })).status).toBe(200)
    }
    await settleEvents()
    const { webhookDeliveries: d } = env.store.t
    const all = await env.store.db.select({ id: d.id }).from(d).where(eq(d.endpointId, made.body.id))
    expect(all).toHaveLength(N)
    const ids = new Set(all.map((r) => r.id))
    const delivered = async () => new Set((await env.store.db.select({ id: d.id }).from(d).where(and(eq(d.endpointId, made.body.id), eq(d.status, 'delivered')))).map((r) => r.id))
    const start = () => startWorkerProcess(env, { mxPort: 9, dnsServer: '127.0.0.1:9' }, { env: { MAILCTL_WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } })

    const first = start()
    await until(() => rx.received.length >= 20, 60_000, '20 deliveries before the kill')
    first.kill('SIGKILL')
    await first.exited
    const atKill = rx.received.length
    const recorded = await delivered()
    expect(recorded.size).toBeLessThan(N)

    const second = start()
    try {
      await until(async () => (await delivered()).size === N, 90_000, 'every delivery after the restart')
    } finally {
      second.kill('SIGTERM')
      await second.exited
    }
    const got = rx.received.map((r) => r.headers['webhook-id'])
    expect(new Set(got)).toEqual(ids)
    for (const r of rx.received) expect(verified(made.body.secret, r).type).toBe('crash.test')
    const after = got.slice(atKill)
    for (const id of recorded) expect(after).not.toContain(id)
    rx.stop()
  }, 180_000)
}, { webhookAllowHosts: ['127.0.0.1'] })
