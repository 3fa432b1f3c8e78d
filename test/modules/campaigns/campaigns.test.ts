import { beforeAll, describe, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import type { NewProject } from '../../../src/modules/projects/service'
import { addDomain, campaignBody } from './fixture'

const FILTER = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }

forEachStore('campaigns API', (env) => {
  let p: NewProject
  let q: NewProject
  const sk = () => p.secretKey

  beforeAll(async () => {
    p = await env.project()
    q = await env.project()
    await addDomain(env, p.id, 'example.com', true)
    await addDomain(env, p.id, 'pending.org', false)
    await addDomain(env, q.id, 'other.net', true)
  })

  async function create(over: Record<string, unknown> = {}, key = sk()) {
    const r = await env.request('POST', '/campaigns', { key, body: campaignBody(over) })
    expect(r.status).toBe(200)
    expect(r.body.success).toBe(true)
    return r.body.data as Record<string, unknown> & { id: string; status: string }
  }
  const get = async (id: string) => (await env.request('GET', `/campaigns/${id}`, { key: sk() })).body
  const send = (id: string, body: unknown = {}) => env.request('POST', `/campaigns/${id}/send`, { key: sk(), body })
  const cancel = (id: string) => env.request('POST', `/campaigns/${id}/cancel`, { key: sk() })
  const future = () => new Date(Date.now() + 86_400_000).toISOString()

  async function segment(key = sk()) {
    const r = await env.request('POST', '/segments', { key, body: { name: `s-${Math.random()}`, condition: FILTER } })
    expect(r.status).toBeLessThan(300)
    return r.body.id as string
  }

  describe('POST /campaigns', () => {
    test('ALL: {success, data} DRAFT with every field; type defaults to MARKETING; from lower-cased', async () => {
      const c = await create({ from: ' News@Example.COM ' })
      expect(c).toMatchObject({
        name: 'Spring sale', description: 'Everything 20% off', subject: 'Hello {{firstName}}', from: 'news@example.com', fromName: 'Example',
        replyTo: 'support@example.com', type: 'MARKETING', status: 'DRAFT', audienceType: 'ALL', segmentId: null, audienceCondition: null,
        scheduledFor: null, totalRecipients: 0, sentCount: 0, deliveredCount: 0, openedCount: 0, clickedCount: 0, bouncedCount: 0,
        skippedUnsubscribed: 0, skippedSuppressed: 0, projectId: p.id, sentAt: null,
      })
      expect(c.id).toMatch(/^[0-9a-f-]{36}$/)
      expect(await get(c.id)).toEqual(c)
    })

    test('SEGMENT needs a segment of this project; FILTERED needs a valid condition (422 naming the filter)', async () => {
      const s = await segment()
      expect((await create({ audienceType: 'SEGMENT', segmentId: s })).segmentId).toBe(s)
      const missing = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ audienceType: 'SEGMENT' }) })
      expect(missing.status).toBe(422)
      expect(missing.body.error.errors[0].field).toBe('segmentId')
      const foreign = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ audienceType: 'SEGMENT', segmentId: await segment(q.secretKey) }) })
      expect(foreign.status).toBe(422)
      expect(foreign.body.error.errors[0].code).toBe('unknown_segment')

      const f = await create({ audienceType: 'FILTERED', audienceCondition: FILTER })
      expect(f.audienceCondition).toMatchObject(FILTER)
      const noCond = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ audienceType: 'FILTERED' }) })
      expect(noCond.status).toBe(422)
      expect(noCond.body.error.errors[0].field).toBe('audienceCondition')
      const bad = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'frobnicates', value: 1 }] }] }
      const badCond = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ audienceType: 'FILTERED', audienceCondition: bad }) })
      expect(badCond.status).toBe(422)
      expect(badCond.body.error.code).toBe('VALIDATION_ERROR')
      expect(badCond.body.error.errors[0].field).toMatch(/^audienceCondition\.groups\.0\.filters\.0/)
    })

    test('unverified or unknown sender domain: 403; bad input: 422; a body that does not compile: 422', async () => {
      for (const from of ['news@pending.org', 'news@nowhere.example', 'news@other.net']) {
        const r = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ from }) })
        expect({ from, status: r.status }).toEqual({ from, status: 403 })
      }
      for (const over of [{ name: '' }, { from: 'nope' }, { audienceType: 'SOME' }, { type: 'BULK' }, { subject: 'a\nb' }, { audienceType: undefined }]) {
        const r = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody(over) })
        expect({ over, status: r.status }).toEqual({ over, status: 422 })
      }
      const r = await env.request('POST', '/campaigns', { key: sk(), body: campaignBody({ body: '<p>{{#if}}</p>' }) })
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0].field).toBe('body')
    })
  })

  describe('GET /campaigns', () => {
    test('offset list with status filter, search, sort and dir; unknown status 400; other projects unseen', async () => {
      const r0 = await env.project()
      await addDomain(env, r0.id, 'list.test', true)
      const mk = (name: string) => create({ name, from: `a@list.test`, subject: `About ${name}` }, r0.secretKey)
      const a = await mk('Alpha')
      const b = await mk('bravo')
      const c = await mk('Charlie')
      const key = r0.secretKey
      const list = async (qs: string) => (await env.request('GET', `/campaigns?${qs}`, { key })).body
      const all = await list('')
      expect(all).toMatchObject({ page: 1, pageSize: 20, total: 3, totalPages: 1 })
      expect(all.data.map((x: { id: string }) => x.id)).toEqual([c.id, b.id, a.id])
      expect((await list('sort=name&dir=asc')).data.map((x: { name: string }) => x.name)).toEqual(['Alpha', 'bravo', 'Charlie'])
      expect((await list('sort=bogus&dir=bogus')).data[0].id).toBe(c.id)
      expect((await list('search=BRAV')).data.map((x: { id: string }) => x.id)).toEqual([b.id])
      expect((await list('search=about%20char')).total).toBe(1)
      expect((await list('search=list.test')).total).toBe(3)
      expect((await list('search=%25')).total).toBe(0)
      expect(await list('pageSize=2&page=2')).toMatchObject({ page: 2, pageSize: 2, total: 3, totalPages: 2 })
      expect((await env.request('POST', `/campaigns/${b.id}/send`, { key, body: { scheduledFor: future() } })).status).toBe(200)
      expect((await list('status=SCHEDULED')).data.map((x: { id: string }) => x.id)).toEqual([b.id])
      expect((await list('status=DRAFT')).total).toBe(2)
      const bad = await env.request('GET', '/campaigns?status=DONE', { key })
      expect(bad.status).toBe(400)
      expect(bad.body.error.message).toMatch(/DONE/)
      for (const qs of ['page=0', 'pageSize=abc', 'page=-1']) expect((await env.request('GET', `/campaigns?${qs}`, { key })).status).toBe(400)
      expect((await env.request('GET', '/campaigns?search=Alpha', { key: sk() })).body.total).toBe(0)
    })
  })

  describe('GET, PUT, DELETE, duplicate', () => {
    test('GET and PUT of another project\'s or an unknown id: 404, untouched', async () => {
      const c = await create()
      for (const key of [q.secretKey]) {
        expect((await env.request('GET', `/campaigns/${c.id}`, { key })).status).toBe(404)
        expect((await env.request('PUT', `/campaigns/${c.id}`, { key, body: campaignBody({ name: 'x', from: 'a@other.net' }) })).status).toBe(404)
        expect((await env.request('DELETE', `/campaigns/${c.id}`, { key })).status).toBe(404)
        for (const action of ['duplicate', 'cancel', 'send']) {
          expect((await env.request('POST', `/campaigns/${c.id}/${action}`, { key, body: {} })).status).toBe(404)
        }
        expect((await env.request('POST', `/campaigns/${c.id}/test`, { key, body: { email: 'x@y.test' } })).status).toBe(404)
        expect((await env.request('GET', `/campaigns/${c.id}/stats`, { key })).status).toBe(404)
      }
      expect((await env.request('GET', `/campaigns/${Bun.randomUUIDv7()}`, { key: sk() })).status).toBe(404)
      expect((await get(c.id)).name).toBe('Spring sale')
    })

    test('PUT replaces a DRAFT and a SCHEDULED campaign (keeping its time); 409 once SENDING, SENT or CANCELLED', async () => {
      const c = await create()
      const r = await env.request('PUT', `/campaigns/${c.id}`, { key: sk(), body: campaignBody({ name: 'Renamed', audienceType: 'FILTERED', audienceCondition: FILTER, description: null }) })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ name: 'Renamed', audienceType: 'FILTERED', description: null, status: 'DRAFT' })
      const at = future()
      expect((await send(c.id, { scheduledFor: at })).status).toBe(200)
      const r2 = await env.request('PUT', `/campaigns/${c.id}`, { key: sk(), body: campaignBody({ name: 'Again' }) })
      expect(r2.body).toMatchObject({ name: 'Again', status: 'SCHEDULED', scheduledFor: at, audienceType: 'ALL', audienceCondition: null })
      const badSender = await env.request('PUT', `/campaigns/${c.id}`, { key: sk(), body: campaignBody({ from: 'x@pending.org' }) })
      expect(badSender.status).toBe(403)
      expect((await cancel(c.id)).status).toBe(200)
      const refused = await env.request('PUT', `/campaigns/${c.id}`, { key: sk(), body: campaignBody() })
      expect(refused.status).toBe(409)
      expect(refused.body.error.message).toMatch(/CANCELLED/)
      const s = await create()
      expect((await send(s.id)).body.data.status).toBe('SENDING')
      expect((await env.request('PUT', `/campaigns/${s.id}`, { key: sk(), body: campaignBody() })).status).toBe(409)
    })

    test('DELETE: 204 for DRAFT, SCHEDULED and CANCELLED; 409 while SENDING', async () => {
      const d = await create()
      expect((await env.request('DELETE', `/campaigns/${d.id}`, { key: sk() })).status).toBe(204)
      expect((await env.request('GET', `/campaigns/${d.id}`, { key: sk() })).status).toBe(404)
      expect((await env.request('DELETE', `/campaigns/${d.id}`, { key: sk() })).status).toBe(404)
      const s = await create()
      await send(s.id, { scheduledFor: future() })
      expect((await env.request('DELETE', `/campaigns/${s.id}`, { key: sk() })).status).toBe(204)
      const live = await create()
      await send(live.id)
      const r = await env.request('DELETE', `/campaigns/${live.id}`, { key: sk() })
      expect(r.status).toBe(409)
      expect(r.body.error.message).toMatch(/SENDING/)
      await cancel(live.id)
      expect((await env.request('DELETE', `/campaigns/${live.id}`, { key: sk() })).status).toBe(204)
    })

    test('duplicate: a new DRAFT with the same content and audience, whatever the source\'s state', async () => {
      const c = await create({ audienceType: 'FILTERED', audienceCondition: FILTER })
      await send(c.id)
      const r = await env.request('POST', `/campaigns/${c.id}/duplicate`, { key: sk() })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ name: 'Spring sale (copy)', status: 'DRAFT', audienceType: 'FILTERED', audienceCondition: FILTER, sentCount: 0, scheduledFor: null })
      expect(r.body.id).not.toBe(c.id)
      expect((await get(c.id)).status).toBe('SENDING')
    })
  })

  describe('states', () => {
    test('send: absent or null → SENDING now; future → SCHEDULED; past → now; the response shape', async () => {
      for (const body of [{}, { scheduledFor: null }, { scheduledFor: '2001-01-01T00:00:00Z' }]) {
        const c = await create()
        const r = await send(c.id, body)
        expect(r.status).toBe(200)
        expect(r.body).toEqual({ success: true, data: { id: c.id, name: 'Spring sale', status: 'SENDING', scheduledFor: null }, message: expect.any(String) })
      }
      const bare = await create()
      const noBody = await env.request('POST', `/campaigns/${bare.id}/send`, { key: sk() })
      expect({ status: noBody.status, sent: noBody.body.data?.status }).toEqual({ status: 200, sent: 'SENDING' })
      const c = await create()
      const when = new Date(Date.now() + 3_600_000)
      const r = await send(c.id, { scheduledFor: when.toUTCString() })
      expect(r.body).toEqual({ success: true, data: { id: c.id, name: 'Spring sale', status: 'SCHEDULED', scheduledFor: new Date(Math.floor(when.getTime() / 1000) * 1000).toISOString() }, message: expect.stringMatching(/scheduled/i) })
      expect((await get(c.id)).status).toBe('SCHEDULED')
    })

    test('send: unparseable scheduledFor 400 and the campaign stays DRAFT; only a DRAFT can be sent (409)', async () => {
      const c = await create()
      for (const scheduledFor of ['tomorrow-ish', 'not a date', '2024-13-45T99:99:99Z']) {
        const r = await send(c.id, { scheduledFor })
        expect({ scheduledFor, status: r.status }).toEqual({ scheduledFor, status: 400 })
      }
      expect((await send(c.id, { scheduledFor: 42 })).status).toBe(422)
      expect((await get(c.id)).status).toBe('DRAFT')
      await send(c.id, { scheduledFor: future() })
      const again = await send(c.id)
      expect(again.status).toBe(409)
      expect(again.body.error.message).toMatch(/SCHEDULED.*only a DRAFT/)
      await cancel(c.id)
      const cancelled = await send(c.id)
      expect(cancelled.status).toBe(409)
      expect(cancelled.body.error.message).toMatch(/CANCELLED/)
      const s = await create()
      await send(s.id)
      expect((await send(s.id)).status).toBe(409)
    })

    test('send re-checks the sender domain: 403 and the campaign stays DRAFT', async () => {
      const r0 = await env.project()
      const domainId = await addDomain(env, r0.id, 'lapse.test', true)
      const c = await create({ from: 'a@lapse.test' }, r0.secretKey)
      const { domains } = env.store.t
      const { eq } = await import('drizzle-orm')
      await env.store.tx((db) => db.update(domains).set({ verified: false }).where(eq(domains.id, domainId)))
      const r = await env.request('POST', `/campaigns/${c.id}/send`, { key: r0.secretKey, body: {} })
      expect(r.status).toBe(403)
      expect((await env.request('GET', `/campaigns/${c.id}`, { key: r0.secretKey })).body.status).toBe('DRAFT')
    })

    test('send: a SEGMENT campaign whose segment was deleted meanwhile is refused (422) and stays DRAFT', async () => {
      const s = await segment()
      const c = await create({ audienceType: 'SEGMENT', segmentId: s })
      expect((await env.request('DELETE', `/segments/${s}`, { key: sk() })).status).toBe(204)
      const r = await send(c.id)
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0]).toMatchObject({ field: 'segmentId', code: 'unknown_segment' })
      expect((await get(c.id)).status).toBe('DRAFT')
    })

    test('cancel: SCHEDULED and SENDING → CANCELLED; DRAFT, SENT and CANCELLED refused with 409', async () => {
      const s = await create()
      await send(s.id, { scheduledFor: future() })
      const r = await cancel(s.id)
      expect(r.status).toBe(200)
      expect(r.body.status).toBe('CANCELLED')
      expect((await cancel(s.id)).status).toBe(409)
      const live = await create()
      await send(live.id)
      expect((await cancel(live.id)).body.status).toBe('CANCELLED')
      const d = await create()
      const refused = await cancel(d.id)
      expect(refused.status).toBe(409)
      expect(refused.body.error.message).toMatch(/DRAFT/)
    })

    test('stats: zero counts for a new campaign; 404 for another project', async () => {
      const c = await create()
      const r = await env.request('GET', `/campaigns/${c.id}/stats`, { key: sk() })
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        campaignId: c.id, status: 'DRAFT', totalRecipients: 0, queued: 0, pending: 0, sent: 0, delivered: 0, opened: 0, clicked: 0,
        bounced: 0, complained: 0, failed: 0, unsubscribed: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, variants: [],
      })
    })
  })

  describe('POST /campaigns/:id/test', () => {
    test('queues one email marked as a test, rendered with the contact\'s data, not counted; in any state', async () => {
      expect((await env.request('POST', '/contacts', { key: sk(), body: { email: 'tester@dest.test', data: { firstName: 'Tess', code: 'T1' } } })).status).toBeLessThan(300)
      const c = await create()
      const r = await env.request('POST', `/campaigns/${c.id}/test`, { key: sk(), body: { email: ' Tester@Dest.test ' } })
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({ success: true, data: { email: 'tester@dest.test' }, message: expect.any(String) })
      const { emails, emailContents } = env.store.t
      const { eq } = await import('drizzle-orm')
      const [e] = await env.store.db.select().from(emails).innerJoin(emailContents, eq(emailContents.emailId, emails.id)).where(eq(emails.id, r.body.data.id))
      expect(e.emails).toMatchObject({ toAddress: 'tester@dest.test', subject: 'Hello Tess', sourceType: 'test', sourceId: c.id, campaignId: null, type: 'MARKETING', listUnsubscribe: true })
      expect(e.email_contents.html).toContain('Hi Tess, code T1')
      const other = await env.request('POST', `/campaigns/${c.id}/test`, { key: sk(), body: { email: 'stranger@dest.test' } })
      expect(other.status).toBe(200)
      const [o] = await env.store.db.select().from(emails).where(eq(emails.id, other.body.data.id))
      expect(o).toMatchObject({ contactId: null, listUnsubscribe: false, subject: 'Hello ' })
      expect(await env.request('GET', `/campaigns/${c.id}/stats`, { key: sk() })).toMatchObject({ body: { queued: 0, pending: 0, totalRecipients: 0 } })
      await send(c.id)
      expect((await env.request('POST', `/campaigns/${c.id}/test`, { key: sk(), body: { email: 'tester@dest.test' } })).status).toBe(200)
    })

    test('a bad or suppressed address: 422', async () => {
      const c = await create()
      expect((await env.request('POST', `/campaigns/${c.id}/test`, { key: sk(), body: { email: 'nope' } })).status).toBe(422)
      expect((await env.request('POST', `/campaigns/${c.id}/test`, { key: sk(), body: {} })).status).toBe(422)
      expect((await env.request('POST', '/suppressions', { key: sk(), body: { email: 'blocked@dest.test' } })).status).toBeLessThan(300)
      const r = await env.request('POST', `/campaigns/${c.id}/test`, { key: sk(), body: { email: 'blocked@dest.test' } })
      expect(r.status).toBe(422)
      expect(r.body.error.errors[0]).toMatchObject({ field: 'email', code: 'suppressed' })
    })
  })

  describe('usage of fields and events', () => {
    test('unsent campaigns appear in the field and event usage: audience condition, subject and body placeholders', async () => {
      const r0 = await env.project()
      await addDomain(env, r0.id, 'usage.test', true)
      const key = r0.secretKey
      const cond = { logic: 'AND', groups: [{ filters: [{ field: 'data.tier', operator: 'equals', value: 'gold' }, { field: 'event.signup', operator: 'triggered' }] }] }
      const c = await create({ from: 'a@usage.test', audienceType: 'FILTERED', audienceCondition: cond, subject: 'Hi {{nickname}}', body: '<p>{{#if city}}{{city}}{{/if}}</p>' }, key)
      const usage = async (path: string) => (await env.request('GET', path, { key })).body.campaigns
      expect(await usage('/contacts/fields/tier/usage')).toEqual([{ id: c.id, name: 'Spring sale', where: 'audienceCondition' }])
      expect(await usage('/contacts/fields/nickname/usage')).toEqual([{ id: c.id, name: 'Spring sale', where: 'subject' }])
      expect(await usage('/contacts/fields/city/usage')).toEqual([{ id: c.id, name: 'Spring sale', where: 'body' }])
      expect(await usage('/events/signup/usage')).toEqual([{ id: c.id, name: 'Spring sale', where: 'audienceCondition' }])
      expect((await env.request('GET', '/contacts/fields/tier/usage', { key: sk() })).status).toBe(404)
      expect((await env.request('POST', `/campaigns/${c.id}/send`, { key, body: { scheduledFor: future() } })).status).toBe(200)
      expect((await usage('/contacts/fields/tier/usage')).length).toBe(1)
      expect((await env.request('POST', `/campaigns/${c.id}/cancel`, { key })).status).toBe(200)
      expect((await env.request('GET', '/contacts/fields/tier/usage', { key })).status).toBe(404)
    })
  })

  describe('segments in use', () => {
    test('a segment used by a SCHEDULED or SENDING campaign cannot be deleted (409); a DRAFT or CANCELLED one does not block', async () => {
      const s = await segment()
      const c = await create({ audienceType: 'SEGMENT', segmentId: s })
      await send(c.id, { scheduledFor: future() })
      const r = await env.request('DELETE', `/segments/${s}`, { key: sk() })
      expect(r.status).toBe(409)
      expect(r.body.error.message).toMatch(/Spring sale/)
      await cancel(c.id)
      await create({ audienceType: 'SEGMENT', segmentId: s })
      expect((await env.request('DELETE', `/segments/${s}`, { key: sk() })).status).toBe(204)
    })
  })

  test('the OpenAPI document lists every campaign route', async () => {
    const doc = (await env.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> }
    const routes = Object.entries(doc.paths).filter(([path]) => path.startsWith('/campaigns'))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{id\}/, ':id')}`)).sort()
    expect(routes).toEqual([
      'DELETE /campaigns/:id', 'GET /campaigns', 'GET /campaigns/:id', 'GET /campaigns/:id/links', 'GET /campaigns/:id/recipients', 'GET /campaigns/:id/stats', 'POST /campaigns',
      'POST /campaigns/:id/cancel', 'POST /campaigns/:id/duplicate', 'POST /campaigns/:id/send', 'POST /campaigns/:id/test', 'POST /campaigns/:id/unschedule', 'POST /campaigns/audience/count', 'PUT /campaigns/:id',
    ])
  })

  describe('security', () => {
    test('every route: no key 401 UNAUTHORIZED, public key 401 INVALID_API_KEY, bogus key 401', async () => {
      const c = await create()
      const routes: Array<[string, string, unknown?]> = [
        ['POST', '/campaigns', campaignBody()], ['GET', '/campaigns'], ['GET', `/campaigns/${c.id}`],
        ['PUT', `/campaigns/${c.id}`, campaignBody()], ['DELETE', `/campaigns/${c.id}`],
        ['POST', `/campaigns/${c.id}/duplicate`], ['POST', `/campaigns/${c.id}/cancel`], ['GET', `/campaigns/${c.id}/stats`],
        ['POST', `/campaigns/${c.id}/send`, {}], ['POST', `/campaigns/${c.id}/test`, { email: 'x@y.test' }],
      ]
      for (const [method, path, body] of routes) {
        const none = await env.request(method, path, { body })
        expect({ method, path, status: none.status, code: none.body.error.code }).toEqual({ method, path, status: 401, code: 'UNAUTHORIZED' })
        const pub = await env.request(method, path, { key: p.publicKey, body })
        expect({ method, path, status: pub.status, code: pub.body.error.code }).toEqual({ method, path, status: 401, code: 'INVALID_API_KEY' })
        const bogus = await env.request(method, path, { key: `sk_${'0'.repeat(64)}`, body })
        expect(bogus.status).toBe(401)
      }
      expect((await get(c.id)).status).toBe('DRAFT')
    })
  })
})
