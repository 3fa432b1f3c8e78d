import { beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { rollup } from '../../../src/modules/analytics/service'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { queueTestEmail } from '../tracking/fixture'

const H = 3_600_000
const BASE = Date.parse('2026-03-10T00:00:00Z')
const at = (hours: number, minutes = 0) => new Date(BASE + hours * H + minutes * 60_000)

async function campaign(env: TestEnv, projectId: string, name: string): Promise<string> {
  const id = Bun.randomUUIDv7()
  const now = new Date()
  await env.store.tx((db) => db.insert(env.store.t.campaigns).values({
    id, projectId, name, subject: 'S', body: '<p>b</p>', fromEmail: 'hello@acme.test', type: 'MARKETING', audienceType: 'ALL',
    status: 'SENT', totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: now, updatedAt: now,
  }))
  return id
}

interface Ev { name: string; emailId?: string | null; contactId?: string | null; data?: Record<string, unknown>; at: Date }
async function events(env: TestEnv, projectId: string, list: Ev[]) {
  await env.store.tx((db) => db.insert(env.store.t.events).values(list.map((e) => ({
    id: Bun.randomUUIDv7(), projectId, contactId: e.contactId ?? null, name: e.name, data: e.data ?? {}, emailId: e.emailId ?? null, createdAt: e.at,
  }))))
}

/** The life of one email: sent and delivered at `h`, then what else is asked. */
async function mail(env: TestEnv, projectId: string, campaignId: string | null, h: number, more: Array<[string, Record<string, unknown>?, number?]> = []) {
  const e = await queueTestEmail(env, projectId, { campaignId })
  await events(env, projectId, [
    { name: 'email.sent', emailId: e.id, contactId: e.contactId, at: at(h, 1) },
    { name: 'email.delivery', emailId: e.id, contactId: e.contactId, at: at(h, 2) },
    ...more.map(([name, data, hh]) => ({ name, data, emailId: e.id, contactId: e.contactId, at: at(hh ?? h, 30) })),
  ])
  return e
}

forEachStore('analytics', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  let spring = ''
  let autumn = ''

  beforeAll(async () => {
    p = await env.project()
    spring = await campaign(env, p.id, 'Spring')
    autumn = await campaign(env, p.id, 'Autumn')
    // Hour 1 (UTC 01:00, still March 9 in New York): 3 spring emails, two opened (one twice), one clicked.
    await mail(env, p.id, spring, 1, [['email.open', { isFirstOpen: true }], ['email.open', { isFirstOpen: false }], ['email.click', { isFirstClick: true }]])
    await mail(env, p.id, spring, 1, [['email.open', { isFirstOpen: true }]])
    await mail(env, p.id, spring, 1, [['email.bounce', { bounceType: 'hard' }]])
    // Hour 5: 1 autumn email, complained (and unsubscribed); 2 transactional emails, one soft-bounced.
    const a = await mail(env, p.id, autumn, 5, [['email.complaint', {}]])
    await events(env, p.id, [{ name: 'contact.unsubscribed', emailId: a.id, at: at(5, 31), data: { subscribed: false } }])
    await mail(env, p.id, null, 5)
    await mail(env, p.id, null, 5, [['email.bounce', { bounceType: 'soft' }]])
    // Tracked events.
    await events(env, p.id, [
      { name: 'signup', at: at(2) }, { name: 'signup', at: at(3) }, { name: 'signup', at: at(6) }, { name: 'purchase', at: at(6) },
    ])
  })

  const get = (path: string, key: string | null = p.secretKey) => env.request('GET', path, { key })
  const range = `from=${at(0).toISOString()}&to=${at(24).toISOString()}`

  async function checkAll() {
    const hourly = await get(`/analytics/timeseries?interval=hour&${range}`)
    expect(hourly.status).toBe(200)
    expect(hourly.body.data).toHaveLength(24)
    expect(hourly.body.data[1]).toMatchObject({ start: at(1).toISOString(), label: '2026-03-10 01:00', sent: 3, delivered: 3, opened: 3, uniqueOpened: 2, clicked: 1, uniqueClicked: 1, bounced: 1, hardBounced: 1 })
    expect(hourly.body.data[5]).toMatchObject({ sent: 3, delivered: 3, complained: 1, unsubscribed: 1, bounced: 1, hardBounced: 0 })
    expect(hourly.body.data[0]).toMatchObject({ sent: 0, opened: 0 })
    expect(hourly.body.totals).toEqual({ sent: 6, delivered: 6, opened: 3, uniqueOpened: 2, clicked: 1, uniqueClicked: 1, bounced: 2, hardBounced: 1, complained: 1, unsubscribed: 1 })

    // Days in New York (UTC-4 that week): hour 1 UTC is March 9 there, hour 5 is March 10.
    const ny = await get(`/analytics/timeseries?interval=day&timezone=America/New_York&${range}`)
    expect(ny.status).toBe(200)
    expect(ny.body.timezone).toBe('America/New_York')
    expect(ny.body.data.map((d: { label: string; sent: number }) => [d.label, d.sent])).toEqual([['2026-03-09', 3], ['2026-03-10', 3]])
    expect(ny.body.data[1].start).toBe(at(4).toISOString())
    const utc = await get(`/analytics/timeseries?interval=day&${range}`)
    expect(utc.body.data.map((d: { label: string; sent: number }) => [d.label, d.sent])).toEqual([['2026-03-10', 6]])

    const oneCampaign = await get(`/analytics/timeseries?interval=day&campaignId=${spring}&${range}`)
    expect(oneCampaign.body.totals).toMatchObject({ sent: 3, opened: 3, bounced: 1, complained: 0 })

    const top = await get(`/analytics/top-campaigns?${range}`)
    expect(top.status).toBe(200)
    expect(top.body.data).toEqual([{ campaignId: spring, name: 'Spring', status: 'SENT', value: 3 }, { campaignId: autumn, name: 'Autumn', status: 'SENT', value: 1 }])
    const byComplaints = await get(`/analytics/top-campaigns?metric=complained&${range}`)
    expect(byComplaints.body.data.map((d: { campaignId: string; value: number }) => [d.campaignId, d.value])).toEqual([[autumn, 1]])
    expect((await get(`/analytics/top-campaigns?limit=1&${range}`)).body.data).toHaveLength(1)

    const stats = await get(`/analytics/campaign-stats?campaignId=${spring}`)
    expect(stats.status).toBe(200)
    expect(stats.body.data[0]).toMatchObject({ campaignId: spring, name: 'Spring', sent: 3, delivered: 3, uniqueOpened: 2, clicked: 1, bounced: 1 })
    expect(stats.body.data[0].rates).toMatchObject({ delivery: 1, open: 0.6667, click: 0.3333, bounce: 0.3333 })
    const page = await get('/analytics/campaign-stats')
    expect(page.body.total).toBe(2)
    expect(page.body.data.map((d: { name: string; sent: number; unsubscribed: number }) => [d.name, d.sent, d.unsubscribed])).toEqual([['Autumn', 1, 1], ['Spring', 3, 0]])

    const ev = await get(`/analytics/top-events?${range}`)
    expect(ev.status).toBe(200)
    expect(ev.body.data).toEqual([{ name: 'signup', count: 3 }, { name: 'contact.unsubscribed', count: 1 }, { name: 'purchase', count: 1 }])
  }

  test('before any rollup, every endpoint counts from the events', async () => {
    await checkAll()
  })

  test('after the rollup (run twice: the same counters), the answers are the same, read from analytics_hourly', async () => {
    const other = await env.project()
    await mail(env, other.id, null, 2)
    const r = await rollup(env.deps, at(30))
    expect(r.to).toBe(at(29).toISOString())
    const a = env.store.t.analyticsHourly
    const rows = await env.store.db.select().from(a).where(and(eq(a.projectId, p.id), eq(a.campaignId, ''), eq(a.metric, 'sent')))
    expect(rows.map((x) => [x.hour.getTime(), Number(x.value)]).sort()).toEqual([[at(1).getTime(), 3], [at(5).getTime(), 3]])
    await checkAll()
    await rollup(env.deps, at(30))
    await checkAll()
    // The rolled-up counters answer even when the events are gone (they are not scanned again).
    const e = env.store.t.events
    await env.store.tx((db) => db.delete(e).where(eq(e.projectId, other.id)))
    const theirs = await get(`/analytics/timeseries?interval=hour&${range}`, other.secretKey)
    expect(theirs.body.totals.sent).toBe(1)
  })

  test('events past the watermark are counted live, together with the rolled-up hours', async () => {
    await mail(env, p.id, spring, 40, [['email.open', { isFirstOpen: true }]])
    const wide = `from=${at(0).toISOString()}&to=${at(48).toISOString()}`
    const res = await get(`/analytics/timeseries?interval=day&${wide}`)
    expect(res.body.totals).toMatchObject({ sent: 7, opened: 4, uniqueOpened: 3 })
    expect((await get(`/analytics/top-campaigns?${wide}`)).body.data[0]).toMatchObject({ campaignId: spring, value: 4 })
    expect((await get(`/analytics/campaign-stats?campaignId=${spring}`)).body.data[0]).toMatchObject({ sent: 4, opened: 4 })
  })

  test('bad input: interval, time zone, range, metric -> 400; unknown campaign -> 404', async () => {
    for (const q of ['interval=minute', 'timezone=Mars/Olympus', `from=${at(5).toISOString()}&to=${at(1).toISOString()}`, 'from=nope',
      `interval=hour&from=${at(0).toISOString()}&to=${at(24 * 40).toISOString()}`]) {
      const res = await get(`/analytics/timeseries?${q}`)
      expect([q, res.status, res.body.error.code]).toEqual([q, 400, 'BAD_REQUEST'])
    }
    const metric = await get('/analytics/top-campaigns?metric=revenue')
    expect(metric.status).toBe(400)
    expect((await get('/analytics/top-events?limit=0')).status).toBe(400)
    const missing = await get(`/analytics/campaign-stats?campaignId=${Bun.randomUUIDv7()}`)
    expect(missing.status).toBe(404)
  })

  test('security: no key 401, public key 401 INVALID_API_KEY, another project sees none of it', async () => {
    for (const path of ['/analytics/timeseries', '/analytics/top-campaigns', '/analytics/campaign-stats', '/analytics/top-events']) {
      expect((await get(path, null)).status).toBe(401)
      const pub = await get(path, p.publicKey)
      expect(pub.status).toBe(401)
      expect(pub.body.error.code).toBe('INVALID_API_KEY')
    }
    const other = await env.project()
    expect((await get(`/analytics/timeseries?${range}`, other.secretKey)).body.totals.sent).toBe(0)
    expect((await get(`/analytics/timeseries?campaignId=${spring}&${range}`, other.secretKey)).body.totals.sent).toBe(0)
    expect((await get(`/analytics/top-campaigns?${range}`, other.secretKey)).body.data).toEqual([])
    expect((await get(`/analytics/top-events?${range}`, other.secretKey)).body.data).toEqual([])
    expect((await get(`/analytics/campaign-stats?campaignId=${spring}`, other.secretKey)).status).toBe(404)
    expect((await get('/analytics/campaign-stats', other.secretKey)).body).toMatchObject({ total: 0, data: [] })
  })
})
