import { beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ctxFor } from '../../../src/deps'
import { openPixelUrl } from '../../../src/mail/links'
import { registerUpcomingSource } from '../../../src/modules/activity/upcoming'
import { upsertContact } from '../../../src/modules/contacts/service'
import { queueEmails } from '../../../src/modules/emails/service'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { pathOf, queueTestEmail } from '../tracking/fixture'

interface Item { kind: 'email' | 'event'; id: string; type?: string; campaignId?: string | null; emailId?: string | null; createdAt: string }

const CAMPAIGN = '0190f5a0-0000-7000-8000-00000000c0de'

async function scheduledCampaign(env: TestEnv, projectId: string, name: string, at: Date): Promise<string> {
  const id = Bun.randomUUIDv7()
  const now = new Date()
  await env.store.tx((db) => db.insert(env.store.t.campaigns).values({
    id, projectId, name, subject: 'S', body: '<p>b</p>', fromEmail: 'hello@acme.test', type: 'MARKETING', audienceType: 'ALL',
    status: 'SCHEDULED', scheduledFor: at, totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: now, updatedAt: now,
  }))
  return id
}

/** An email still in the outbound queue, deferred once, next attempt at `at`. */
async function deferredEmail(env: TestEnv, projectId: string, to: string, at: Date): Promise<string> {
  const ctx = ctxFor(env.deps, projectId, { kind: 'cli' })
  return env.store.tx(async (db) => {
    const up = await upsertContact(ctx, { email: to, subscribed: true }, { defaultSubscribed: true, db })
    const [r] = await queueEmails(ctx, db, [{
      contactId: up.contact.id, to: { email: to }, from: { email: 'hello@acme.test' }, subject: 'Deferred one', html: '<p>x</p>', text: 'x',
      type: 'TRANSACTIONAL', sourceType: 'send', domainId: 'test-domain', listUnsubscribe: false, campaignId: null,
    }])
    const q = env.store.t.outboundQueue
    await db.update(q).set({ attempts: 2, runAt: at, lastError: '451 4.7.1 try later' }).where(eq(q.emailId, r.id))
    return r.id
  })
}

forEachStore('activity filters and upcoming', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  const inCampaign: string[] = []
  let outside = ''

  beforeAll(async () => {
    p = await env.project()
    for (let i = 0; i < 2; i++) inCampaign.push((await queueTestEmail(env, p.id, { to: `camp${i}@dest.test`, campaignId: CAMPAIGN, status: 'DELIVERED' })).id)
    outside = (await queueTestEmail(env, p.id, { to: 'solo@dest.test', status: 'DELIVERED' })).id
    await env.request('GET', pathOf(openPixelUrl(env.deps, inCampaign[0])))
    await env.request('GET', pathOf(openPixelUrl(env.deps, outside)))
  })

  const get = (path: string, key: string | null = p.secretKey) => env.request('GET', path, { key })

  test('campaignId: the campaign\'s emails and their events only', async () => {
    const res = await get(`/activity?campaignId=${CAMPAIGN}&limit=100`)
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(3)
    const data = res.body.data as Item[]
    expect(data.filter((d) => d.kind === 'email').map((d) => d.id).sort()).toEqual([...inCampaign].sort())
    expect(data.filter((d) => d.kind === 'event').map((d) => [d.type, d.emailId])).toEqual([['email.open', inCampaign[0]]])
  })

  test('contact: by email address or id; an unknown contact matches nothing', async () => {
    const byEmail = await get('/activity?contact=SOLO@dest.test')
    expect(byEmail.body.total).toBe(2)
    expect((byEmail.body.data as Item[]).map((d) => d.kind).sort()).toEqual(['email', 'event'])
    const none = await get('/activity?contact=nobody@dest.test')
    expect(none.body).toMatchObject({ total: 0, data: [] })
  })

  test('date range: from/to bound the items; an unparseable date is 400', async () => {
    const all = await get('/activity?limit=100')
    const times = (all.body.data as Item[]).map((d) => Date.parse(d.createdAt)).sort((a, b) => a - b)
    const mid = new Date(times[Math.floor(times.length / 2)]).toISOString()
    const after = await get(`/activity?from=${mid}&limit=100`)
    const before = await get(`/activity?to=${mid}&limit=100`)
    expect(after.body.total + before.body.total).toBe(all.body.total)
    expect((after.body.data as Item[]).every((d) => Date.parse(d.createdAt) >= Date.parse(mid))).toBe(true)
    expect((before.body.data as Item[]).every((d) => Date.parse(d.createdAt) < Date.parse(mid))).toBe(true)
    expect((await get('/activity?from=2999-01-01T00:00:00Z')).body.total).toBe(0)
    const bad = await get('/activity?from=yesterday-ish')
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('BAD_REQUEST')
  })

  test('type email.delivery is known (deliveries), an unknown type is 400', async () => {
    expect((await get('/activity?type=email.delivery')).status).toBe(200)
    expect((await get('/activity?type=email.nope')).status).toBe(400)
  })

  test('GET /activity/upcoming: scheduled campaigns, deferred mail and registered sources, soonest first', async () => {
    const q = await env.project()
    const t0 = Date.now()
    const later = await scheduledCampaign(env, q.id, 'Spring sale', new Date(t0 + 3 * 3_600_000))
    const sooner = await deferredEmail(env, q.id, 'slow@dest.test', new Date(t0 + 600_000))
    const off = registerUpcomingSource({
      kind: 'workflow',
      list: async (ctx, limit) => ctx.projectId === q.id ? [{ id: 'exec-1', at: new Date(t0 + 3_600_000), title: 'Onboarding', detail: { stepType: 'DELAY' } }].slice(0, limit) : [],
      count: async (ctx) => (ctx.projectId === q.id ? 1 : 0),
    })
    try {
      const res = await get('/activity/upcoming', q.secretKey)
      expect(res.status).toBe(200)
      expect(res.body.total).toBe(3)
      expect((res.body.data as Array<{ kind: string; id: string }>).map((d) => [d.kind, d.id])).toEqual([['deferred', sooner], ['workflow', 'exec-1'], ['campaign', later]])
      expect(res.body.data[0].detail).toMatchObject({ to: 'slow@dest.test', attempts: 2, lastError: '451 4.7.1 try later' })
      expect(res.body.data[2]).toMatchObject({ title: 'Spring sale', detail: { status: 'SCHEDULED' } })
      const one = await get('/activity/upcoming?limit=1', q.secretKey)
      expect(one.body.data).toHaveLength(1)
      expect(one.body.total).toBe(3)
      // Another project sees none of it.
      const theirs = await get('/activity/upcoming', p.secretKey)
      expect(theirs.body).toEqual({ data: [], total: 0 })
    } finally { off() }
    const bad = await get('/activity/upcoming?limit=0', q.secretKey)
    expect(bad.status).toBe(400)
  })

  test('security: no key 401, public key 401 INVALID_API_KEY, another project\'s campaign and contact show nothing', async () => {
    for (const path of ['/activity/upcoming', `/activity?campaignId=${CAMPAIGN}`]) {
      expect((await get(path, null)).status).toBe(401)
      const pub = await get(path, p.publicKey)
      expect(pub.status).toBe(401)
      expect(pub.body.error.code).toBe('INVALID_API_KEY')
    }
    const other = await env.project()
    expect((await get(`/activity?campaignId=${CAMPAIGN}`, other.secretKey)).body.total).toBe(0)
    expect((await get('/activity?contact=solo@dest.test', other.secretKey)).body.total).toBe(0)
  })
})
