import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { TestEnv } from '../helpers/env'
import { describePrivatePg } from '../helpers/private-pg'
import { startSink, type Sink } from '../helpers/smtp'
import { until } from '../helpers/worker'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'

/**
 * A delivery result the store cannot write (issue 40, item 5): the receiver accepted the message, then the
 * write of that outcome fails (a private PostgreSQL server stopped as a crash would, then started again;
 * the recorder's handling is the same for SQLite's failures, SQLITE_FULL and SQLITE_BUSY, which
 * src/db/failures.ts classifies alike). The outcome is kept and written once the store is back;
 * the message is never sent again, even though its lease (3 s here) ran out meanwhile.
 */

const rnd = () => Math.random().toString(36).slice(2, 8)
const dns = await startTestDns()
// The receiver takes 1.5 s to answer DATA: the store fails while the message is on the wire.
const sink: Sink = await startSink({ delayMs: 1500 })

async function deliverThroughOutage(env: TestEnv, outage: { begin(): Promise<void> | void; end(): Promise<void> | void; ms: number }) {
  const p = await projectWithDomain(env, dns, `retry-${rnd()}.test`)
  const domain = `dest-${rnd()}.test`
  mxTo(dns, domain, '127.0.0.1')
  const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to: `a@${domain}`, subject: 'Hi', body: '<p>Hi</p>' } })
  expect(res.status).toBe(200)
  const id: string = res.body.data.emails[0].email
  const { emails } = env.store.t
  const status = async () => (await env.store.db.select({ status: emails.status }).from(emails).where(eq(emails.id, id)))[0]?.status
  const pl = pipelineFor(env, { leaseMs: 3000, pollMs: 50 })
  pl.start()
  try {
    // The message on the wire (built, its sender's key read): then the store fails.
    await until(() => (pl.transport.onWire?.() ?? 0) > 0, 20_000, 'the message to be on the wire')
    await Bun.sleep(300)
    await outage.begin()
    try {
      await sink.waitFor((s) => s.byMessageId(`<${id}@${p.domain}>`).length === 1, 20_000)
      // Past the lease's end, and until the outcome's write has failed.
      await Bun.sleep(outage.ms)
    } finally {
      await outage.end()
    }
    await until(async () => (await status()) === 'DELIVERED', 30_000, 'the kept outcome to be written')
    // Time for a second claim to have sent it again, had the outcome been dropped.
    await Bun.sleep(2000)
  } finally {
    await pl.stop()
  }
  expect(sink.byMessageId(`<${id}@${p.domain}>`)).toHaveLength(1)
  const { outboundQueue: q } = env.store.t
  expect(await env.store.db.select().from(q).where(eq(q.emailId, id))).toEqual([])
}

describePrivatePg('a delivery outcome the store cannot write [pg]', { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct', deliveryAllowHosts: ['127.0.0.0/8'] }, (s) => {
  test('is kept and written when the database is back; the accepted message is not sent again', async () => {
    await deliverThroughOutage(s.env, { ms: 6500, begin: () => s.pg.stop(), end: () => s.pg.start() })
  }, 120_000)
})
