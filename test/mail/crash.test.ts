import { expect, test } from 'bun:test'
import { and, eq, inArray, isNotNull } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { mxTo, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { startWorkerProcess, until } from '../helpers/worker'

/**
 * Crash safety: a real `mailctl serve --role worker` process delivers queued mail to a slow sink and is
 * killed with SIGKILL twice mid-delivery, then restarted. Every message must arrive, and no message whose
 * acceptance was recorded before a kill may arrive again; only the ones in flight on the connections
 * open at the kill may be repeated.
 */

const dns = await startTestDns()
const sink = await startSink({ delayMs: 60 })
mxTo(dns, 'crash.test')

const startWorker = (env: TestEnv) => startWorkerProcess(env, { mxPort: sink.port, dnsServer: dns.server })

forEachStore('crash safety', (env) => {
  test('kill -9 twice mid-delivery: everything arrives, nothing recorded as accepted arrives twice', async () => {
    const p = await projectWithDomain(env, dns, `crash-${Math.random().toString(36).slice(2, 8)}.test`)
    const N = 80
    const res = await env.request('POST', '/v1/send', {
      key: p.secretKey,
      body: { to: Array.from({ length: N }, (_, i) => `r${i}@crash.test`), from: p.from, subject: 'Crash {{email}}', body: '<p>x</p>' },
    })
    expect(res.status).toBe(200)
    const ids: string[] = res.body.data.emails.map((e: { email: string }) => e.email)
    const mid = (id: string) => `<${id}@${p.domain}>`
    const { emails, events, outboundQueue } = env.store.t
    const delivered = async () => new Set((await env.store.db.select({ id: emails.id }).from(emails)
      .where(and(inArray(emails.id, ids), eq(emails.status, 'DELIVERED')))).map((r) => r.id))
    const base = sink.received.length

    const kills: Array<{ at: number; openSessions: number; recorded: Set<string> }> = []
    for (const threshold of [15, 45]) {
      const child = startWorker(env)
      await until(() => sink.received.length - base >= threshold, 60_000, `${threshold} messages`)
      const openSessions = sink.openSessions
      child.kill('SIGKILL')
      await child.exited
      // The child is gone: what the store says now is everything it recorded.
      kills.push({ at: sink.received.length, openSessions, recorded: await delivered() })
    }
    expect(kills[1].recorded.size).toBeGreaterThan(kills[0].recorded.size)
    expect(kills[1].recorded.size).toBeLessThan(N)

    const child = startWorker(env)
    try {
      await until(async () => (await delivered()).size === N, 60_000, 'every message delivered after restart')
    } finally {
      child.kill('SIGTERM')
      await child.exited
    }

    const got = sink.received.slice(base)
    for (const id of ids) expect(got.filter((m) => m.messageId === mid(id)).length).toBeGreaterThanOrEqual(1)
    // Nothing whose acceptance was recorded before a kill reaches the host again after it.
    for (const k of kills) {
      const after = sink.received.slice(k.at).map((m) => m.messageId)
      for (const id of k.recorded) expect(after).not.toContain(mid(id))
    }
    // Repeats are bounded by the connections open at the kills (one message in flight each).
    const duplicates = got.length - new Set(got.map((m) => m.messageId)).size
    expect(duplicates).toBeLessThanOrEqual(kills.reduce((n, k) => n + k.openSessions, 0))
    // Each email has exactly one delivery event (a row, or its own row's: src/modules/events/inline.ts)
    // and is out of the queue.
    const deliveries = await env.store.db.select({ emailId: events.emailId }).from(events).where(eq(events.name, 'email.delivery'))
    const inline = await env.store.db.select({ emailId: emails.id }).from(emails).where(and(inArray(emails.id, ids), isNotNull(emails.inlineEvents)))
    const mine = [...deliveries, ...inline].filter((d) => d.emailId !== null && ids.includes(d.emailId))
    expect(mine.length).toBe(N)
    expect(new Set(mine.map((d) => d.emailId)).size).toBe(N)
    expect(await env.store.db.select().from(outboundQueue).where(inArray(outboundQueue.emailId, ids))).toEqual([])
  }, 180_000)
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
