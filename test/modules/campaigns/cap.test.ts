import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { later } from '../../helpers/clock'
import { ownedProject, verifiedUser } from '../../helpers/accounts'
import { Worker } from '../../../src/jobs/queue'
import { campaignSchedulerJob } from '../../../src/modules/campaigns/jobs'
import { addDomain, campaignBody } from './fixture'

/**
 * The monthly campaigns cap (src/modules/billing): a campaign whose audience would pass it does not start
 * (429 BILLING_LIMIT_EXCEEDED naming the cap, the campaign stays DRAFT); a scheduled one that would pass it
 * when its time comes goes back to DRAFT instead of sending.
 */
forEachStore('campaigns and the monthly cap', (env) => {
  async function world(cap: number, contacts: number) {
    const owner = await verifiedUser(env, 'cap')
    const p = await ownedProject(env, owner)
    expect((await env.request('PUT', `/users/@me/projects/${p.id}/billing-limits`, { cookie: owner.cookie, body: { campaigns: cap } })).status).toBe(200)
    const domain = `c${Math.random().toString(36).slice(2, 10)}.test`
    await addDomain(env, p.id, domain, true)
    for (let i = 0; i < contacts; i++) await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `c${i}@dest.test` } })
    return { ...p, from: `news@${domain}` }
  }

  test('an audience over the cap is refused with 429 and the campaign stays DRAFT; within the cap it starts', async () => {
    const p = await world(2, 3)
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ from: p.from }) })
    const id = c.body.data.id as string
    const refused = await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey })
    expect(refused.status).toBe(429)
    expect(refused.body.error.code).toBe('BILLING_LIMIT_EXCEEDED')
    expect(refused.body.error.message).toContain('campaigns cap of 2')
    expect((await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body.status).toBe('DRAFT')
    expect((await env.store.db.select().from(env.store.t.emails)).filter((e) => e.campaignId === id)).toHaveLength(0)

    const owner2 = await world(3, 3)
    const c2 = await env.request('POST', '/campaigns', { key: owner2.secretKey, body: campaignBody({ from: owner2.from }) })
    expect((await env.request('POST', `/campaigns/${c2.body.data.id}/send`, { key: owner2.secretKey })).status).toBe(200)
  }, 60_000)

  test('a scheduled campaign that would pass the cap when due goes back to DRAFT and sends nothing', async () => {
    const p = await world(1, 2)
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ from: p.from }) })
    const id = c.body.data.id as string
    const soon = new Date(Date.now() + 60_000).toISOString()
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: { scheduledFor: soon } })).body.data.status).toBe('SCHEDULED')
    // Its time comes (moved in the database rather than waited for), and the scheduler runs once.
    const { campaigns } = env.store.t
    await env.store.tx((db) => db.update(campaigns).set({ scheduledFor: new Date(Date.now() - 60_000) }).where(eq(campaigns.id, id)))
    const worker = new Worker(env.deps, [campaignSchedulerJob])
    await later(env, 60_000, async () => {
      await worker.ensureRecurring()
      await worker.drain()
    })
    expect((await env.request('GET', `/campaigns/${id}`, { key: p.secretKey })).body.status).toBe('DRAFT')
    expect((await env.store.db.select().from(env.store.t.emails)).filter((e) => e.campaignId === id)).toHaveLength(0)
    expect(await env.store.db.select().from(env.store.t.jobs).where(eq(env.store.t.jobs.uniqueKey, id))).toHaveLength(0)
  }, 60_000)
})
