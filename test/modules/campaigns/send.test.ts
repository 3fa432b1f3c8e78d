import { beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { later } from '../../helpers/clock'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { addSuppression } from '../../../src/modules/suppressions/service'
import { campaignSchedulerJob, campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { cancelCampaign } from '../../../src/modules/campaigns/service'
import { withUnsubscribeFooter } from '../../../src/mail/render/campaign'
import { renderDeferred } from '../../../src/modules/campaigns/render'
import { loadForDelivery } from '../../../src/modules/emails/repo'
import type { NewProject } from '../../../src/modules/projects/service'
import { addDomain, campaignBody } from './fixture'

const PRO = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }

interface Person { email: string; subscribed: boolean; plan: string; suppressed?: boolean }

/** A mixed audience: pro and basic, subscribed and not, some suppressed. */
const PEOPLE: Person[] = [
  ...Array.from({ length: 7 }, (_, i) => ({ email: `pro${i}@dest.test`, subscribed: true, plan: 'pro' })),
  { email: 'pro-unsub@dest.test', subscribed: false, plan: 'pro' },
  { email: 'pro-unsub2@dest.test', subscribed: false, plan: 'pro' },
  { email: 'pro-suppressed@dest.test', subscribed: true, plan: 'pro', suppressed: true },
  { email: 'basic0@dest.test', subscribed: true, plan: 'basic' },
  { email: 'basic1@dest.test', subscribed: true, plan: 'basic' },
  { email: 'basic-unsub@dest.test', subscribed: false, plan: 'basic' },
]
const name = (email: string) => email.split('@')[0]

forEachStore('campaign sending', (env) => {
  /** Sender domains are unique across projects: one per project. */
  const senders = new Map<string, string>()
  async function world(): Promise<NewProject> {
    const p = await env.project()
    const domain = `d${Math.random().toString(36).slice(2, 10)}.test`
    await addDomain(env, p.id, domain, true)
    senders.set(p.id, `news@${domain}`)
    for (const who of PEOPLE) {
      const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: who.email, subscribed: who.subscribed, data: { plan: who.plan, firstName: name(who.email), code: `C-${name(who.email)}` } } })
      expect(r.status).toBeLessThan(300)
      if (who.suppressed) await addSuppression(ctxFor(env.deps, p.id, { kind: 'cli' }), { email: who.email })
    }
    return p
  }

  async function start(p: NewProject, over: Record<string, unknown>, scheduledFor?: string) {
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ from: senders.get(p.id), ...over }) })
    expect(c.status).toBe(200)
    const s = await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: scheduledFor ? { scheduledFor } : {} })
    expect(s.status).toBe(200)
    return c.body.data.id as string
  }

  /**
   * The campaign's emails, with the HTML the pipeline renders for each when it builds it (campaign mail
   * is stored without content: loadForDelivery finds none and renderDeferred makes it).
   */
  async function emailsOf(campaignId: string) {
    const { emails, emailContents, outboundQueue } = env.store.t
    const rows = await env.store.db.select({ id: emails.id, to: emails.toAddress, subject: emails.subject, type: emails.type, sourceType: emails.sourceType, listUnsubscribe: emails.listUnsubscribe, stored: emailContents.emailId, priority: outboundQueue.priority })
      .from(emails).leftJoin(emailContents, eq(emailContents.emailId, emails.id)).leftJoin(outboundQueue, eq(outboundQueue.emailId, emails.id))
      .where(eq(emails.campaignId, campaignId))
    expect(rows.filter((r) => r.stored !== null)).toEqual([])
    const loaded = await loadForDelivery(env.store, rows.map((r) => r.id))
    await renderDeferred(env.deps, loaded)
    const html = new Map(loaded.map((e) => [e.id, e.html]))
    return rows.map((r) => ({ ...r, html: html.get(r.id) ?? null }))
  }
  const get = async (p: NewProject, id: string) => (await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body
  const stats = async (p: NewProject, id: string) => (await env.request('GET', `/campaigns/${id}/stats`, { key: p.secretKey })).body

  const proSubscribed = PEOPLE.filter((x) => x.plan === 'pro' && x.subscribed && !x.suppressed).map((x) => x.email).sort()

  test('a FILTERED MARKETING campaign queues exactly one email per matching subscribed, unsuppressed contact, each rendered with its own data', async () => {
    const p = await world()
    const id = await start(p, { audienceType: 'FILTERED', audienceCondition: PRO })
    expect((await get(p, id)).status).toBe('SENDING')
    await new Worker(env.deps, [campaignSendJob({ batchSize: 3 })]).drain()
    const sent = await emailsOf(id)
    expect(sent.map((e) => e.to).sort()).toEqual(proSubscribed)
    for (const e of sent) {
      const n = name(e.to)
      expect(e.subject).toBe(`Hello ${n}`)
      expect(e.html).toContain(`Hi ${n}, code C-${n}`)
      expect(e).toMatchObject({ type: 'MARKETING', sourceType: 'campaign', listUnsubscribe: true, priority: 10 })
      // The body does not place {{unsubscribeUrl}}: a footer with the contact's own link is appended.
      expect(e.html).toMatch(/<a href="http:\/\/localhost:3000\/unsubscribe\/[^"]+"[^>]*>Unsubscribe<\/a><\/p>/)
    }
    expect(new Set(sent.map((e) => e.html?.match(/unsubscribe\/([^"]+)"/)?.[1])).size).toBe(sent.length)
    const c = await get(p, id)
    expect(c).toMatchObject({ status: 'SENT', totalRecipients: 10, sentCount: 7, skippedUnsubscribed: 2, skippedSuppressed: 1 })
    expect(c.sentAt).toBeString()
    expect(await stats(p, id)).toMatchObject({ status: 'SENT', totalRecipients: 10, queued: 7, pending: 7, skippedUnsubscribed: 2, skippedSuppressed: 1 })
    // Sending it again is refused; nothing more is queued.
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })).status).toBe(409)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 3 })]).drain()
    expect((await emailsOf(id)).length).toBe(7)
  })

  test('a TRANSACTIONAL campaign to ALL also reaches unsubscribed contacts, never suppressed ones, without List-Unsubscribe', async () => {
    const p = await world()
    const id = await start(p, { audienceType: 'ALL', type: 'TRANSACTIONAL' })
    await new Worker(env.deps, [campaignSendJob({ batchSize: 4 })]).drain()
    const sent = await emailsOf(id)
    expect(sent.map((e) => e.to).sort()).toEqual(PEOPLE.filter((x) => !x.suppressed).map((x) => x.email).sort())
    expect(sent.every((e) => e.type === 'TRANSACTIONAL' && !e.listUnsubscribe && e.priority === 10 && !e.html?.includes('/unsubscribe/'))).toBe(true)
    expect(await get(p, id)).toMatchObject({ status: 'SENT', totalRecipients: PEOPLE.length, sentCount: PEOPLE.length - 1, skippedUnsubscribed: 0, skippedSuppressed: 1 })
  })

  test('a SEGMENT campaign reaches the members of a STATIC segment and the matches of a DYNAMIC one', async () => {
    const p = await world()
    const st = await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'vip', type: 'STATIC' } })
    expect((await env.request('POST', `/segments/${st.body.id}/members`, { key: p.secretKey, body: { emails: ['basic0@dest.test', 'pro1@dest.test', 'basic-unsub@dest.test'] } })).status).toBeLessThan(300)
    const a = await start(p, { audienceType: 'SEGMENT', segmentId: st.body.id })
    const dyn = await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'pros', condition: PRO } })
    const b = await start(p, { audienceType: 'SEGMENT', segmentId: dyn.body.id })
    await new Worker(env.deps, [campaignSendJob({ batchSize: 2 })]).drain()
    expect((await emailsOf(a)).map((e) => e.to).sort()).toEqual(['basic0@dest.test', 'pro1@dest.test'])
    expect(await get(p, a)).toMatchObject({ status: 'SENT', totalRecipients: 3, sentCount: 2, skippedUnsubscribed: 1 })
    expect((await emailsOf(b)).map((e) => e.to).sort()).toEqual(proSubscribed)
  })

  test('a crash after the first batch: the retried job resumes from the checkpoint, no recipient missing, none twice', async () => {
    const p = await world()
    const id = await start(p, { audienceType: 'FILTERED', audienceCondition: PRO })
    let crashes = 0
    const crashing = campaignSendJob({ batchSize: 3, afterBatch: () => { if (crashes++ === 0) throw new Error('simulated crash') } })
    await new Worker(env.deps, [crashing]).drain()
    const mid = await get(p, id)
    expect(mid).toMatchObject({ status: 'SENDING', totalRecipients: 3 })
    const firstBatch = await emailsOf(id)
    expect(firstBatch.length).toBe(mid.sentCount)
    // The job was put back with a backoff: a worker whose clock is past it runs it again.
    await later(env, 3_600_000, () => new Worker(env.deps, [crashing]).drain())
    const all = (await emailsOf(id)).map((e) => e.to).sort()
    expect(all).toEqual(proSubscribed)
    expect(new Set(all).size).toBe(all.length)
    expect(await get(p, id)).toMatchObject({ status: 'SENT', totalRecipients: 10, sentCount: 7, skippedUnsubscribed: 2, skippedSuppressed: 1 })
  })

  test('cancel in the middle of sending: the batches not yet queued are never queued', async () => {
    const p = await world()
    const id = await start(p, { audienceType: 'ALL', type: 'TRANSACTIONAL' })
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const job = campaignSendJob({ batchSize: 3, afterBatch: async (b) => { if (b.index === 1) await cancelCampaign(ctx, id) } })
    await new Worker(env.deps, [job]).drain()
    const c = await get(p, id)
    expect(c).toMatchObject({ status: 'CANCELLED', totalRecipients: 3 })
    expect((await emailsOf(id)).length).toBe(c.sentCount)
    expect(c.sentCount).toBeLessThanOrEqual(3)
    // A later run of the job (a retry) queues nothing more.
    await later(env, 3_600_000, () => new Worker(env.deps, [campaignSendJob({ batchSize: 3 })]).drain())
    expect((await emailsOf(id)).length).toBe(c.sentCount)
  })

  describe('scheduler', () => {
    let p: NewProject
    beforeAll(async () => { p = await world() })

    async function setTime(id: string, at: Date) {
      const { campaigns } = env.store.t
      await env.store.tx((db) => db.update(campaigns).set({ scheduledFor: at }).where(eq(campaigns.id, id)))
    }
    async function boot(e: TestEnv, offsetMs: number) {
      const w = new Worker(e.deps, [campaignSchedulerJob, campaignSendJob({ batchSize: 4 })])
      await later(e, offsetMs, async () => {
        await w.ensureRecurring()
        await w.drain()
      })
    }

    test('a SCHEDULED campaign waits for its time, then starts at the first scheduler run after it (also after a restart)', async () => {
      const id = await start(p, { audienceType: 'FILTERED', audienceCondition: PRO }, new Date(Date.now() + 86_400_000).toISOString())
      await boot(env, 0)
      expect((await get(p, id)).status).toBe('SCHEDULED')
      expect((await emailsOf(id)).length).toBe(0)
      // The time passed while no worker ran: the next boot's scheduler run starts it.
      await setTime(id, new Date(Date.now() - 60_000))
      await boot(env, 60_000)
      expect((await emailsOf(id)).map((e) => e.to).sort()).toEqual(proSubscribed)
      expect((await get(p, id)).status).toBe('SENT')
    })

    test('a cancelled SCHEDULED campaign is never started', async () => {
      const id = await start(p, { audienceType: 'ALL' }, new Date(Date.now() + 86_400_000).toISOString())
      expect((await env.request('POST', `/campaigns/${id}/cancel`, { key: p.secretKey })).status).toBe(200)
      await setTime(id, new Date(Date.now() - 60_000))
      await boot(env, 120_000)
      expect((await get(p, id)).status).toBe('CANCELLED')
      expect((await emailsOf(id)).length).toBe(0)
    })
  })
})

test('the unsubscribe footer goes before </body> when there is one, its link escaped, and into the text', () => {
  const out = withUnsubscribeFooter('<html><BODY><p>x</p></BODY></html>', 'x', 'http://h/u/a&b"c')
  expect(out.html).toBe('<html><BODY><p>x</p><p style="margin:24px 0 0;font-size:12px;color:#6b7280">You receive this email because you subscribed. <a href="http://h/u/a&amp;b&quot;c" style="color:#6b7280">Unsubscribe</a></p></BODY></html>')
  expect(out.text).toBe('x\n\n--\nUnsubscribe: http://h/u/a&b"c\n')
  expect(withUnsubscribeFooter('<p>y</p>', 'y', 'http://h/u').html).toStartWith('<p>y</p><p style=')
})
