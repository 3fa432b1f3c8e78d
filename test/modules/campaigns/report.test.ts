import { beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import type { NewProject } from '../../../src/modules/projects/service'
import { advanceEmail } from '../../../src/modules/tracking/repo'
import { recordClick, recordOpen } from '../../../src/modules/tracking/service'
import { addDomain, campaignBody } from './fixture'

/** Per-recipient reports (issue 36, item 7): filters, link filter, keyset pages, CSV, security. */
forEachStore('campaign recipient reports', (env) => {
  let p: NewProject
  let other: NewProject
  let id = ''
  const ids: Record<string, string> = {}
  beforeAll(async () => {
    p = await env.project()
    other = await env.project()
    await addDomain(env, p.id, 'example.com', true)
    for (const n of ['ann', 'bob', 'cy', 'di', 'ed']) {
      expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${n}@dest.test`, subscribed: true } })).status).toBeLessThan(300)
    }
    id = (await env.request('POST', '/campaigns', { key: p.secretKey, body: campaignBody({ subject: 'S', body: '<p><a href="https://a.test/x">x</a></p>' }) })).body.data.id
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })).status).toBe(200)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 2 })]).drain()
    const { emails, campaignUnsubscribes } = env.store.t
    const rows = await env.store.db.select().from(emails).where(and(eq(emails.campaignId, id), eq(emails.sourceType, 'campaign')))
    for (const r of rows) ids[r.toAddress.split('@')[0]] = r.id
    expect(Object.keys(ids).sort()).toEqual(['ann', 'bob', 'cy', 'di', 'ed'])
    await recordOpen(env.deps, ids.ann)
    await recordClick(env.deps, ids.ann, 'https://a.test/x')
    await recordClick(env.deps, ids.bob, 'https://a.test/y')
    await env.store.tx((db) => advanceEmail(env.store, db, p.id, ids.cy, { status: 'BOUNCED', bouncedAt: new Date(), bounceType: 'hard' }, new Date()))
    const di = rows.find((r) => r.id === ids.di)
    await env.store.tx((db) => db.insert(campaignUnsubscribes).values({ projectId: p.id, campaignId: id, contactId: di?.contactId ?? '', emailId: ids.di, createdAt: new Date() }))
  }, 60_000)
  const get = (path: string, key: string | null = p.secretKey) => env.request('GET', path, { key })
  const who = (r: { body: { data: Array<{ email: string }> } }) => r.body.data.map((x) => x.email.split('@')[0]).sort()

  test('filters: opened (a click counts), clicked, a link, bounced, unsubscribed; each row says what happened', async () => {
    const all = await get(`/campaigns/${id}/recipients`)
    expect(all.status).toBe(200)
    expect(who(all)).toEqual(['ann', 'bob', 'cy', 'di', 'ed'])
    const ann = all.body.data.find((x: { email: string }) => x.email === 'ann@dest.test')
    expect(ann).toMatchObject({ opens: 1, clicks: 1, links: ['https://a.test/x'], openedAt: expect.any(String), clickedAt: expect.any(String), bouncedAt: null, unsubscribedAt: null })
    expect(who(await get(`/campaigns/${id}/recipients?filter=opened`))).toEqual(['ann', 'bob'])
    expect(who(await get(`/campaigns/${id}/recipients?filter=clicked`))).toEqual(['ann', 'bob'])
    expect(who(await get(`/campaigns/${id}/recipients?filter=clicked&link=${encodeURIComponent('https://a.test/y')}`))).toEqual(['bob'])
    const bounced = await get(`/campaigns/${id}/recipients?filter=bounced`)
    expect(who(bounced)).toEqual(['cy'])
    expect(bounced.body.data[0].bounceType).toBe('hard')
    const unsub = await get(`/campaigns/${id}/recipients?filter=unsubscribed`)
    expect(who(unsub)).toEqual(['di'])
    expect(unsub.body.data[0].unsubscribedAt).toEqual(expect.any(String))
  })

  test('keyset pages cover every recipient once; CSV has a header and one row each', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const r = await get(`/campaigns/${id}/recipients?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(r.body.data.length).toBeLessThanOrEqual(2)
      seen.push(...r.body.data.map((x: { email: string }) => x.email))
      cursor = r.body.cursor
    } while (cursor)
    expect(seen.sort()).toEqual(['ann', 'bob', 'cy', 'di', 'ed'].map((n) => `${n}@dest.test`))
    const csv = await get(`/campaigns/${id}/recipients.csv?filter=clicked`)
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toContain('text/csv')
    const lines = csv.text.trim().split('\r\n')
    expect(lines[0]).toStartWith('email,status,deliveredAt,openedAt,clickedAt,opens,clicks,links')
    expect(lines.slice(1).map((l) => l.split(',')[0]).sort()).toEqual(['ann@dest.test', 'bob@dest.test'])
    expect(lines.find((l) => l.startsWith('ann@'))).toContain('https://a.test/x')
  })

  test('errors and security: bad filter 400, bad cursor 400, no key 401, public key 401, another project 404', async () => {
    const bad = await get(`/campaigns/${id}/recipients?filter=nope`)
    expect({ status: bad.status, code: bad.body.error.code }).toEqual({ status: 400, code: 'BAD_REQUEST' })
    expect((await get(`/campaigns/${id}/recipients?cursor=zzz`)).status).toBe(400)
    for (const path of [`/campaigns/${id}/recipients`, `/campaigns/${id}/recipients.csv`]) {
      expect((await get(path, null)).body.error.code).toBe('UNAUTHORIZED')
      expect((await get(path, p.publicKey)).body.error.code).toBe('INVALID_API_KEY')
      const theirs = await get(path, other.secretKey)
      expect({ status: theirs.status, code: theirs.body?.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    }
  })
})
