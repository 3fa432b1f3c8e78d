import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pgReachableSync, TestEnv } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { mxTo, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { storeRuntime } from '../../src/main'
import { openStore } from '../../src/db/client'
import type { Deps } from '../../src/deps'
import { createOutbound } from '../../src/mail/outbound'
import { Throttle, type Slot } from '../../src/mail/outbound/throttle'
import { deliveryStore } from '../../src/modules/emails/delivery'

/**
 * Issue 14, "the per-destination throttle is per node": two nodes (two stores, each with its node row and
 * its pipeline) deliver to one slow MX host. Together they open at most the destination's limit, not
 * twice it, and every message arrives once.
 */

const LIMIT = 4
const throttle = { initial: LIMIT, max: LIMIT, min: 1, recoverAfter: 20, maxWaiting: 2000 }
const dns = await startTestDns()
const sink = await startSink({ host: '127.0.0.7', delayMs: 60 })
// PostgreSQL only: skipped, like every PostgreSQL suite, when PostgreSQL is unreachable outside CI or under
// MAILCTL_TEST_STORES=sqlite (npm run test:fast).
describe.skipIf(!pgReachableSync())('a destination\'s throttle shared by nodes [pg]', () => {
  const env = new TestEnv('pg', { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
  beforeAll(() => env.start())
  afterAll(async () => {
    await env.stop()
    await sink.close()
  })

  test('unit: each node takes its part of a destination\'s limit; a node leaving gives the others its part', async () => {
    const t = new Throttle(throttle)
    const d = t.get('mx.example')
    t.shareAmong(2)
    expect(t.capacity('mx.example')).toBe(2 * 4)
    expect(await d.acquire()).toBe(true)
    expect(await d.acquire()).toBe(true)
    let third: Slot = false
    const waiting = d.acquire().then((ok) => { third = ok })
    expect(d.queued).toBe(1)
    // The other node is gone: this one may use the whole limit, and the waiting delivery starts now.
    t.shareAmong(1)
    await waiting
    expect(third).toBe(true)
    expect(t.snapshot()).toEqual([{ key: 'mx.example', limit: LIMIT, active: 3, queued: 0, rate: null }])
    // Never below the minimum, however many nodes.
    t.shareAmong(10)
    expect(t.snapshot()[0].limit).toBe(1)
  })

  test('two nodes deliver 80 messages to one slow host with at most its limit of sessions open, each message once', async () => {
    const p = await projectWithDomain(env, dns, `nodes-${Math.random().toString(36).slice(2, 8)}.test`)
    const dest = `dest-${Math.random().toString(36).slice(2, 8)}.test`
    mxTo(dns, dest, '127.0.0.7')
    // Node B: its own store handle and runtime, hence its own node row.
    const storeB = openStore(env.config.databaseUrl)
    const depsB: Deps = { ...env.deps, store: storeB, runtime: storeRuntime(storeB, env.config, env.deps.log) }
    const opts = { signerThreads: 0, pollMs: 50, smtp: { throttle } }
    const a = createOutbound(env.deps, deliveryStore, opts)
    const b = createOutbound(depsB, deliveryStore, opts)
    try {
      a.start()
      b.start()
      // Both rows exist once each has counted the live nodes at a beat (serve beats every 5 s).
      const [na, nb] = [env.deps.runtime.node, depsB.runtime.node]
      while (na.liveNodes() !== 2 || nb.liveNodes() !== 2) {
        await Bun.sleep(10)
        await na.beat()
        await nb.beat()
      }
      const to = Array.from({ length: 80 }, (_, i) => `r${i}@${dest}`)
      for (let i = 0; i < to.length; i += 40) {
        const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to: to.slice(i, i + 40), subject: 's', body: 'b' } })
        expect(res.status).toBe(200)
      }
      await sink.waitFor((s) => s.accepted >= 80, 30_000)
      expect(sink.maxOpenSessions).toBeLessThanOrEqual(LIMIT)
      expect(new Set(sink.received.map((m) => m.to.join())).size).toBe(80)
      expect(sink.accepted).toBe(80)
      // Both nodes delivered.
      expect(a.stats.settled).toBeGreaterThan(0)
      expect(b.stats.settled).toBeGreaterThan(0)
    } finally {
      await a.stop()
      await b.stop()
      await storeB.close()
    }
  }, 60_000)
})
