import { expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'

/**
 * The pipeline under the production defaults (1,000 slots, batches of 100, a 1 s idle poll): a backlog of
 * thousands of messages to a stalled destination does not stop mail to the others (issue 34, item 1), and
 * a backlog due at start drains without waiting for the idle poll between claims (issue 40, item 1).
 */

const rnd = () => Math.random().toString(36).slice(2, 8)
const dns = await startTestDns()
const healthy = await startSink({})
// MAIL FROM accepted, RCPT TO never answered, on another loopback address (same port: MX records choose).
const stalled = await startSink({ host: '127.0.0.7', port: healthy.port, stallRcpt: true })
const stalled2 = await startSink({ host: '127.0.0.8', port: healthy.port, stallRcpt: true })

async function until(cond: () => Promise<boolean> | boolean, timeoutMs: number, what: string) {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(25)
  }
}

forEachStore('outbound isolation and wake-ups', (env) => {
  async function send(from: string, key: string, to: string[]): Promise<string[]> {
    const ids: string[] = []
    for (let i = 0; i < to.length; i += 1000) {
      const res = await env.request('POST', '/v1/send', { key, body: { from, subject: 'Hello', body: '<p>Hi</p>', to: to.slice(i, i + 1000) } })
      if (res.status !== 200) throw new Error(`send failed: ${res.status} ${res.text}`)
      ids.push(...res.body.data.emails.map((e: { email: string }) => e.email))
    }
    return ids
  }
  const statuses = async (ids: string[]) => {
    const { emails } = env.store.t
    return env.store.db.select({ id: emails.id, status: emails.status }).from(emails).where(inArray(emails.id, ids))
  }

  test('thousands of messages to a stalled destination: mail to another destination still goes out, and the backlog stays unclaimed in the queue', async () => {
    const p = await projectWithDomain(env, dns, `iso-${rnd()}.test`)
    const stuckDomain = `stall-${rnd()}.test`
    const okDomain = `ok-${rnd()}.test`
    mxTo(dns, stuckDomain, '127.0.0.7')
    mxTo(dns, okDomain, '127.0.0.1')
    // The production pipeline: 1,000 slots, batches of 100, the idle poll of 1 s.
    const pl = pipelineFor(env, { signerThreads: 2, pollMs: 1000, stopGraceMs: 200, smtp: { socketTimeoutMs: 120_000 } })
    pl.start()
    const stuck = await send(p.from, p.secretKey, Array.from({ length: 2000 }, (_, i) => `s${i}@${stuckDomain}`))
    await until(() => stalled.stalled > 0, 20_000, 'deliveries to hang at RCPT TO')
    await Bun.sleep(2000)
    const ok = await send(p.from, p.secretKey, Array.from({ length: 20 }, (_, i) => `h${i}@${okDomain}`))
    try {
      await until(async () => (await statuses(ok)).every((r) => r.status === 'DELIVERED'), 90_000, 'the healthy destination\'s 20 messages')
      // The stalled destination holds what its connections carry and no more: the rest was never claimed.
      const share = pl.shareOf(`mx.${stuckDomain}`)
      expect(pl.stats.claimed).toBeLessThanOrEqual(share + ok.length + 100)
      const { outboundQueue: q } = env.store.t
      const unclaimed = await env.store.db.select({ id: q.emailId }).from(q).where(inArray(q.emailId, stuck))
      expect(unclaimed.length).toBe(stuck.length)
    } finally {
      await pl.stop()
    }
    const { outboundQueue: q } = env.store.t
    await env.store.tx((db) => db.delete(q).where(inArray(q.emailId, stuck)))
  }, 300_000)

  test('stalled destinations give back what their connections do not carry: two of them cannot fill the pipeline', async () => {
    const p = await projectWithDomain(env, dns, `iso2-${rnd()}.test`)
    const a = `stall-a-${rnd()}.test`
    const b = `stall-b-${rnd()}.test`
    const okDomain = `ok2-${rnd()}.test`
    mxTo(dns, a, '127.0.0.7')
    mxTo(dns, b, '127.0.0.8')
    mxTo(dns, okDomain, '127.0.0.1')
    // 200 slots: each destination's share is 100 (half), so two stalled destinations would hold them all.
    const pl = pipelineFor(env, { signerThreads: 2, maxInFlight: 200, pollMs: 1000, stallMs: 1000, stopGraceMs: 200, smtp: { socketTimeoutMs: 120_000 } })
    expect(pl.shareOf(`mx.${a}`)).toBe(100)
    pl.start()
    const before = { a: stalled.stalled, b: stalled2.stalled }
    const stuck = [
      ...await send(p.from, p.secretKey, Array.from({ length: 1000 }, (_, i) => `a${i}@${a}`)),
      ...await send(p.from, p.secretKey, Array.from({ length: 1000 }, (_, i) => `b${i}@${b}`)),
    ]
    await until(() => stalled.stalled > before.a && stalled2.stalled > before.b, 20_000, 'both destinations to hang at RCPT TO')
    const ok = await send(p.from, p.secretKey, Array.from({ length: 20 }, (_, i) => `h${i}@${okDomain}`))
    try {
      await until(async () => (await statuses(ok)).every((r) => r.status === 'DELIVERED'), 90_000, 'the healthy destination\'s 20 messages')
      // Once found stalled (no message finished for stallMs), a destination holds what is on its
      // connections (8 each), not its share.
      const holds = (d: string) => pl.destinationsHeld()[`mx.${d}`] ?? 0
      await until(() => holds(a) <= 8 && holds(b) <= 8, 20_000, 'both stalled destinations to keep only their connections')
      // The messages given back are due again, never deferred: no attempt was spent on them.
      const { outboundQueue: q } = env.store.t
      const rows = () => env.store.db.select({ lockedBy: q.lockedBy, attempts: q.attempts }).from(q).where(inArray(q.emailId, stuck))
      // Their leases are released once the messages come back from the transport (asynchronously).
      await until(async () => (await rows()).filter((r) => r.lockedBy !== null).length <= 16, 20_000, 'the given-back messages\' leases to be released')
      const all = await rows()
      expect(all.length).toBe(stuck.length)
      expect(all.every((r) => r.attempts === 0)).toBe(true)
    } finally {
      await pl.stop()
    }
    const { outboundQueue: q } = env.store.t
    await env.store.tx((db) => db.delete(q).where(inArray(q.emailId, stuck)))
  }, 300_000)

  test('a backlog due at start drains through claim after claim, not one batch per idle poll', async () => {
    const p = await projectWithDomain(env, dns, `wake-${rnd()}.test`)
    const domain = `drain-${rnd()}.test`
    mxTo(dns, domain, '127.0.0.1')
    // Queued while no pipeline runs (as after a restart); then one pipeline with the production poll.
    const ids = await send(p.from, p.secretKey, Array.from({ length: 1200 }, (_, i) => `d${i}@${domain}`))
    // A poll long enough that a lost wake-up cannot be hidden by it: 1,200 messages in batches of 100
    // would take two minutes if each claim after the first waited for the poll.
    const pl = pipelineFor(env, { signerThreads: 2, pollMs: 10_000 })
    pl.start()
    try {
      await until(async () => (await statuses(ids)).every((r) => r.status === 'DELIVERED'), 240_000, 'the backlog to drain')
    } finally {
      await pl.stop()
    }
    expect(healthy.received.filter((m) => m.to.some((t) => t.endsWith(`@${domain}`)))).toHaveLength(ids.length)
    const { emails } = env.store.t
    const [row] = await env.store.db.select({ status: emails.status }).from(emails).where(eq(emails.id, ids[0]))
    expect(row.status).toBe('DELIVERED')
  }, 300_000)
}, { dnsServers: [dns.server], mxPort: healthy.port, outbound: 'direct' })
