import { expect, test } from 'bun:test'
import { and, eq, sql } from 'drizzle-orm'
import nodemailer from 'nodemailer'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { must } from '../../helpers/must'
import { startSink } from '../../helpers/smtp'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { unsubscribeUrl } from '../../../src/mail/links'
import { inboundJobs } from '../../../src/modules/inbound/jobs'
import { startInbound } from '../../../src/smtp/receiver'
import { parseUnsubscribeAddress } from '../../../src/mail/outbound/verp'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { applyBounce, applyComplaint, applyDelivery, feedbackEmailById } from '../../../src/modules/tracking/feedback'
import { recordClick, recordOpen } from '../../../src/modules/tracking/service'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../emails/fixture'

/**
 * Campaign counters follow the events as they are recorded, once per email whatever arrives twice or late;
 * the unsubscribe link and the List-Unsubscribe mailto both unsubscribe and count on the campaign.
 */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'count.test')
const rnd = () => Math.random().toString(36).slice(2, 8)

async function deliverTo(port: number, to: string, raw: string) {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'client.remote.test' })
  try {
    return await t.sendMail({ envelope: { from: 'reader@count.test', to: [to] }, raw })
  } finally {
    t.close()
  }
}

forEachStore('campaign counters', (env) => {
  /** A MARKETING campaign to `n` contacts, fanned out and delivered to the sink. */
  async function sentCampaign(n: number) {
    const tag = rnd()
    const p = await projectWithDomain(env, dns, `ct-${tag}.test`)
    for (let i = 0; i < n; i++) await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${tag}-${i}@count.test`, data: { firstName: `F${i}` } } })
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name: 'Counted', subject: 'Hi {{firstName}}', body: '<p>Hi</p>', from: p.from, audienceType: 'ALL' } })
    const id = c.body.data.id as string
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey })).status).toBe(200)
    await new Worker(env.deps, [campaignSendJob()]).drain()
    await pipelineFor(env).drain()
    const e = env.store.t.emails
    const emails = await env.store.db.select({ id: e.id, to: e.toAddress, contactId: e.contactId }).from(e).where(eq(e.campaignId, id)).orderBy(e.toAddress)
    const stats = async () => (await env.request('GET', `/campaigns/${id}/stats`, { key: p.secretKey })).body
    const campaign = async () => (await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body
    return { p, id, tag, emails, stats, campaign }
  }

  const feedback = (env: TestEnv, emailId: string, apply: (ctx: ReturnType<typeof ctxFor>, db: Parameters<typeof applyBounce>[1], email: NonNullable<Awaited<ReturnType<typeof feedbackEmailById>>>) => Promise<unknown>) =>
    env.store.tx(async (db) => {
      const email = must(await feedbackEmailById(env.deps, db, emailId), 'email')
      await apply(ctxFor(env.deps, email.projectId, { kind: 'job', name: 'test' }), db, email)
    })

  test('delivery, bounces, complaints, opens and clicks are counted once per email, also when reported twice or late', async () => {
    const { id, emails, stats, campaign } = await sentCampaign(4)
    expect(await stats()).toMatchObject({ status: 'SENT', queued: 4, pending: 0, sent: 4, delivered: 4, bounced: 0, complained: 0, opened: 0, clicked: 0, failed: 0, unsubscribed: 0 })
    const [a, b, c] = emails
    const bounce = { source: 'dsn' as const, bounceType: 'hard' as const, bounceKind: 'unknown-user', status: '5.1.1', diagnostic: '550 5.1.1 no such user', recipient: a.to, at: new Date() }
    // A bounce after the MX accepted the message (a DSN later), reported twice.
    await feedback(env, a.id, (ctx, db, email) => applyBounce(ctx, db, email, bounce))
    await feedback(env, a.id, (ctx, db, email) => applyBounce(ctx, db, email, bounce))
    const complaint = { source: 'arf' as const, feedbackType: 'abuse', recipient: b.to, at: new Date() }
    await feedback(env, b.id, (ctx, db, email) => applyComplaint(ctx, db, email, complaint))
    await feedback(env, b.id, (ctx, db, email) => applyComplaint(ctx, db, email, complaint))
    // A relay's delivery report about an email already delivered changes no counter.
    await feedback(env, c.id, (ctx, db, email) => applyDelivery(ctx, db, email, { source: 'ses', reply: '250 ok', host: 'mx', recipient: c.to, at: new Date() }))
    // A click before any open, then two opens and a second click.
    await recordClick(env.deps, c.id, 'https://example.com/a')
    await recordOpen(env.deps, c.id)
    await recordOpen(env.deps, c.id)
    await recordClick(env.deps, c.id, 'https://example.com/b')
    await recordOpen(env.deps, b.id)
    expect(await stats()).toMatchObject({ sent: 4, delivered: 4, bounced: 1, complained: 1, opened: 2, clicked: 1, failed: 0, pending: 0 })
    expect(await campaign()).toMatchObject({ sentCount: 4, deliveredCount: 4, bouncedCount: 1, complainedCount: 1, openedCount: 2, clickedCount: 1, unsubscribedCount: 0 })

    // The counters are kept, not computed from the emails: a status written behind the pipeline's back changes nothing.
    const e = env.store.t.emails
    await env.store.tx((db) => db.update(e).set({ status: 'FAILED' }).where(and(eq(e.campaignId, id), eq(e.id, emails[3].id))))
    expect(await stats()).toMatchObject({ delivered: 4, failed: 0 })
  })

  test('the unsubscribe link (one-click POST) unsubscribes and counts once on the campaign; a contact already unsubscribed is not counted', async () => {
    const { p, id, emails, stats } = await sentCampaign(2)
    const [a, b] = emails
    const link = (e: typeof a) => new URL(unsubscribeUrl(env.deps, { projectId: p.id, contactId: must(e.contactId, 'contact'), emailId: e.id })).pathname
    const post = (e: typeof a) => env.request('POST', link(e), { raw: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    expect((await post(a)).status).toBe(200)
    expect((await post(a)).status).toBe(200)
    // b was unsubscribed some other way first: its link changes nothing and counts nothing.
    expect((await env.request('PATCH', `/contacts/${b.contactId}`, { key: p.secretKey, body: { subscribed: false } })).status).toBeLessThan(300)
    expect((await post(b)).status).toBe(200)
    expect(await stats()).toMatchObject({ unsubscribed: 1 })
    expect((await env.request('GET', `/contacts/${a.contactId}`, { key: p.secretKey })).body.subscribed).toBe(false)
    const ev = await env.store.rows<{ data: unknown }>(sql`SELECT data FROM events WHERE contact_id = ${a.contactId} AND name = 'contact.unsubscribed'`)
    expect(ev.length).toBe(1)
    const data = typeof ev[0].data === 'string' ? JSON.parse(ev[0].data) : ev[0].data
    expect(data).toMatchObject({ subscribed: false, source: 'link', emailId: a.id, campaignId: id })
    const u = env.store.t.campaignUnsubscribes
    expect(await env.store.db.select({ contactId: u.contactId, emailId: u.emailId }).from(u).where(eq(u.campaignId, id))).toEqual([{ contactId: a.contactId as string, emailId: a.id }])
  })

  test('List-Unsubscribe mailto: the delivered message names it; a mail to it (through the inbound receiver) unsubscribes and counts once', async () => {
    const { p, tag, emails, stats } = await sentCampaign(1)
    const [a] = emails
    const raw = sink.received.find((m) => m.to[0] === `${tag}-0@count.test`)?.raw.toString('latin1') ?? ''
    const head = raw.split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' ')
    const lu = /^List-Unsubscribe: <(https?:[^>]+)>, <mailto:([^>?]+)\?subject=unsubscribe>$/m.exec(head)
    expect(lu?.[1]).toStartWith(`${env.config.publicUrl}/unsubscribe/`)
    const mailto = must(lu?.[2], 'the mailto address')
    expect(parseUnsubscribeAddress(env.deps, mailto)?.emailId).toBe(a.id)
    expect(head).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m)

    const server = must(await startInbound(env.deps, { port: 0, host: '127.0.0.1' }), 'the inbound server')
    env.onStop(() => server.close())
    const worker = new Worker(env.deps, inboundJobs)
    // A forged address (wrong tag) at the return-path domain is received like any mail there, and changes nothing.
    const forged = mailto.replace(/\.([0-9a-f]{10})@/, '.0000000000@')
    await deliverTo(server.port, forged, 'From: reader@count.test\r\nSubject: unsubscribe\r\n\r\nplease\r\n')
    await worker.drain()
    expect((await env.request('GET', `/contacts/${a.contactId}`, { key: p.secretKey })).body.subscribed).toBe(true)
    for (let i = 0; i < 2; i++) await deliverTo(server.port, mailto, 'From: reader@count.test\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n')
    await worker.drain()
    expect((await env.request('GET', `/contacts/${a.contactId}`, { key: p.secretKey })).body.subscribed).toBe(false)
    expect(await stats()).toMatchObject({ unsubscribed: 1 })
    const ev = await env.store.rows<{ n: number | string }>(sql`SELECT COUNT(*) AS n FROM events WHERE contact_id = ${a.contactId} AND name = 'contact.unsubscribed'`)
    expect(Number(ev[0].n)).toBe(1)
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
