import { expect, test } from 'bun:test'
import { and, eq, inArray } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { must } from '../../helpers/must'
import { startWorkerProcess, until } from '../../helpers/worker'
import { ctxFor } from '../../../src/deps'
import { upsertMany } from '../../../src/modules/contacts/service'
import { mxTo, projectWithDomain, startTestDns } from '../emails/fixture'

/**
 * Crash safety of a campaign: a real `mailctl serve --role worker` fans a 2,000-recipient campaign out and
 * delivers it to a slow sink; it is killed with SIGKILL once during the fan-out (after its first committed
 * batch, when the poll catches it) and once during delivery, then restarted. Every recipient gets the
 * message; a recipient gets it twice only when it was in flight on a connection open at a kill.
 */

const dns = await startTestDns()
const sink = await startSink({ delayMs: 20 })
mxTo(dns, 'campcrash.test')
const N = 2000

const startWorker = (env: TestEnv) => startWorkerProcess(env, { mxPort: sink.port, dnsServer: dns.server })

forEachStore('campaign crash safety', (env) => {
  test('kill -9 during the fan-out and during delivery: one message per recipient, repeats only for the in-flight ones', async () => {
    const p = await projectWithDomain(env, dns, `cc-${Math.random().toString(36).slice(2, 8)}.test`)
    const tag = Math.random().toString(36).slice(2, 8)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await env.store.tx((db) => upsertMany(ctx, db, Array.from({ length: N }, (_, i) => ({ email: `${tag}-${i}@campcrash.test`, subscribed: true, data: { n: i } })), { defaultSubscribed: true }))
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name: 'Big', subject: 'No {{n}}', body: '<p>n={{n}}</p>', from: p.from, audienceType: 'ALL' } })
    expect(c.status).toBe(200)
    const id = c.body.data.id as string
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })).status).toBe(200)

    const { emails, campaigns } = env.store.t
    const campaign = async () => must((await env.store.db.select().from(campaigns).where(eq(campaigns.id, id)))[0], 'campaign')
    const deliveredIds = async () => new Set((await env.store.db.select({ id: emails.id }).from(emails)
      .where(and(eq(emails.campaignId, id), eq(emails.status, 'DELIVERED')))).map((r) => r.id))
    const base = sink.received.length
    const mine = () => sink.received.slice(base).filter((m) => m.to[0]?.startsWith(`${tag}-`))

    const kills: Array<{ at: number; openSessions: number; recorded: Set<string> }> = []
    // First kill: as soon as the fan-out has committed a batch. Second: in the middle of delivery.
    const conditions: Array<[() => Promise<boolean>, string]> = [
      [async () => (await campaign()).totalRecipients > 0, 'the first batch'],
      [async () => mine().length >= N / 3, 'a third of the messages'],
    ]
    for (const [cond, what] of conditions) {
      const child = startWorker(env)
      await until(cond, 120_000, what, 2)
      const openSessions = sink.openSessions
      child.kill('SIGKILL')
      await child.exited
      kills.push({ at: sink.received.length, openSessions, recorded: await deliveredIds() })
    }
    const child = startWorker(env)
    try {
      await until(async () => (await deliveredIds()).size === N, 180_000, 'every message delivered after the restarts', 2)
    } finally {
      child.kill('SIGTERM')
      await child.exited
    }

    const after = await campaign()
    expect(after).toMatchObject({ status: 'SENT', totalRecipients: N, sentCount: N })
    // Exactly one email per contact was queued, whatever the kills interrupted.
    const rows = await env.store.db.select({ to: emails.toAddress, id: emails.id }).from(emails).where(eq(emails.campaignId, id))
    expect(rows.length).toBe(N)
    expect(new Set(rows.map((r) => r.to)).size).toBe(N)
    // Every recipient got it; nothing recorded as accepted before a kill arrived again after it.
    const got = mine()
    expect(new Set(got.map((m) => m.to[0])).size).toBe(N)
    const mid = new Map(rows.map((r) => [r.id, `<${r.id}@${p.domain}>`]))
    for (const k of kills) {
      const later = new Set(sink.received.slice(k.at).map((m) => m.messageId))
      for (const emailId of k.recorded) expect(later.has(must(mid.get(emailId), 'message id'))).toBe(false)
    }
    const duplicates = got.length - new Set(got.map((m) => m.messageId)).size
    expect(duplicates).toBeLessThanOrEqual(kills.reduce((n, k) => n + k.openSessions, 0))
    expect(await env.store.db.select().from(env.store.t.outboundQueue).where(inArray(env.store.t.outboundQueue.emailId, rows.map((r) => r.id).slice(0, 500)))).toEqual([])
  }, 400_000)
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
