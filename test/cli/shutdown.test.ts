import { expect, test } from 'bun:test'
import { and, count, eq, inArray, isNotNull } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { mxTo, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { startWorkerProcess, until } from '../helpers/worker'

/**
 * Graceful shutdown (issue 14) of a real `mailctl serve --role worker` process delivering to a slow
 * receiver: SIGTERM lets the messages on the wire finish and be recorded, hands back every claimed
 * message not yet started (due now, no holder), deletes the node row and exits 0 without waiting for the
 * backlog. A second signal exits at once through the "exiting now" path, not the default handler.
 */

const dns = await startTestDns()
const slow = await startSink({ host: '127.0.0.8', delayMs: 300 })
const stalled = await startSink({ host: '127.0.0.9', port: slow.port, stallRcpt: true })
mxTo(dns, 'slow.shutdown.test', '127.0.0.8')
mxTo(dns, 'stalled.shutdown.test', '127.0.0.9')

/** Reads a child's stdout into `out.text` as it comes. */
function collect(stream: ReadableStream<Uint8Array>, out: { text: string }) {
  void (async () => {
    const decoder = new TextDecoder()
    const reader = stream.getReader()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      out.text += decoder.decode(value, { stream: true })
    }
  })()
}

forEachStore('SIGTERM', (env) => {
  test('finishes what is on the wire, hands back what has not started, releases the leases and exits 0', async () => {
    const p = await projectWithDomain(env, dns, `sd-${Math.random().toString(36).slice(2, 8)}.test`)
    const N = 300
    const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: Array.from({ length: N }, (_, i) => `r${i}@slow.shutdown.test`), from: p.from, subject: 's', body: 'b' } })
    expect(res.status).toBe(200)
    const ids: string[] = res.body.data.emails.map((e: { email: string }) => e.email)
    const base = slow.accepted
    const child = startWorkerProcess(env, { mxPort: slow.port, dnsServer: dns.server }, { env: { MAILCTL_SHUTDOWN_GRACE_SECONDS: '60' } })
    await until(() => slow.accepted - base >= 5, 60_000, 'the first deliveries')
    child.kill('SIGTERM')
    expect(await child.exited).toBe(0)

    const { emails, outboundQueue, nodes } = env.store.t
    const [held] = await env.store.db.select({ n: count() }).from(outboundQueue).where(and(inArray(outboundQueue.emailId, ids), isNotNull(outboundQueue.lockedBy)))
    const [left] = await env.store.db.select({ n: count() }).from(outboundQueue).where(inArray(outboundQueue.emailId, ids))
    const [delivered] = await env.store.db.select({ n: count() }).from(emails).where(and(inArray(emails.id, ids), eq(emails.status, 'DELIVERED')))
    // No lease is left: another node may take the rest at once.
    expect(Number(held.n)).toBe(0)
    // The backlog was handed back, not delivered during the shutdown.
    expect(Number(left.n)).toBeGreaterThan(0)
    // Every message the receiver accepted was recorded before the exit; nothing else was delivered.
    expect(Number(delivered.n)).toBe(slow.accepted - base)
    expect(Number(delivered.n) + Number(left.n)).toBe(N)
    expect((await env.store.db.select().from(nodes)).length).toBe(0)

    // What was handed back is delivered by the next node, once each.
    const next = startWorkerProcess(env, { mxPort: slow.port, dnsServer: dns.server })
    try {
      slow.setDelay(0)
      await until(async () => Number((await env.store.db.select({ n: count() }).from(outboundQueue).where(inArray(outboundQueue.emailId, ids)))[0].n) === 0, 60_000, 'the rest delivered')
    } finally {
      next.kill('SIGTERM')
      await next.exited
      slow.setDelay(300)
    }
    expect(slow.accepted - base).toBe(N)
  }, 120_000)

  test('a second signal exits at once through the "exiting now" path', async () => {
    const p = await projectWithDomain(env, dns, `sd2-${Math.random().toString(36).slice(2, 8)}.test`)
    const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: ['a@stalled.shutdown.test'], from: p.from, subject: 's', body: 'b' } })
    expect(res.status).toBe(200)
    const before = stalled.stalled
    const child = startWorkerProcess(env, { mxPort: slow.port, dnsServer: dns.server }, { env: { MAILCTL_SHUTDOWN_GRACE_SECONDS: '600', MAILCTL_LOG_LEVEL: 'info' }, stdout: 'pipe' })
    const out = { text: '' }
    collect(child.stdout as ReadableStream<Uint8Array>, out)
    await until(() => stalled.stalled > before, 60_000, 'a delivery stalled at RCPT')
    child.kill('SIGTERM')
    await until(() => out.text.includes('"shutting down"'), 30_000, 'the shutdown to begin')
    child.kill('SIGTERM')
    expect(await child.exited).toBe(1)
    expect(child.signalCode).toBeNull()
    await until(() => out.text.includes('second signal: exiting now'), 5_000, 'the exiting-now line')
  }, 90_000)
}, { outbound: 'direct', dnsServers: [dns.server] })
