import { beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import { upsertMany } from '../../../src/modules/contacts/service'
import { campaignJobs, campaignSchedulerJob, campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { instantIn, isTimeZone, waveInstants } from '../../../src/modules/campaigns/localtime'
import type { NewProject } from '../../../src/modules/projects/service'
import { addDomain, campaignBody } from './fixture'

test('local times: half-hour zones, summer time, the gap of the spring change, invalid names', () => {
  expect(instantIn('Asia/Kolkata', '2030-03-04', '09:00').toISOString()).toBe('2030-03-04T03:30:00.000Z')
  expect(instantIn('America/New_York', '2030-07-01', '09:00').toISOString()).toBe('2030-07-01T13:00:00.000Z')
  expect(instantIn('America/New_York', '2030-01-15', '09:00').toISOString()).toBe('2030-01-15T14:00:00.000Z')
  // 02:30 does not exist in Berlin on 2030-03-31: just after the gap (03:30 CEST).
  expect(instantIn('Europe/Berlin', '2030-03-31', '02:30').toISOString()).toBe('2030-03-31T01:30:00.000Z')
  expect(isTimeZone('Mars/Olympus')).toBe(false)
  expect(isTimeZone('+02:00')).toBe(false)
  expect(waveInstants({ date: '2030-03-04', localTime: '09:00', fallbackTimeZone: 'UTC' }, ['Asia/Tokyo', 'nope', null, 'Asia/Tokyo']).map((d) => d.toISOString()))
    .toEqual(['2030-03-04T00:00:00.000Z', '2030-03-04T09:00:00.000Z'])
})

forEachStore('campaign sends in each recipient\'s time zone', (env) => {
  let p: NewProject
  let other: NewProject
  let from: string
  const clock = env.clock
  const ZONES: Array<[string | undefined, number]> = [['Asia/Tokyo', 4], ['Europe/Paris', 3], ['America/New_York', 5], ['Not/AZone', 2], [undefined, 2]]
  const N = ZONES.reduce((n, [, k]) => n + k, 0)

  beforeAll(async () => {
    clock.set(Date.parse('2030-03-03T12:00:00Z'))
    p = await env.project()
    other = await env.project()
    const domain = `tz${Math.random().toString(36).slice(2, 8)}.test`
    await addDomain(env, p.id, domain, true)
    from = `news@${domain}`
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const people = ZONES.flatMap(([zone, k], z) => Array.from({ length: k }, (_, i) => ({
      email: `z${z}-${i}@dest.test`, subscribed: true, data: zone ? { firstName: `P${z}${i}`, timezone: zone } : { firstName: `P${z}${i}` },
    })))
    await env.store.tx((db) => upsertMany(ctx, db, people, { defaultSubscribed: true }))
  }, 60_000)

  const SEND_AT = { date: '2030-03-04', localTime: '09:00', fallbackTimeZone: 'Europe/London' }
  async function draft() {
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ from }) })
    expect(c.status).toBe(200)
    return c.body.data.id as string
  }
  const send = (id: string, body: unknown, key = p.secretKey) => env.request('POST', `/campaigns/${id}/send`, { key, body })
  const get = async (id: string) => (await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body
  const sentTo = async (id: string) => {
    const { emails } = env.store.t
    return (await env.store.db.select({ to: emails.toAddress }).from(emails).where(eq(emails.campaignId, id))).map((r) => r.to).sort()
  }
  async function drain() {
    const w = new Worker(env.deps, [campaignSendJob({ batchSize: 4 }), campaignSchedulerJob])
    await w.ensureRecurring()
    await w.drain()
  }

  test('bad sendAt values are 422 naming the field; an A/B campaign refuses it; both times at once refused', async () => {
    const id = await draft()
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...SEND_AT, date: '2030-3-4' }, 'date'],
      [{ ...SEND_AT, date: '2030-02-30' }, 'sendAt.date'],
      [{ ...SEND_AT, localTime: '24:00' }, 'localTime'],
      [{ ...SEND_AT, localTime: '9:00' }, 'localTime'],
      [{ ...SEND_AT, fallbackTimeZone: 'Mars/Olympus' }, 'sendAt.fallbackTimeZone'],
      [{ date: SEND_AT.date, localTime: SEND_AT.localTime }, 'fallbackTimeZone'],
      [{ ...SEND_AT, date: '2020-01-01' }, 'sendAt'],
    ]
    for (const [sendAt, field] of cases) {
      const r = await send(id, { sendAt })
      if (r.status !== 422) throw new Error(`${JSON.stringify(sendAt)} answered ${r.status}`)
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
      expect(JSON.stringify(r.body.error.errors)).toContain(field)
    }
    expect((await send(id, { sendAt: SEND_AT, scheduledFor: '2030-03-05T00:00:00Z' })).status).toBe(422)
    const ab = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ from, abTest: { variants: [{ subject: 'a' }, { subject: 'b' }], testPercent: 10, metric: 'opens', waitMinutes: 10 } }) })
    const abSend = await send(ab.body.data.id, { sendAt: SEND_AT })
    expect(abSend.status).toBe(422)
    expect(abSend.body.error.errors[0].code).toBe('ab_test_local_time')
    expect((await get(id)).status).toBe('DRAFT')
  })

  test('security: no key, a public key, another project\'s campaign', async () => {
    const id = await draft()
    expect((await env.request('POST', `/campaigns/${id}/send`, { body: { sendAt: SEND_AT } })).status).toBe(401)
    expect((await send(id, { sendAt: SEND_AT }, p.publicKey)).status).toBe(401)
    expect((await send(id, { sendAt: SEND_AT }, other.secretKey)).status).toBe(404)
    expect((await get(id)).status).toBe('DRAFT')
  })

  test('waves: SCHEDULED until Tokyo\'s 09:00, each zone at its 09:00, invalid and missing zones in the fallback, SENT after New York', async () => {
    const id = await draft()
    const r = await send(id, { sendAt: SEND_AT })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ status: 'SCHEDULED', scheduledFor: '2030-03-04T00:00:00.000Z' })
    expect(r.body.message).toContain('4 waves')
    await drain()
    expect(await sentTo(id)).toEqual([])

    const step = async (iso: string) => {
      clock.set(Date.parse(iso))
      await drain()
    }
    // Tokyo 09:00 = 00:00 UTC.
    await step('2030-03-04T00:00:01Z')
    let got = await get(id)
    expect(got.status).toBe('SENDING')
    expect(got.nextWaveAt).toBe('2030-03-04T08:00:00.000Z')
    expect(await sentTo(id)).toEqual(['z0-0@dest.test', 'z0-1@dest.test', 'z0-2@dest.test', 'z0-3@dest.test'])
    // Not before Paris's 09:00 (08:00 UTC); London (the fallback) is 09:00 UTC.
    await step('2030-03-04T07:59:00Z')
    expect((await sentTo(id)).length).toBe(4)
    await step('2030-03-04T08:00:00Z')
    expect((await sentTo(id)).length).toBe(7)
    await step('2030-03-04T09:00:00Z')
    const london = await sentTo(id)
    expect(london.length).toBe(11)
    expect(london.filter((e) => e.startsWith('z3-') || e.startsWith('z4-')).length).toBe(4)
    got = await get(id)
    expect(got.status).toBe('SENDING')
    expect(got.nextWaveAt).toBe('2030-03-04T14:00:00.000Z')
    // A crash after the wave closed: its job runs again, and sends nothing early.
    const { jobs } = env.store.t
    await env.store.tx((db) => db.update(jobs).set({ status: 'queued', runAt: clock.date() }).where(eq(jobs.uniqueKey, `${id}@2030-03-04T09:00:00.000Z`)))
    await drain()
    expect((await sentTo(id)).length).toBe(11)
    await step('2030-03-04T14:00:00Z')
    got = await get(id)
    expect(got.status).toBe('SENT')
    const all = await sentTo(id)
    expect(all.length).toBe(N)
    expect(new Set(all).size).toBe(N)
    expect(got.totalRecipients).toBe(N)
  }, 60_000)

  test('zones whose time has passed go at once; unschedule clears the local time', async () => {
    clock.set(Date.parse('2030-03-04T08:30:00Z'))
    const id = await draft()
    const r = await send(id, { sendAt: SEND_AT })
    expect(r.body.data.status).toBe('SENDING')
    await new Worker(env.deps, campaignJobs).drain()
    // Tokyo and Paris have passed: they go now; London and New York later.
    expect((await sentTo(id)).length).toBe(7)
    const later = await draft()
    clock.set(Date.parse('2030-03-03T12:00:00Z'))
    expect((await send(later, { sendAt: SEND_AT })).body.data.status).toBe('SCHEDULED')
    const u = await env.request('POST', `/campaigns/${later}/unschedule`, { key: p.secretKey })
    expect(u.status).toBe(200)
    expect(u.body).toMatchObject({ status: 'DRAFT', sendAt: null, nextWaveAt: null })
  }, 60_000)
})
