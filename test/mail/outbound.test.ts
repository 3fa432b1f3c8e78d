import { beforeAll, expect, test } from 'bun:test'
import { and, eq, inArray } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import { forEachStore } from '../helpers/env'
import { behind } from '../helpers/clock'
import { parseUnsubscribeAddress } from '../../src/mail/outbound/verp'
import { byDomain, rejectRecipients, startSink, tempFailThenAccept, tooManyConnections } from '../helpers/smtp'
import { nullMx } from '../helpers/dns'
import { dkimOf, mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { ctxFor } from '../../src/deps'
import { createTemplate } from '../../src/modules/templates/service'
import { createOutbound, createTransport } from '../../src/mail/outbound'
import type { Logger } from '../../src/log'
import { CaptureTransport } from '../../src/mail/outbound/capture'
import { listCaptured } from '../../src/mail/outbound/capture-repo'
import { deferredEntries, outboundLeases, queueStats } from '../../src/mail/outbound/queue-repo'
import { leaseEnd, renew } from '../../src/jobs/lease'
import { NODE_STALE_MS, NodeRegistry } from '../../src/jobs/nodes'
import { hostname } from 'node:os'
import { parseVerp, verpAddress } from '../../src/mail/outbound/verp'
import { returnPathDomain } from '../../src/modules/domains/service'
import { must } from '../helpers/must'
import { emailEvents } from '../../src/modules/emails/repo'
import { BASE_EVENT_NAMES } from '../../src/modules/events/email-base'
import { deliveryStore } from '../../src/modules/emails/delivery'

/**
 * Delivery through real SMTP sinks found through a real DNS server on loopback: what arrives (DKIM,
 * VERP, rendering, attachments, List-Unsubscribe), retries, bounces, throttling, MX fallback, the smart
 * host, capture, expiry and the records and events each outcome leaves.
 */

interface ParsedMail {
  subject?: string
  html: string | false
  text?: string
  headers: Map<string, unknown>
  attachments: Array<{ filename?: string; content: Buffer; contentType: string; contentId?: string; contentDisposition?: string }>
}
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer) => Promise<ParsedMail> }

const rnd = () => Math.random().toString(36).slice(2, 8)
const dns = await startTestDns()
const main = await startSink({
  script: byDomain({
    'greylist.test': tempFailThenAccept(2),
    'reject.test': rejectRecipients('550 5.1.1 <user> No such user here'),
    'policy.test': (c) => (c.stage === 'data' ? '550 5.7.1 Message rejected as spam' : null),
    'hint.test': (c) => (c.stage === 'data' ? '451 4.7.1 Greylisted, please try again in 300 seconds' : null),
    'ratelimit.test': tempFailThenAccept(1, '451 4.7.1 Rate limited: too many messages, slow down'),
    'ratelimit2.test': tempFailThenAccept(2, '451 4.7.1 Rate limited: too many messages, slow down'),
  }),
})
// Same port on other loopback addresses: MX records choose the sink, MAILCTL_MX_PORT stays one number.
const busy = await startSink({ host: '127.0.0.3', port: main.port, script: tooManyConnections(2), delayMs: 30 })
const relay = await startSink({ host: '127.0.0.4', auth: { user: 'relayuser', pass: 's3cret' } })

for (const d of ['dest.test', 'greylist.test', 'reject.test', 'policy.test', 'hint.test', 'ratelimit.test', 'ratelimit2.test']) mxTo(dns, d)
mxTo(dns, 'busy.test', '127.0.0.3')
mxTo(dns, 'fallback.test', '127.0.0.2', 'mx1.fallback.test', 10) // nothing listens on 127.0.0.2
mxTo(dns, 'fallback.test', '127.0.0.1', 'mx2.fallback.test', 20)
dns.set('amx.test', [{ type: 'A', address: '127.0.0.1' }])
dns.set('nullmx.test', [nullMx()])

async function until(cond: () => Promise<boolean> | boolean, timeoutMs = 20_000, what = 'condition') {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(25)
  }
}

forEachStore('outbound delivery', (env) => {
  let p: Awaited<ReturnType<typeof projectWithDomain>>

  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `out-${rnd()}.test`)
  })

  async function send(body: Record<string, unknown>, key = p.secretKey): Promise<string[]> {
    const res = await env.request('POST', '/v1/send', { key, body: { from: p.from, subject: 'Hello', body: '<p>Hi</p>', ...body } })
    if (res.status !== 200) throw new Error(`send failed: ${res.status} ${res.text}`)
    return res.body.data.emails.map((e: { email: string }) => e.email)
  }
  const email = async (id: string) => {
    const { emails } = env.store.t
    return (await env.store.db.select().from(emails).where(eq(emails.id, id)))[0]
  }
  /** The events of an email, oldest first, with their data as every reader sees it (the email's base put back). */
  // Through the reader (stored rows and a direct delivery's inline events alike: src/modules/events/inline.ts).
  const eventsOf = async (id: string) => {
    const { emails } = env.store.t
    const [m] = await env.store.db.select({ projectId: emails.projectId }).from(emails).where(eq(emails.id, id))
    return m ? emailEvents(env.store, m.projectId, id, [...BASE_EVENT_NAMES]) : []
  }
  const queueRow = async (id: string) => {
    const { outboundQueue } = env.store.t
    return (await env.store.db.select().from(outboundQueue).where(eq(outboundQueue.emailId, id)))[0] ?? null
  }
  const mid = (id: string, domain = p.domain) => `<${id}@${domain}>`
  const statusIs = (id: string, status: string) => async () => (await email(id))?.status === status

  test('what arrives: DKIM passes against the published key, VERP return-path, rendered variables, intact attachments', async () => {
    const bytes = randomBytes(3000)
    const png = randomBytes(200)
    const [id] = await send({
      to: { name: 'Rcpt Person', email: `r.${rnd()}@dest.test` },
      subject: 'Order {{order}} for {{name}}',
      body: '<p>Dear {{name}}, total {{total}}</p><img src="cid:logo@x">',
      data: { name: 'Ann <b>&', order: 42, total: { value: '9.99', persistent: false } },
      reply: 'help@example.org',
      attachments: [
        { filename: 'data.bin', content: bytes.toString('base64'), contentType: 'application/octet-stream' },
        { filename: 'logo.png', content: png.toString('base64'), contentType: 'image/png', contentId: 'logo@x', disposition: 'inline' },
      ],
    })
    const pl = pipelineFor(env)
    await pl.drain()
    const [msg] = main.byMessageId(mid(id))
    expect(msg).toBeDefined()
    expect(main.byMessageId(mid(id))).toHaveLength(1)
    // Envelope: the VERP address on the verified bounce subdomain, naming this email.
    expect(msg.from).toBe(verpAddress(env.deps, id, returnPathDomain(p.domain)))
    expect(parseVerp(env.deps, msg.from)).toEqual({ emailId: id, domain: returnPathDomain(p.domain) })
    expect(parseVerp(env.deps, msg.from.replace(/\.[0-9a-f]{10}@/, '.0000000000@'))).toBeNull()
    expect(msg.clientHostname).toBe(env.config.hostname)
    expect(msg.secure).toBe(true) // opportunistic STARTTLS: the sink offers it
    // DKIM, verified by mailauth with the key published in DNS.
    const [dkim] = await dkimOf(msg.raw, dns)
    expect(dkim.status.result).toBe('pass')
    expect(dkim.signingDomain).toBe(p.domain)
    expect(dkim.format).toBe('relaxed/relaxed')
    const signed = String(dkim.signingHeaders?.keys).toLowerCase().split(/:\s*/)
    for (const h of ['from', 'to', 'subject', 'date', 'message-id', 'reply-to']) expect(signed).toContain(h)
    const parsed = await simpleParser(msg.raw)
    expect(parsed.subject).toBe('Order 42 for Ann <b>&')
    expect(parsed.html).toContain('Dear Ann &lt;b&gt;&amp;, total 9.99')
    expect(parsed.text).toContain('Dear Ann <b>&, total 9.99')
    expect(msg.raw.toString('latin1')).not.toMatch(/^List-Unsubscribe/im)
    const bin = must(parsed.attachments.find((a) => a.filename === 'data.bin'), 'data.bin')
    expect(Buffer.compare(bin.content, bytes)).toBe(0)
    const logo = must(parsed.attachments.find((a) => a.contentId === '<logo@x>'), 'the inline logo')
    expect(Buffer.compare(logo.content, png)).toBe(0)
    // The record and the events.
    const row = await email(id)
    expect(row).toMatchObject({ status: 'DELIVERED', attempts: 1, deliveredTo: `mx.dest.test[127.0.0.1]:${main.port}` })
    expect(row.sentAt).toBeInstanceOf(Date)
    expect(row.deliveredAt).toBeInstanceOf(Date)
    const { emailContents } = env.store.t
    const [content] = await env.store.db.select().from(emailContents).where(eq(emailContents.emailId, id))
    expect(content.attachments?.map((a) => [a.filename, a.content, a.size])).toEqual([['data.bin', null, 3000], ['logo.png', null, 200]])
    expect(await queueRow(id)).toBeNull()
    const evs = await eventsOf(id)
    expect(evs.map((e) => e.name).sort()).toEqual(['email.delivery', 'email.sent'])
    expect(evs.find((e) => e.name === 'email.delivery')?.data).toMatchObject({ emailId: id, messageId: mid(id), subject: 'Order 42 for Ann <b>&', from: p.from, sourceType: 'send', smtpCode: 250, tls: true })
  })

  test('marketing mail carries one-click List-Unsubscribe and List-Unsubscribe-Post, both DKIM-signed', async () => {
    const tpl = await createTemplate(ctxFor(env.deps, p.id, { kind: 'cli' }), { name: 'News', subject: 'News', body: '<p>News</p>', from: p.from, type: 'MARKETING' })
    const [id] = await send({ to: `m.${rnd()}@dest.test`, template: tpl.id, subject: undefined, body: undefined, from: undefined })
    await pipelineFor(env).drain()
    const [msg] = main.byMessageId(mid(id))
    const head = msg.raw.toString('latin1').split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' ')
    // The one-click https URL, then the mailto (RFC 2369) that a message to unsubscribes (src/mail/outbound/verp.ts).
    const lu = /^List-Unsubscribe: <([^>]+)>, <mailto:([^>?]+)\?subject=unsubscribe>$/m.exec(head)
    expect(lu?.[1]).toStartWith(`${env.config.publicUrl}/unsubscribe/`)
    expect(parseUnsubscribeAddress(env.deps, lu?.[2] ?? '')?.emailId).toBe(id)
    expect(head).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m)
    const [dkim] = await dkimOf(msg.raw, dns)
    expect(dkim.status.result).toBe('pass')
    const signed = String(dkim.signingHeaders?.keys).toLowerCase().split(/:\s*/)
    expect(signed).toContain('list-unsubscribe')
    expect(signed).toContain('list-unsubscribe-post')
  })

  test('451 twice then 250: the message arrives once, after retries honouring the server\'s hint', async () => {
    const to = `g.${rnd()}@greylist.test`
    const [id] = await send({ to })
    const pl = pipelineFor(env)
    pl.start()
    await until(statusIs(id, 'DELIVERED'), 20_000, 'greylisted delivery')
    await pl.stop()
    expect(main.byMessageId(mid(id))).toHaveLength(1)
    expect(main.attempts.filter((a) => a.key === mid(id))).toHaveLength(2)
    const row = await email(id)
    expect(row.attempts).toBe(3)
    // Every attempt leaves its SMTP reply: an email.deferred per deferral, then the final outcome's events.
    const evs = await eventsOf(id)
    expect(evs.map((e) => e.name).sort()).toEqual(['email.deferred', 'email.deferred', 'email.delivery', 'email.sent'])
    const deferred = evs.filter((e) => e.name === 'email.deferred').map((e) => e.data)
    expect(deferred.map((d) => d.attempt)).toEqual([1, 2])
    for (const d of deferred) expect(d).toMatchObject({ smtpCode: 451, enhancedCode: '4.7.1', emailId: id })
    expect(must(evs.find((e) => e.name === 'email.delivery'), 'email.delivery').data).toMatchObject({ attempt: 3, smtpCode: 250 })
  })

  test('550 at RCPT: hard bounce with the SMTP reply, the address suppressed, no retry, subscription untouched', async () => {
    const to = `gone.${rnd()}@reject.test`
    const [id] = await send({ to, subscribed: true })
    const pl = pipelineFor(env)
    await pl.drain()
    const row = await email(id)
    expect(row).toMatchObject({ status: 'BOUNCED', bounceType: 'hard', attempts: 1 })
    expect(row.lastReply).toContain('550 5.1.1')
    expect(await queueRow(id)).toBeNull()
    const bounce = must((await eventsOf(id)).find((e) => e.name === 'email.bounce'), 'an email.bounce event')
    expect(bounce.data).toMatchObject({ bounceType: 'hard', smtpCode: 550, enhancedCode: '5.1.1', suppressed: true, emailId: id })
    expect(String(bounce.data.reply)).toContain('No such user')
    const { suppressions, contacts } = env.store.t
    const [s] = await env.store.db.select().from(suppressions).where(and(eq(suppressions.projectId, p.id), eq(suppressions.email, to)))
    expect(s).toMatchObject({ reason: 'bounce', emailId: id })
    expect(s.detail).toContain('550 5.1.1')
    const [c] = await env.store.db.select().from(contacts).where(and(eq(contacts.projectId, p.id), eq(contacts.email, to)))
    expect(c.subscribed).toBe(true)
    // No retry: nothing more reaches the server for this address.
    await pl.drain()
    expect(main.attempts.filter((a) => a.key === to)).toHaveLength(1)
    // The next send is refused for this address and says why; GET /suppressions shows it.
    const again = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to, from: p.from, subject: 's', body: 'b' } })
    expect(again.body.data).toMatchObject({ emails: [{ contact: { email: to }, status: 'suppressed', reason: 'bounce' }] })
    const list = await env.request('GET', '/suppressions?reason=bounce', { key: p.secretKey })
    expect(list.body.data.map((x: { email: string }) => x.email)).toContain(to)
  })

  test('a content refusal (550 5.7.1) bounces without suppressing the address', async () => {
    const to = `spam.${rnd()}@policy.test`
    const [id] = await send({ to })
    await pipelineFor(env).drain()
    expect(await email(id)).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
    expect((await eventsOf(id)).find((e) => e.name === 'email.bounce')?.data).toMatchObject({ suppressed: false, enhancedCode: '5.7.1' })
    const { suppressions } = env.store.t
    expect(await env.store.db.select().from(suppressions).where(eq(suppressions.email, to))).toEqual([])
  })

  test('a temporary failure is retried at the time the server asked for, and shows in the queue stats', async () => {
    const to = `later.${rnd()}@hint.test`
    const [id] = await send({ to })
    await pipelineFor(env).drain()
    const q = await queueRow(id)
    const row = await email(id)
    expect(row).toMatchObject({ status: 'SENDING', attempts: 1 })
    expect(row.lastReply).toContain('try again in 300 seconds')
    expect(q).toMatchObject({ attempts: 1, lockedBy: null })
    const delay = must(q, 'the queue row').runAt.getTime() - row.updatedAt.getTime()
    expect(delay).toBeGreaterThanOrEqual(299_000)
    expect(delay).toBeLessThanOrEqual(301_000)
    const stats = await queueStats(env.store, new Date())
    expect(stats.deferred).toBeGreaterThanOrEqual(1)
    expect(stats.nextRetryAt).toBeInstanceOf(Date)
    expect((await deferredEntries(env.store, 100, new Date())).map((d) => d.emailId)).toContain(id)
    // The deferral is an event of its own, with the reply and the time of the next attempt.
    const [deferral] = await eventsOf(id)
    expect(deferral).toMatchObject({ name: 'email.deferred', data: { attempt: 1, smtpCode: 451, throttled: false, nextAttemptAt: must(q, 'the queue row').runAt.toISOString() } })
    // Once the retry period is over, the next failure gives up: a soft bounce, no suppression.
    const { outboundQueue } = env.store.t
    await env.store.tx((db) => db.update(outboundQueue).set({ runAt: new Date(Date.now() - 1000), expiresAt: new Date(Date.now() - 1000) }).where(eq(outboundQueue.emailId, id)))
    await pipelineFor(env).drain()
    expect(await email(id)).toMatchObject({ status: 'BOUNCED', bounceType: 'soft', attempts: 2 })
    expect((await eventsOf(id)).map((e) => [e.name, e.data.bounceType, e.data.suppressed])).toEqual([['email.deferred', undefined, undefined], ['email.bounce', 'soft', false]])
    expect(await queueRow(id)).toBeNull()
  })

  test('a "rate limited" refusal at DATA is sent again once in the attempt, paced; a second one is a throttled deferral, retried soon', async () => {
    const [once] = await send({ to: `r.${rnd()}@ratelimit.test` })
    const [twice] = await send({ to: `r.${rnd()}@ratelimit2.test` })
    await pipelineFor(env).drain()
    expect(await email(once)).toMatchObject({ status: 'DELIVERED', attempts: 1 })
    expect(main.byMessageId(mid(once))).toHaveLength(1)
    expect((await eventsOf(once)).map((e) => e.name)).not.toContain('email.deferred')
    // Refused twice: deferred as throttled (the throttle delay, 100 ms in these tests, not the 1-minute
    // backoff of other 4xx replies).
    const [deferral] = await eventsOf(twice)
    expect(deferral).toMatchObject({ name: 'email.deferred', data: { attempt: 1, smtpCode: 451, throttled: true } })
  })

  test('421 "too many connections": the destination\'s concurrency backs off and every message arrives once', async () => {
    const ids = await send({ to: Array.from({ length: 16 }, (_, i) => `b${i}.${rnd()}@busy.test`) })
    const pl = pipelineFor(env)
    pl.start()
    await until(async () => (await Promise.all(ids.map((id) => email(id)))).every((r) => r.status === 'DELIVERED'), 30_000, 'throttled deliveries')
    await pl.stop()
    for (const id of ids) expect(busy.byMessageId(mid(id))).toHaveLength(1)
    expect(busy.attempts.some((a) => a.stage === 'connect' && a.reply.startsWith('421'))).toBe(true)
    const dest = must(pl.transport.destinations().find((d) => d.key === 'mx.busy.test'), 'the mx.busy.test destination')
    expect(dest.limit).toBeLessThan(8)
  })

  test('a backlog to a stalled destination takes only its share of the pipeline: mail to the others is delivered', async () => {
    // MAIL FROM accepted, RCPT TO never answered; more messages queued to it than the pipeline has slots.
    const stalled = await startSink({ host: '127.0.0.5', port: main.port, stallRcpt: true })
    const domain = `stall-${rnd()}.test`
    mxTo(dns, domain, '127.0.0.5')
    const stuck = await send({ to: Array.from({ length: 60 }, (_, i) => `s${i}.${rnd()}@${domain}`) })
    const healthy = await send({ to: Array.from({ length: 10 }, (_, i) => `h${i}.${rnd()}@dest.test`) })
    const pl = pipelineFor(env, { maxInFlight: 20, batchSize: 10, stopGraceMs: 200 })
    pl.start()
    try {
      await main.waitFor(() => healthy.every((id) => main.byMessageId(mid(id)).length === 1))
      await until(async () => (await Promise.all(healthy.map((id) => email(id)))).every((r) => r.status === 'DELIVERED'), 20_000, 'healthy deliveries recorded')
      // The stalled messages are all still queued, none delivered; only the destination's share reached it.
      expect(stalled.received).toEqual([])
      // The healthy mail may all be through before a connection to the stalled host reaches RCPT TO.
      await until(() => stalled.stalled > 0, 20_000, 'a delivery to the stalled destination to hang at RCPT TO')
      expect(stalled.stalled).toBeLessThanOrEqual(10)
      // Its backlog is not claimed again and again: its share (10, half the slots) and one batch held.
      expect(pl.stats.claimed).toBeLessThanOrEqual(healthy.length + 20)
      for (const id of stuck) {
        expect(await queueRow(id)).not.toBeNull()
        expect((await email(id)).status).not.toBe('DELIVERED')
      }
    } finally {
      // The stalled server does not hold the shutdown: after the grace period the pipeline closes its
      // connections, records their messages as deferred and hands back what it held.
      await pl.stop()
      await stalled.close()
    }
    const rows = await Promise.all(stuck.map(queueRow))
    for (const row of rows) expect(row).toMatchObject({ lockedBy: null })
    expect(rows.filter((r) => r.attempts > 0).length).toBeGreaterThanOrEqual(stalled.stalled)
    const { outboundQueue } = env.store.t
    await env.store.tx((db) => db.delete(outboundQueue).where(inArray(outboundQueue.emailId, stuck)))
  }, 60_000)

  test('a destination\'s share is what its connections carry plus what the signer threads hold, at most half the pipeline', async () => {
    // The throttle starts a destination at 8 connections, 4 messages each; a thread holds two batches of 32.
    const key = `mx-${rnd()}.test`
    expect(pipelineFor(env, { signerThreads: 0 }).shareOf(key)).toBe(32)
    expect(pipelineFor(env, { signerThreads: 2 }).shareOf(key)).toBe(32 + 2 * 32 * 2)
    expect(pipelineFor(env, { signerThreads: 2, maxInFlight: 100 }).shareOf(key)).toBe(50)
  })

  test('a busy destination\'s share feeds every connection its limit allows', async () => {
    // A slow receiver and more mail than the share: the pipeline still keeps the limit's 8 connections busy.
    const slow = await startSink({ host: '127.0.0.6', port: main.port, delayMs: 400 })
    const domain = `slow-${rnd()}.test`
    mxTo(dns, domain, '127.0.0.6')
    const ids = await send({ to: Array.from({ length: 24 }, (_, i) => `w${i}.${rnd()}@${domain}`) })
    const pl = pipelineFor(env, { maxInFlight: 20, batchSize: 10 })
    try {
      await pl.drain()
      expect(slow.received).toHaveLength(24)
      // 8 at first; the limit grows by one every 20 successes.
      expect(slow.maxOpenSessions).toBeGreaterThanOrEqual(8)
      for (const id of ids) expect((await email(id)).status).toBe('DELIVERED')
    } finally {
      await pl.stop()
      await slow.close()
    }
  })

  test('the delivery log line carries the SMTP reply once ("250 OK …", not "250 250 OK …")', async () => {
    const lines: Array<{ msg: string; fields: Record<string, unknown> }> = []
    const at = (msg: string, fields: Record<string, unknown> = {}) => { lines.push({ msg, fields }) }
    const log: Logger = { debug: at, info: at, warn: at, error: at, child: () => log }
    const [ok] = await send({ to: `logged.${rnd()}@dest.test` })
    const [gone] = await send({ to: `logged.${rnd()}@reject.test` })
    const pl = createOutbound({ ...env.deps, log }, deliveryStore, { signerThreads: 0, pollMs: 50 })
    env.onStop(() => pl.stop())
    await pl.drain()
    const line = (id: string) => must(lines.find((l) => l.msg === 'delivery' && l.fields.emailId === id), `the delivery line of ${id}`).fields
    expect(line(ok)).toMatchObject({ outcome: 'accepted' })
    expect(line(ok).reply).toBe('250 OK: message queued')
    expect(line(gone).reply).toBe('550 5.1.1 <user> No such user here')
    expect(line(gone)).toMatchObject({ outcome: 'bounced' })
  })

  test('an MX on an internal address is refused (MAILCTL_DELIVERY_ALLOW_HOSTS unset): bounced with the reason, nothing connects; allowed by name it goes out', async () => {
    const inner = await startSink({ host: '127.0.0.5', port: main.port })
    try {
      const d = `internal-${rnd()}.test`
      mxTo(dns, d, '127.0.0.5', `mx.${d}`)
      const to = `x.${rnd()}@${d}`
      const [id] = await send({ to })
      await pipelineFor(env, { transport: createTransport({ ...env.config, deliveryAllowHosts: [] }) }).drain()
      const row = await email(id)
      expect(row).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
      expect(row.lastReply).toContain('550 5.4.4')
      expect(row.lastReply).toContain(`mx.${d} 127.0.0.5: loopback`)
      const bounce = must((await eventsOf(id)).find((e) => e.name === 'email.bounce'), 'an email.bounce event')
      expect(bounce.data).toMatchObject({ smtpCode: 550, enhancedCode: '5.4.4', suppressed: false, host: null })
      expect(inner.maxOpenSessions).toBe(0)
      const attempts = await env.request('GET', `/emails/${id}/attempts`, { key: p.secretKey })
      expect(attempts.status).toBe(200)
      expect(attempts.text).toContain('internal addresses')
      expect(attempts.text).not.toContain('ESMTP')
      const { suppressions } = env.store.t
      expect(await env.store.db.select().from(suppressions).where(eq(suppressions.email, to))).toEqual([])
      // The operator allows the MX host by name: delivered.
      const [id2] = await send({ to: `y.${rnd()}@${d}` })
      const allowed = pipelineFor(env, { transport: createTransport({ ...env.config, deliveryAllowHosts: [`mx.${d}`] }) })
      await allowed.drain()
      // Its pooled connection closed now, so the sink closes at once.
      await allowed.stop()
      expect(await email(id2)).toMatchObject({ status: 'DELIVERED' })
      expect(inner.byMessageId(mid(id2))).toHaveLength(1)
    } finally {
      await inner.close()
    }
  })

  test('opportunistic TLS: an MX whose STARTTLS handshake fails (TLS 1.0 only) gets the mail in clear in the same attempt, and the attempt says why', async () => {
    const old = await startSink({ host: '127.0.0.6', port: main.port, tls10Only: true })
    try {
      const d = `tls10-${rnd()}.test`
      mxTo(dns, d, '127.0.0.6', `mx.${d}`)
      const ids = await send({ to: [`a.${rnd()}@${d}`, `b.${rnd()}@${d}`] })
      const pl = pipelineFor(env)
      await pl.drain()
      await pl.stop()
      for (const id of ids) {
        expect(await email(id)).toMatchObject({ status: 'DELIVERED', attempts: 1 })
        const [msg] = old.byMessageId(mid(id))
        expect(msg.secure).toBe(false)
        const delivery = must((await eventsOf(id)).find((e) => e.name === 'email.delivery'), 'email.delivery')
        expect(delivery.data).toMatchObject({ tls: false })
        expect(String(delivery.data.tlsNote)).toMatch(/TLS handshake (with this server )?failed/)
        const attempts = await env.request('GET', `/emails/${id}/attempts`, { key: p.secretKey })
        expect(attempts.body.data).toHaveLength(1)
        expect(attempts.body.data[0]).toMatchObject({ outcome: 'accepted', tls: false })
        expect(attempts.body.data[0].tlsNote).toContain('PROTOCOL_VERSION')
      }
      // A server with working STARTTLS: encrypted, no note.
      const [ok] = await send({ to: `c.${rnd()}@dest.test` })
      await pipelineFor(env).drain()
      const a = await env.request('GET', `/emails/${ok}/attempts`, { key: p.secretKey })
      expect(a.body.data[0]).toMatchObject({ outcome: 'accepted', tls: true, tlsNote: null })
    } finally {
      await old.close()
    }
  })

  test('MX hosts are tried in preference order: an unreachable primary falls back to the secondary', async () => {
    const [id] = await send({ to: `f.${rnd()}@fallback.test` })
    await pipelineFor(env, { smtp: { connectTimeoutMs: 2000 } }).drain()
    expect(await email(id)).toMatchObject({ status: 'DELIVERED', deliveredTo: `mx2.fallback.test[127.0.0.1]:${main.port}` })
    expect(main.byMessageId(mid(id))).toHaveLength(1)
  })

  test('no MX record: the domain\'s own address (implicit MX)', async () => {
    const [id] = await send({ to: `a.${rnd()}@amx.test` })
    await pipelineFor(env).drain()
    expect(await email(id)).toMatchObject({ status: 'DELIVERED', deliveredTo: `amx.test[127.0.0.1]:${main.port}` })
  })

  test('null MX and unknown domains bounce at once; a DNS failure is retried', async () => {
    // Unique names: the delivery resolver caches answers for their TTL, process-wide.
    const flaky = `sf-${rnd()}.test`
    dns.fail(flaky, 'SERVFAIL')
    const [nullId, nxId, tempId] = await send({ to: [`n.${rnd()}@nullmx.test`, `x.${rnd()}@nx-${rnd()}.test`, `t.${rnd()}@${flaky}`] })
    await pipelineFor(env).drain()
    expect(await email(nullId)).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
    expect((await email(nullId)).lastReply).toContain('556 5.1.10')
    expect(await email(nxId)).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
    expect((await email(nxId)).lastReply).toContain('does not exist')
    const temp = await email(tempId)
    expect(temp.status).toBe('SENDING')
    expect(temp.lastReply).toContain('4.4.3')
    expect((await queueRow(tempId))?.attempts).toBe(1)
    // DNS answers again: the retry delivers.
    dns.fail(flaky, null)
    mxTo(dns, flaky)
    const { outboundQueue } = env.store.t
    await env.store.tx((db) => db.update(outboundQueue).set({ runAt: new Date(Date.now() - 1000) }).where(eq(outboundQueue.emailId, tempId)))
    await pipelineFor(env).drain()
    expect(await email(tempId)).toMatchObject({ status: 'DELIVERED', attempts: 2 })
  })

  test('smart host: relayed with AUTH, recorded as SENT (not delivered); a wrong password defers', async () => {
    const [id] = await send({ to: `sh.${rnd()}@dest.test` })
    const transport = createTransport({ ...env.config, outbound: `smtp://relayuser:s3cret@127.0.0.4:${relay.port}` })
    await pipelineFor(env, { transport }).drain()
    const [msg] = relay.byMessageId(mid(id))
    expect(msg.user).toBe('relayuser')
    expect(msg.from).toBe(verpAddress(env.deps, id, returnPathDomain(p.domain)))
    expect((await dkimOf(msg.raw, dns))[0].status.result).toBe('pass')
    expect(await email(id)).toMatchObject({ status: 'SENT', deliveredTo: `127.0.0.4:${relay.port}` })
    expect((await eventsOf(id)).map((e) => e.name)).toEqual(['email.sent'])
    const [id2] = await send({ to: `sh2.${rnd()}@dest.test` })
    const bad = createTransport({ ...env.config, outbound: `smtp://relayuser:wrong@127.0.0.4:${relay.port}` })
    await pipelineFor(env, { transport: bad }).drain()
    expect(await email(id2)).toMatchObject({ status: 'SENDING', attempts: 1 })
    expect((await email(id2)).lastReply).toContain('535')
    await env.store.tx((db) => db.delete(env.store.t.outboundQueue).where(eq(env.store.t.outboundQueue.emailId, id2)))
  })

  test('capture: the signed message is stored instead of delivered and listed', async () => {
    const [id] = await send({ to: `cap.${rnd()}@dest.test`, subject: 'Captured {{x}}', data: { x: 'yes' } })
    await pipelineFor(env, { transport: new CaptureTransport() }).drain()
    expect(await email(id)).toMatchObject({ status: 'SENT', deliveredTo: 'capture' })
    expect(main.byMessageId(mid(id))).toEqual([])
    const [cap] = (await listCaptured(env.store, { projectId: p.id, withRaw: true })).filter((c) => c.emailId === id)
    expect(cap).toMatchObject({ kind: 'outbound', to: expect.stringMatching(/^cap\./), subject: 'Captured yes' })
    expect(cap.raw).toContain('DKIM-Signature:')
    expect((await dkimOf(Buffer.from(must(cap.raw, 'the raw message'), 'latin1'), dns))[0].status.result).toBe('pass')
  })

  test('a sender domain no longer verified at delivery time fails the email (email.failed)', async () => {
    const q = await projectWithDomain(env, dns, `gone-${rnd()}.test`)
    const [id] = await send({ to: `x.${rnd()}@dest.test`, from: q.from }, q.secretKey)
    const { domains } = env.store.t
    await env.store.tx((db) => db.update(domains).set({ verified: false, updatedAt: new Date() }).where(eq(domains.id, q.domainId)))
    await pipelineFor(env).drain()
    expect(await email(id)).toMatchObject({ status: 'FAILED' })
    const [ev] = await eventsOf(id)
    expect(ev.name).toBe('email.failed')
    expect(String(ev.data.reason)).toContain('no longer verified')
  })

  test('status only moves forward: a late delivery outcome does not undo an open', async () => {
    const [id] = await send({ to: `fw.${rnd()}@dest.test` })
    const { emails } = env.store.t
    await env.store.tx((db) => db.update(emails).set({ status: 'OPENED' }).where(eq(emails.id, id)))
    await pipelineFor(env).drain()
    const row = await email(id)
    expect(row.status).toBe('OPENED')
    expect(row.deliveredAt).toBeInstanceOf(Date)
  })

  test('leases: renewal moves run_at with the lease; a stopping pipeline hands back what it holds; a dead node\'s leases are released at start; a live node with this hostname and pid keeps its own', async () => {
    const ids = await send({ to: [`l1.${rnd()}@dest.test`, `l2.${rnd()}@dest.test`, `l3.${rnd()}@dest.test`] })
    const [mine, orphan, foreign] = ids
    const { outboundQueue: q } = env.store.t
    // Another "process" whose heartbeat is older than the bound, and one beating now with the hostname
    // and pid of this process (another container): only the first is dead.
    const crashed = new NodeRegistry(env.store, { clock: behind(NODE_STALE_MS + 60_000) })
    const living = new NodeRegistry(env.store, { hostname: hostname(), pid: process.pid })
    await crashed.beat()
    await living.beat()
    const crashedHolder = crashed.newId()
    const busy = living.newId()
    const stopping = pipelineFor(env, { transport: new CaptureTransport() })
    const hold = (id: string, by: string) => env.store.tx((db) => db.update(q)
      .set({ lockedBy: by, lockedUntil: new Date(Date.now() + 3_600_000), runAt: new Date(Date.now() + 3_600_000) }).where(eq(q.emailId, id)))
    await hold(mine, stopping.workerId)
    await hold(orphan, crashedHolder)
    await hold(foreign, busy)

    // A renewal by the holder moves run_at with the lease end; another holder's row is not renewed.
    const t1 = new Date(Date.now() + 60_000)
    expect(await renew(env.store, outboundLeases(env.store), stopping.workerId, [mine, foreign], 7_200_000, t1)).toBe(1)
    expect(await queueRow(mine)).toMatchObject({ lockedUntil: leaseEnd(t1, 7_200_000), runAt: leaseEnd(t1, 7_200_000) })

    await stopping.stop()
    const handed = await queueRow(mine)
    expect(handed).toMatchObject({ lockedBy: null, lockedUntil: null })
    expect(handed.runAt.getTime()).toBeLessThanOrEqual(Date.now())
    expect(await queueRow(orphan)).toMatchObject({ lockedBy: crashedHolder })

    const next = pipelineFor(env, { transport: new CaptureTransport() })
    next.start()
    try {
      await until(async () => (await email(mine))?.status === 'SENT' && (await email(orphan))?.status === 'SENT', 20_000, 'both messages sent')
    } finally {
      await next.stop()
    }
    expect(await queueRow(foreign)).toMatchObject({ lockedBy: busy })
    await crashed.stop()
    await living.stop()
    expect((await email(foreign)).status).toBe('PENDING')
    await env.store.tx((db) => db.delete(q).where(eq(q.emailId, foreign)))
  })
}, { dnsServers: [dns.server], mxPort: main.port, outbound: 'direct' })

