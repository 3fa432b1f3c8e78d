import { expect, test } from 'bun:test'
import { eq, inArray, sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { pruneStoredContent } from '../../../src/modules/emails/jobs'
import { queueEmails } from '../../../src/modules/emails/service'
import { ctxFor } from '../../../src/deps'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../emails/fixture'

/**
 * Campaign-shaped storage: a campaign's body is stored once (on the campaign); each recipient's message is
 * rendered from it and the contact's data when the pipeline builds it; stored content of other mail is
 * pruned after MAILCTL_CONTENT_RETENTION_DAYS.
 */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'store.test')
const rnd = () => Math.random().toString(36).slice(2, 8)

async function contentRows(env: TestEnv, ids: string[]): Promise<number> {
  const c = env.store.t.emailContents
  if (!ids.length) return 0
  return (await env.store.db.select({ id: c.emailId }).from(c).where(inArray(c.emailId, ids))).length
}

async function campaignEmails(env: TestEnv, campaignId: string) {
  const e = env.store.t.emails
  return env.store.db.select({ id: e.id, to: e.toAddress, status: e.status, lastReply: e.lastReply, subject: e.subject }).from(e).where(eq(e.campaignId, campaignId))
}

forEachStore('campaign storage', (env) => {
  test('no per-recipient content is stored; each message is rendered at delivery from the campaign and the contact as it is then', async () => {
    const tag = rnd()
    const p = await projectWithDomain(env, dns, `st-${tag}.test`)
    const ids: Record<string, string> = {}
    for (const n of ['a', 'b', 'c']) {
      const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${tag}-${n}@store.test`, data: { firstName: `First-${n}`, code: `old-${n}` } } })
      ids[n] = r.body.id
    }
    const c = await env.request('POST', '/campaigns', {
      key: p.secretKey,
      body: { name: 'Stored once', subject: 'For {{firstName}}', body: '<p>Hello {{firstName}}, your code is {{code}}</p>', from: p.from, audienceType: 'ALL' },
    })
    const id = c.body.data.id as string
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey })).status).toBe(200)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 2 })]).drain()
    const queued = await campaignEmails(env, id)
    expect(queued.length).toBe(3)
    // The subject is on each record; no body is.
    expect(queued.map((e) => e.subject).sort()).toEqual(['For First-a', 'For First-b', 'For First-c'])
    expect(await contentRows(env, queued.map((e) => e.id))).toBe(0)

    // The contact's data changes between the fan-out and the delivery: the message carries the new value.
    expect((await env.request('PATCH', `/contacts/${ids.b}`, { key: p.secretKey, body: { data: { code: 'new-b' } } })).status).toBeLessThan(300)
    await pipelineFor(env).drain()
    const mine = sink.received.filter((m) => m.to.some((t) => t.startsWith(`${tag}-`)))
    expect(mine.length).toBe(3)
    for (const n of ['a', 'b', 'c']) {
      // Soft line breaks removed: where they fall is the encoder's choice (docs/adr/0004-mime-and-quoted-printable.md).
      const raw = (mine.find((m) => m.to[0] === `${tag}-${n}@store.test`)?.raw.toString('utf8') ?? '').replace(/=\r?\n/g, '')
      expect(raw).toMatch(new RegExp(`^Subject: For First-${n}\\r?$`, 'm'))
      expect(raw).toContain(`Hello First-${n}, your code is ${n === 'b' ? 'new-b' : `old-${n}`}`)
      // MARKETING without {{unsubscribeUrl}}: the footer is added at delivery, with the recipient's own link.
      expect(raw).toContain('You receive this email because you subscribed.')
    }
    expect((await campaignEmails(env, id)).every((e) => e.status === 'DELIVERED')).toBe(true)
    expect(await contentRows(env, queued.map((e) => e.id))).toBe(0)
  })

  test('a contact deleted, or a campaign deleted, before delivery: the email fails with the reason, nothing is sent', async () => {
    const tag = rnd()
    const p = await projectWithDomain(env, dns, `sd-${tag}.test`)
    const gone = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${tag}-gone@store.test` } })
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${tag}-stays@store.test` } })
    const make = async () => {
      const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name: 'X', subject: 'Hi', body: '<p>Hi</p>', from: p.from, audienceType: 'ALL', type: 'TRANSACTIONAL' } })
      expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: p.secretKey })).status).toBe(200)
      return c.body.data.id as string
    }
    const kept = await make()
    const deleted = await make()
    await new Worker(env.deps, [campaignSendJob()]).drain()
    expect((await env.request('DELETE', `/contacts/${gone.body.id}`, { key: p.secretKey })).status).toBeLessThan(300)
    expect((await env.request('DELETE', `/campaigns/${deleted}`, { key: p.secretKey })).status).toBe(204)
    await pipelineFor(env).drain()

    const keptEmails = await campaignEmails(env, kept)
    expect(keptEmails.find((e) => e.to === `${tag}-stays@store.test`)?.status).toBe('DELIVERED')
    expect(keptEmails.find((e) => e.to === `${tag}-gone@store.test`)).toMatchObject({ status: 'FAILED', lastReply: 'The contact was deleted before this email was delivered' })
    const deletedEmails = await campaignEmails(env, deleted)
    expect(deletedEmails.length).toBe(2)
    for (const e of deletedEmails) expect(e).toMatchObject({ status: 'FAILED', lastReply: expect.stringMatching(/deleted before this email was delivered/) })
    const arrived = sink.received.filter((m) => m.to.some((t) => t.startsWith(`${tag}-`))).flatMap((m) => m.to)
    expect(arrived).toEqual([`${tag}-stays@store.test`])
  })

  test(`content retention: stored content older than the setting's days is deleted unless still queued; records stay`, async () => {
    const tag = rnd()
    const p = await projectWithDomain(env, dns, `sr-${tag}.test`)
    const day = 86_400_000
    const now = new Date()
    // Emails queued 31 days ago (ids are UUIDv7 of their time, as queueing makes them) and one queued now.
    const queueAt = async (at: Date, n: string) => {
      const ctx = { ...ctxFor(env.deps, p.id, { kind: 'cli' }), now: at }
      const id = Bun.randomUUIDv7('hex', at)
      await env.store.tx((db) => queueEmails(ctx, db, [{
        id, contactId: null, to: { email: `${tag}-${n}@store.test` }, from: { email: p.from }, subject: 'S', html: '<p>B</p>', text: 'B',
        type: 'TRANSACTIONAL', sourceType: 'send', domainId: p.domainId, listUnsubscribe: false,
      }]))
      return id
    }
    const old = await queueAt(new Date(now.getTime() - 31 * day), 'old')
    const oldQueued = await queueAt(new Date(now.getTime() - 31 * day), 'old-queued')
    const recent = await queueAt(now, 'recent')
    // The first and the last were delivered (out of the queue); the second is still queued (a deferral).
    await env.store.exec(sql`DELETE FROM outbound_queue WHERE email_id IN (${old}, ${recent})`)
    expect(env.config.contentRetentionDays).toBe(30)
    expect(await contentRows(env, [old, oldQueued, recent])).toBe(3)

    // Two days earlier nothing was old enough; now the old delivered email's content goes, and only it.
    expect(await pruneStoredContent(env.deps, new Date(now.getTime() - 2 * day))).toBe(0)
    expect(await pruneStoredContent(env.deps, now)).toBe(1)
    expect(await contentRows(env, [old])).toBe(0)
    expect(await contentRows(env, [oldQueued, recent])).toBe(2)
    const e = env.store.t.emails
    expect((await env.store.db.select({ id: e.id }).from(e).where(inArray(e.id, [old, oldQueued, recent]))).length).toBe(3)
    // With a shorter setting, the recent one is not touched either while it is younger than that.
    expect(await pruneStoredContent({ ...env.deps, config: { ...env.config, contentRetentionDays: 1 } }, now)).toBe(0)
    expect(await contentRows(env, [oldQueued, recent])).toBe(2)
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
