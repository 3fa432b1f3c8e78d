import { beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { recordClick } from '../../../src/modules/tracking/service'
import { addDomain, campaignBody } from './fixture'

/**
 * The two read-only routes the dashboard's campaign pages need: the live audience count of the composer
 * (POST /campaigns/audience/count) and the top links of the stats page (GET /campaigns/:id/links).
 */

const PRO = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }

forEachStore('campaign audience count and top links', (env) => {
  let owner: TestUser
  let p: { id: string; secretKey: string; publicKey: string }
  let q: { id: string; secretKey: string; publicKey: string }
  const sk = () => p.secretKey
  const count = (body: unknown, key = sk()) => env.request('POST', '/campaigns/audience/count', { key, body })

  beforeAll(async () => {
    owner = await verifiedUser(env, 'owner')
    p = await ownedProject(env, owner)
    q = await ownedProject(env, owner)
    await addDomain(env, p.id, 'example.com', true)
    await addDomain(env, q.id, 'other.net', true)
    const people = [
      { email: 'a@dest.test', plan: 'pro', subscribed: true },
      { email: 'b@dest.test', plan: 'pro', subscribed: true },
      { email: 'unsub@dest.test', plan: 'pro', subscribed: false },
      { email: 'supp@dest.test', plan: 'pro', subscribed: true },
      { email: 'unsupp@dest.test', plan: 'pro', subscribed: false },
      { email: 'basic@dest.test', plan: 'basic', subscribed: true },
    ]
    for (const x of people) {
      const r = await env.request('POST', '/contacts', { key: sk(), body: { email: x.email, subscribed: x.subscribed, data: { plan: x.plan } } })
      expect(r.status).toBeLessThan(300)
    }
    for (const email of ['supp@dest.test', 'unsupp@dest.test', 'nobody@dest.test']) {
      expect((await env.request('POST', '/suppressions', { key: sk(), body: { email } })).status).toBeLessThan(300)
    }
    // Another project's contacts are never counted.
    expect((await env.request('POST', '/contacts', { key: q.secretKey, body: { email: 'a@dest.test', data: { plan: 'pro' } } })).status).toBeLessThan(300)
  })

  describe('POST /campaigns/audience/count', () => {
    test('FILTERED MARKETING: matching contacts, minus the unsubscribed, minus the subscribed ones that are suppressed', async () => {
      const r = await count({ audienceType: 'FILTERED', audienceCondition: PRO })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ matching: 5, recipients: 2, skippedUnsubscribed: 2, skippedSuppressed: 1 })
    })

    test('other types skip no unsubscribed contact, only suppressed addresses; ALL counts every contact of the project', async () => {
      expect((await count({ type: 'TRANSACTIONAL', audienceType: 'FILTERED', audienceCondition: PRO })).body)
        .toEqual({ matching: 5, recipients: 3, skippedUnsubscribed: 0, skippedSuppressed: 2 })
      expect((await count({ audienceType: 'ALL' })).body).toEqual({ matching: 6, recipients: 3, skippedUnsubscribed: 2, skippedSuppressed: 1 })
    })

    test('SEGMENT: the segment\'s members; a filter nobody matches counts zeros', async () => {
      const s = await env.request('POST', '/segments', { key: sk(), body: { name: 'Basic', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'basic' }] }] } } })
      expect(s.status).toBeLessThan(300)
      expect((await count({ audienceType: 'SEGMENT', segmentId: s.body.id })).body).toEqual({ matching: 1, recipients: 1, skippedUnsubscribed: 0, skippedSuppressed: 0 })
      const none = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'gold' }] }] }
      expect((await count({ audienceType: 'FILTERED', audienceCondition: none })).body).toEqual({ matching: 0, recipients: 0, skippedUnsubscribed: 0, skippedSuppressed: 0 })
    })

    test('the count is what a send then does: the fan-out skips the same contacts', async () => {
      const c = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ audienceType: 'FILTERED', audienceCondition: PRO }) })
      expect(c.status).toBe(200)
      const before = (await count({ audienceType: 'FILTERED', audienceCondition: PRO })).body
      expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: sk(), body: {} })).status).toBe(200)
      await new Worker(env.deps, [campaignSendJob()]).drain()
      const stats = (await env.request('GET', `/campaigns/${c.body.data.id}/stats`, { key: sk() })).body
      expect({ matching: stats.totalRecipients, recipients: stats.queued, skippedUnsubscribed: stats.skippedUnsubscribed, skippedSuppressed: stats.skippedSuppressed }).toEqual(before)
    })

    test('bad audiences: 422 naming the field, as on create', async () => {
      const missing = await count({ audienceType: 'FILTERED' })
      expect(missing.status).toBe(422)
      expect(missing.body.error.errors[0]).toMatchObject({ field: 'audienceCondition', code: 'required' })
      const badFilter = await count({ audienceType: 'FILTERED', audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'sounds like', value: 'x' }] }] } })
      expect(badFilter.status).toBe(422)
      expect(badFilter.body.error.errors[0].field).toMatch(/^audienceCondition/)
      const noSegment = await count({ audienceType: 'SEGMENT' })
      expect(noSegment.status).toBe(422)
      expect(noSegment.body.error.errors[0].field).toBe('segmentId')
      expect((await count({ audienceType: 'EVERYONE' })).status).toBe(422)
      expect((await count({ audienceType: 'ALL', type: 'BULK' })).status).toBe(422)
      expect((await count(undefined)).status).toBeGreaterThanOrEqual(400)
    })
  })

  describe('GET /campaigns/:id/links', () => {
    test('clicks and unique clicks per link, most clicked first; test emails and other campaigns are not counted', async () => {
      const make = async () => {
        const c = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ audienceType: 'FILTERED', audienceCondition: PRO, body: '<p><a href="https://shop.test/a">A</a> <a href="https://shop.test/b">B</a></p>' }) })
        expect(c.status).toBe(200)
        expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: sk(), body: {} })).status).toBe(200)
        return c.body.data.id as string
      }
      const id = await make()
      const other = await make()
      await new Worker(env.deps, [campaignSendJob()]).drain()
      const e = env.store.t.emails
      const emailsOf = async (cid: string) => (await env.store.db.select({ id: e.id }).from(e).where(eq(e.campaignId, cid)).orderBy(e.toAddress)).map((r) => r.id)
      const [x, y] = await emailsOf(id)
      expect(y).toBeDefined()
      expect((await env.request('GET', `/campaigns/${id}/links`, { key: sk() })).body).toEqual({ campaignId: id, data: [] })
      await recordClick(env.deps, x, 'https://shop.test/a')
      await recordClick(env.deps, x, 'https://shop.test/a')
      await recordClick(env.deps, y, 'https://shop.test/b')
      await recordClick(env.deps, x, 'https://shop.test/b')
      await recordClick(env.deps, y, 'https://shop.test/b')
      const [z] = await emailsOf(other)
      await recordClick(env.deps, z, 'https://shop.test/a')
      const t = await env.request('POST', `/campaigns/${id}/test`, { key: sk(), body: { email: 'a@dest.test' } })
      expect(t.status).toBe(200)
      await recordClick(env.deps, t.body.data.id, 'https://shop.test/a')
      const r = await env.request('GET', `/campaigns/${id}/links`, { key: sk() })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        campaignId: id,
        data: [{ url: 'https://shop.test/b', clicks: 3, uniqueClicks: 2 }, { url: 'https://shop.test/a', clicks: 2, uniqueClicks: 1 }],
      })
      expect((await env.request('GET', `/campaigns/${id}/links?limit=1`, { key: sk() })).body.data).toEqual([{ url: 'https://shop.test/b', clicks: 3, uniqueClicks: 2 }])
      expect((await env.request('GET', `/campaigns/${id}/links?limit=1000`, { key: sk() })).body.data.length).toBe(2)
      expect((await env.request('GET', `/campaigns/${other}/links`, { key: sk() })).body.data).toEqual([{ url: 'https://shop.test/a', clicks: 1, uniqueClicks: 1 }])
    })

    test('a bad limit: 400 naming it; an unknown id: 404', async () => {
      const c = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody() })
      for (const bad of ['0', '-1', 'x', '1.5']) {
        const r = await env.request('GET', `/campaigns/${c.body.data.id}/links?limit=${bad}`, { key: sk() })
        expect({ bad, status: r.status }).toEqual({ bad, status: 400 })
        expect(r.body.error.message).toMatch(/limit/)
      }
      expect((await env.request('GET', `/campaigns/${Bun.randomUUIDv7()}/links`, { key: sk() })).status).toBe(404)
    })
  })

  describe('security', () => {
    test('no key 401, public key 401 INVALID_API_KEY; another project\'s campaign 404 and segment 422, its contacts never counted', async () => {
      const c = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody() })
      const id = c.body.data.id as string
      const routes: Array<[string, string, unknown?]> = [['POST', '/campaigns/audience/count', { audienceType: 'ALL' }], ['GET', `/campaigns/${id}/links`]]
      for (const [method, path, body] of routes) {
        const none = await env.request(method, path, { body })
        expect({ path, status: none.status, code: none.body.error.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' })
        const pub = await env.request(method, path, { key: p.publicKey, body })
        expect({ path, status: pub.status, code: pub.body.error.code }).toEqual({ path, status: 401, code: 'INVALID_API_KEY' })
      }
      expect((await env.request('GET', `/campaigns/${id}/links`, { key: q.secretKey })).status).toBe(404)
      const s = await env.request('POST', '/segments', { key: q.secretKey, body: { name: 'Theirs', condition: PRO } })
      const foreign = await count({ audienceType: 'SEGMENT', segmentId: s.body.id })
      expect(foreign.status).toBe(422)
      expect(foreign.body.error.errors[0].code).toBe('unknown_segment')
      expect((await count({ audienceType: 'ALL' }, q.secretKey)).body).toEqual({ matching: 1, recipients: 1, skippedUnsubscribed: 0, skippedSuppressed: 0 })
    })

    test('dashboard session: every role of the project may use both; a non-member gets 404', async () => {
      const c = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody() })
      const id = c.body.data.id as string
      const admin = await memberOf(env, owner, p.id, 'ADMIN')
      const member = await memberOf(env, owner, p.id, 'MEMBER')
      const stranger = await verifiedUser(env, 'stranger')
      const as = (u: TestUser, method: string, path: string, body?: unknown) =>
        env.request(method, path, { cookie: u.cookie, headers: { 'x-project-id': p.id }, body })
      for (const u of [owner, admin, member]) {
        expect((await as(u, 'POST', '/campaigns/audience/count', { audienceType: 'FILTERED', audienceCondition: PRO })).body).toEqual({ matching: 5, recipients: 2, skippedUnsubscribed: 2, skippedSuppressed: 1 })
        expect((await as(u, 'GET', `/campaigns/${id}/links`)).body).toEqual({ campaignId: id, data: [] })
      }
      expect((await as(stranger, 'POST', '/campaigns/audience/count', { audienceType: 'ALL' })).status).toBe(404)
      expect((await as(stranger, 'GET', `/campaigns/${id}/links`)).status).toBe(404)
    })
  })
})
