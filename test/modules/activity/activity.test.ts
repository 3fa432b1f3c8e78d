import { beforeAll, expect, test } from 'bun:test'
import { ctxFor } from '../../../src/deps'
import { clickUrl, openPixelUrl } from '../../../src/mail/links'
import { notifyEvents } from '../../../src/modules/events/stream'
import { applyBounce, applyComplaint } from '../../../src/modules/tracking/feedback'
import { emailById } from '../../../src/modules/tracking/repo'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { pathOf, queueTestEmail } from '../tracking/fixture'
import { must } from '../../helpers/must'

interface Item { kind: 'email' | 'event'; id: string; type?: string; status?: string; opens?: number; clicks?: number; emailId?: string | null; to?: string; contact?: { id: string; email: string } | null; createdAt: string }

async function bounce(env: TestEnv, emailId: string, type: 'hard' | 'soft') {
  const email = must(await emailById(env.store, env.store.db, emailId), 'the email')
  const ctx = ctxFor(env.deps, email.projectId, { kind: 'job', name: 'test' })
  const r = await env.store.tx((db) => applyBounce(ctx, db, email, {
    source: 'dsn', bounceType: type, bounceKind: type === 'hard' ? 'unknown-user' : 'mailbox-full', status: type === 'hard' ? '5.1.1' : '4.2.2',
    diagnostic: '550 5.1.1 no such user', recipient: email.toAddress, at: new Date(),
  }))
  await notifyEvents(ctx, r.events)
}

async function complain(env: TestEnv, emailId: string) {
  const email = must(await emailById(env.store, env.store.db, emailId), 'the email')
  const ctx = ctxFor(env.deps, email.projectId, { kind: 'job', name: 'test' })
  await env.store.tx((db) => applyComplaint(ctx, db, email, { source: 'arf', feedbackType: 'abuse', recipient: email.toAddress, at: new Date() }))
}

forEachStore('activity feed', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  const ids: string[] = []

  beforeAll(async () => {
    p = await env.project()
    for (let i = 0; i < 4; i++) {
      ids.push((await queueTestEmail(env, p.id, { to: `act${i}@dest.test`, status: 'DELIVERED' })).id)
      await Bun.sleep(2)
    }
    await env.request('GET', pathOf(openPixelUrl(env.deps, ids[0])))
    await env.request('GET', pathOf(openPixelUrl(env.deps, ids[0])))
    await env.request('GET', pathOf(openPixelUrl(env.deps, ids[1])))
    await env.request('GET', pathOf(clickUrl(env.deps, ids[1], 'https://example.com/x')))
    await bounce(env, ids[2], 'hard')
    await bounce(env, ids[3], 'soft')
    await complain(env, ids[3])
  })

  const get = (path: string, key: string | null = p.secretKey) => env.request('GET', path, { key })

  test('GET /activity merges emails (their state) and events (opens, clicks, bounces, complaints, unsubscribes), newest first', async () => {
    const res = await get('/activity?limit=100')
    expect(res.status).toBe(200)
    const data = res.body.data as Item[]
    // 4 emails, 3 opens, 1 click, 2 bounces, 1 complaint, 1 contact.unsubscribed (the complaint).
    expect(res.body.total).toBe(12)
    expect(data).toHaveLength(12)
    expect(res.body).toMatchObject({ hasMore: false, cursor: null })
    const times = data.map((d) => Date.parse(d.createdAt))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
    const emails = data.filter((d) => d.kind === 'email')
    expect(emails.map((e) => e.id).sort()).toEqual([...ids].sort())
    const byId = new Map(emails.map((e) => [e.id, e]))
    expect(byId.get(ids[0])).toMatchObject({ status: 'OPENED', opens: 2, clicks: 0 })
    expect(byId.get(ids[1])).toMatchObject({ opens: 1, clicks: 1 })
    expect(byId.get(ids[2])).toMatchObject({ opens: 0, clicks: 0 })
    expect(byId.get(ids[1])?.status).toBe('CLICKED')
    expect(byId.get(ids[2])?.status).toBe('BOUNCED')
    expect(byId.get(ids[3])?.status).toBe('COMPLAINED')
    const types = data.filter((d) => d.kind === 'event').map((d) => d.type).sort()
    expect(types).toEqual(['contact.unsubscribed', 'email.bounce', 'email.bounce', 'email.click', 'email.complaint', 'email.open', 'email.open', 'email.open'])
    const click = must(data.find((d) => d.type === 'email.click'), 'an email.click item')
    expect(click).toMatchObject({ emailId: ids[1], contact: { email: 'act1@dest.test' } })
  })

  test('cursor pages cover the same items exactly once; total only on the first page', async () => {
    const all = (await get('/activity?limit=100')).body.data as Item[]
    const seen: Item[] = []
    let cursor: string | null = null
    let first = true
    do {
      const res = await get(`/activity?limit=5${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.status).toBe(200)
      expect(res.body.total).toBe(first ? 12 : 0)
      first = false
      seen.push(...res.body.data)
      cursor = res.body.cursor
    } while (cursor)
    expect(seen.map((s) => s.id)).toEqual(all.map((a) => a.id))
  })

  test('filters: type (emails and/or event types), status, emailId, contactId', async () => {
    const opens = await get('/activity?type=email.open')
    expect(opens.body.total).toBe(3)
    expect((opens.body.data as Item[]).every((d) => d.type === 'email.open')).toBe(true)
    const emails = await get('/activity?type=email')
    expect(emails.body.total).toBe(4)
    expect((emails.body.data as Item[]).every((d) => d.kind === 'email')).toBe(true)
    const mix = await get('/activity?type=email.click,email.complaint')
    expect((mix.body.data as Item[]).map((d) => d.type).sort()).toEqual(['email.click', 'email.complaint'])
    const bounced = await get('/activity?status=BOUNCED')
    expect((bounced.body.data as Item[]).map((d) => d.id)).toEqual([ids[2]])
    const one = await get(`/activity?emailId=${ids[0]}`)
    expect(one.body.total).toBe(3) // the email and its two opens
    const contactId = must((one.body.data as Item[]).find((d) => d.kind === 'event')?.contact, 'the contact of an event item').id
    const byContact = await get(`/activity?contactId=${contactId}`)
    expect(byContact.body.total).toBe(3)
  })

  test('bad input: unknown type and bad cursor -> 400 BAD_REQUEST', async () => {
    const t = await get('/activity?type=email.sent')
    expect(t.status).toBe(400)
    expect(t.body.error.code).toBe('BAD_REQUEST')
    const c = await get('/activity?cursor=garbage')
    expect(c.status).toBe(400)
    expect(c.body.error.code).toBe('BAD_REQUEST')
  })

  test('GET /activity/stats: counts and rates over the period', async () => {
    const res = await get('/activity/stats?days=7')
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      periodDays: 7, emails: 4, opens: 3, uniqueOpens: 2, clicks: 1, uniqueClicks: 1, bounces: 2, hardBounces: 1, softBounces: 1,
      complaints: 1, unsubscribed: 1, received: 0,
    })
    // No email.sent events here (the emails were made as already delivered): rates stay 0, never NaN.
    expect(res.body.rates).toEqual({ delivery: 0, open: 0, click: 0, bounce: 0, complaint: 0 })
  })

  test('GET /activity/types and /activity/recent-count', async () => {
    const types = await get('/activity/types')
    expect(types.status).toBe(200)
    const map = Object.fromEntries((types.body.data as Array<{ type: string; count: number }>).map((t) => [t.type, t.count]))
    expect(map).toEqual({ email: 4, 'email.open': 3, 'email.click': 1, 'email.bounce': 2, 'email.complaint': 1, 'contact.unsubscribed': 1 })
    expect(types.body.data[0].type).toBe('email')
    const recent = await get('/activity/recent-count?minutes=60')
    expect(recent.body).toMatchObject({ count: 12, minutes: 60 })
  })

  test('security: no key 401, a public key 401 INVALID_API_KEY, another project sees none of it', async () => {
    for (const path of ['/activity', '/activity/stats', '/activity/types', '/activity/recent-count']) {
      expect((await get(path, null)).status).toBe(401)
      const pub = await get(path, p.publicKey)
      expect(pub.status).toBe(401)
      expect(pub.body.error.code).toBe('INVALID_API_KEY')
    }
    const other = await env.project()
    const theirs = await get('/activity', other.secretKey)
    expect(theirs.body).toMatchObject({ data: [], total: 0 })
    expect((await get(`/activity?emailId=${ids[0]}`, other.secretKey)).body.total).toBe(0)
    expect((await get('/activity/types', other.secretKey)).body.data).toEqual([])
    expect((await get('/activity/stats', other.secretKey)).body.opens).toBe(0)
  })
})
