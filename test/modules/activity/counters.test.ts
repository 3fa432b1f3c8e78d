import { beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ctxFor } from '../../../src/deps'
import { clickUrl, openPixelUrl } from '../../../src/mail/links'
import { ACTIVITY_TYPES } from '../../../src/modules/activity/model'
import { countedKinds, recountActivity } from '../../../src/modules/activity/repo'
import { TOTAL_CAP } from '../../../src/modules/activity/service'
import { pruneStoredContent } from '../../../src/modules/emails/jobs'
import { deleteByName, insertEvents } from '../../../src/modules/events/repo'
import { applyBounce, applyComplaint } from '../../../src/modules/tracking/feedback'
import { emailById } from '../../../src/modules/tracking/repo'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { must } from '../../helpers/must'
import { pathOf, queueTestEmail } from '../tracking/fixture'

/**
 * The activity counters (migration 0024, activity_counts) against the rows they count: after every kind
 * of write (the service's own paths, a bulk insert, a cascade, a delete, a move), the counters per kind
 * and hour equal a count of the rows, on both stores; and the feed's totals answered from them equal a
 * count of the items.
 */

const HOUR = 3_600_000
const CAMPAIGN = '0190f5a0-0000-7000-8000-00000000ca11'

/** kind \u0000 hour -> n, from the counters (summed over slots; zero rows left out). */
async function counted(env: TestEnv, projectId: string): Promise<Map<string, number>> {
  const rows = await env.store.rows<{ kind: string; hour: number | string; n: number | string }>(sql`SELECT kind, hour, sum(n) AS n FROM activity_counts
    WHERE project_id = ${projectId} GROUP BY kind, hour`)
  return new Map(rows.filter((r) => Number(r.n) !== 0).map((r) => [`${r.kind}\u0000${Number(r.hour)}`, Number(r.n)]))
}

/** The same, counted from the emails and events themselves. */
async function actual(env: TestEnv, projectId: string): Promise<Map<string, number>> {
  const hour = env.store.dialect === 'pg' ? sql.raw('(floor(extract(epoch from created_at) / 3600) * 3600000)::bigint') : sql.raw('created_at / 3600000 * 3600000')
  const kinds = sql.join(ACTIVITY_TYPES.filter((k) => k !== 'email').map((k) => sql`${k}`), sql`, `)
  const emails = await env.store.rows<{ hour: number | string; n: number | string }>(sql`SELECT ${hour} AS hour, count(*) AS n FROM emails WHERE project_id = ${projectId} GROUP BY 1`)
  const events = await env.store.rows<{ name: string; hour: number | string; n: number | string }>(sql`SELECT name, ${hour} AS hour, count(*) AS n FROM events
    WHERE project_id = ${projectId} AND name IN (${kinds}) GROUP BY name, 2`)
  return new Map([
    ...emails.map((r): [string, number] => [`email\u0000${Number(r.hour)}`, Number(r.n)]),
    ...events.map((r): [string, number] => [`${r.name}\u0000${Number(r.hour)}`, Number(r.n)]),
  ])
}

async function expectExact(env: TestEnv, projectId: string) {
  const a = await actual(env, projectId)
  expect(a.size).toBeGreaterThan(0)
  expect(Object.fromEntries(await counted(env, projectId))).toEqual(Object.fromEntries(a))
}

function eventRow(projectId: string, name: string, at: Date, o: { contactId?: string | null; emailId?: string | null } = {}) {
  return { id: Bun.randomUUIDv7(), projectId, contactId: o.contactId ?? null, name, data: {}, emailId: o.emailId ?? null, createdAt: at }
}

forEachStore('activity counters', (env) => {
  let p: { id: string; secretKey: string; publicKey: string }
  let other: { id: string; secretKey: string; publicKey: string }
  const ids: string[] = []

  beforeAll(async () => {
    p = await env.project()
    other = await env.project()
    for (let i = 0; i < 4; i++) ids.push((await queueTestEmail(env, p.id, { to: `cnt${i}@dest.test`, status: 'DELIVERED', campaignId: i < 2 ? CAMPAIGN : null })).id)
    await queueTestEmail(env, other.id, { to: 'theirs@dest.test', status: 'DELIVERED' })
  })

  const get = (path: string) => env.request('GET', path, { key: p.secretKey })

  test('every kind of insert is counted in its hour: sends, opens, clicks, bounces, complaints (and their unsubscribe), a bulk insert', async () => {
    await env.request('GET', pathOf(openPixelUrl(env.deps, ids[0])))
    await env.request('GET', pathOf(openPixelUrl(env.deps, ids[0])))
    await env.request('GET', pathOf(clickUrl(env.deps, ids[1], 'https://example.com/x')))
    const ctx = ctxFor(env.deps, p.id, { kind: 'job', name: 'test' })
    const e2 = must(await emailById(env.store, env.store.db, ids[2]), 'email 2')
    await env.store.tx((db) => applyBounce(ctx, db, e2, {
      source: 'dsn', bounceType: 'soft', bounceKind: 'mailbox-full', status: '4.2.2', diagnostic: '452 full', recipient: e2.toAddress, at: new Date(),
    }))
    const e3 = must(await emailById(env.store, env.store.db, ids[3]), 'email 3')
    await env.store.tx((db) => applyComplaint(ctx, db, e3, { source: 'arf', feedbackType: 'abuse', recipient: e3.toAddress, at: new Date() }))
    // One statement of several rows over several hours and kinds (PostgreSQL counts a statement at once), and
    // a tracked event and email.sent, which the feed does not list and the counters leave out.
    const base = Date.now() - 5 * 24 * HOUR
    await env.store.tx((db) => insertEvents(env.store, db, [
      eventRow(p.id, 'email.delivery', new Date(base), { emailId: ids[0] }),
      eventRow(p.id, 'email.delivery', new Date(base + 60_000), { emailId: ids[1] }),
      eventRow(p.id, 'email.delivery', new Date(base + 2 * HOUR), { emailId: ids[2] }),
      eventRow(p.id, 'email.received', new Date(base + 3 * HOUR)),
      eventRow(p.id, 'contact.subscribed', new Date(base + 3 * HOUR + 1)),
      eventRow(p.id, 'page_view', new Date(base)),
      eventRow(p.id, 'email.sent', new Date(base), { emailId: ids[0] }),
    ]))
    await expectExact(env, p.id)
    await expectExact(env, other.id)
    const c = await countedKinds(env.store, p.id, ACTIVITY_TYPES)
    expect(Object.fromEntries(c)).toEqual({
      email: 4, 'email.open': 2, 'email.click': 1, 'email.bounce': 1, 'email.complaint': 1, 'contact.unsubscribed': 1,
      'email.delivery': 3, 'email.received': 1, 'contact.subscribed': 1,
    })
    expect(c.has('page_view')).toBe(false)
    const types = await get('/activity/types')
    expect(types.status).toBe(200)
    expect((types.body.data as Array<{ type: string; count: number }>).map((t) => [t.type, t.count])).toEqual([
      ['email', 4], ['email.delivery', 3], ['email.open', 2], ['contact.subscribed', 1], ['contact.unsubscribed', 1],
      ['email.bounce', 1], ['email.click', 1], ['email.complaint', 1], ['email.received', 1],
    ])
  })

  test('the first page\'s total is the number of items, by type and over windows whose edges fall inside an hour', async () => {
    const all = await get('/activity?limit=100')
    expect(all.body.total).toBe(15)
    expect(all.body.data).toHaveLength(15)
    const times = (all.body.data as Array<{ createdAt: string; kind: string; type?: string }>)
    for (const [from, to] of [
      [Date.now() - 5 * 24 * HOUR + 30_000, Date.now() + 1000], // starts inside an hour of the bulk insert, ends now
      [Date.now() - 5 * 24 * HOUR - 1, Date.now() - 5 * 24 * HOUR + 2 * HOUR + 1], // whole hours plus both edges
      [Date.now() - 5 * 24 * HOUR + 1, Date.now() - 5 * 24 * HOUR + 60_001], // inside one hour
      [Date.now() - 5 * 24 * HOUR + 3 * HOUR, Date.now() - 5 * 24 * HOUR + 3 * HOUR + 1], // one millisecond: the received mail only
    ]) {
      const expected = times.filter((d) => Date.parse(d.createdAt) >= from && Date.parse(d.createdAt) < to).length
      const res = await get(`/activity?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&limit=100`)
      expect(res.body.total).toBe(expected)
      expect(res.body.data).toHaveLength(expected)
    }
    const opens = await get('/activity?type=email.open,email.delivery&limit=100')
    expect(opens.body.total).toBe(5)
    expect(opens.body.data).toHaveLength(5)
    const recent = await get('/activity/recent-count?minutes=60')
    expect(recent.body.count).toBe(15 - 5) // the bulk insert's five listed events are days old
  })

  test('a deleted contact takes its events with it (a cascade), and the counters follow; the content-retention job changes no count', async () => {
    const contactId = (await env.store.rows<{ id: string }>(sql`SELECT id FROM contacts WHERE project_id = ${p.id} AND email = 'cnt0@dest.test'`))[0].id
    const before = await get('/activity?limit=100')
    const theirs = (before.body.data as Array<{ kind: string; contact?: { id: string } | null }>).filter((d) => d.kind === 'event' && d.contact?.id === contactId).length
    expect(theirs).toBeGreaterThan(0)
    const del = await env.request('DELETE', `/contacts/${contactId}`, { key: p.secretKey })
    expect(del.status).toBeLessThan(300)
    await expectExact(env, p.id)
    const after = await get('/activity?limit=100')
    expect(after.body.total).toBe(before.body.total - theirs)
    expect(after.body.data).toHaveLength(after.body.total)

    // Content retention: every email is older than the retention (now moved 400 days on); records stay.
    await pruneStoredContent(env.deps, new Date(Date.now() + 400 * 24 * HOUR))
    await expectExact(env, p.id)
    expect((await get('/activity?limit=100')).body.total).toBe(after.body.total)
  })

  test('deleted events, events moved to another hour or kind, and a deleted project: no drift', async () => {
    const opensBefore = (await countedKinds(env.store, p.id, ['email.open'])).get('email.open') ?? 0
    await env.store.tx((db) => deleteByName(env.store, db, p.id, 'email.delivery'))
    await expectExact(env, p.id)
    expect((await countedKinds(env.store, p.id, ['email.delivery'])).get('email.delivery') ?? 0).toBe(0)
    // A move (nothing in the service does this; the triggers keep it right anyway).
    const e = env.store.t.events
    const [received] = await env.store.db.select({ id: e.id, at: e.createdAt }).from(e).where(eq(e.name, 'email.received')).limit(1)
    await env.store.tx((db) => db.update(e).set({ createdAt: new Date(received.at.getTime() - 30 * 24 * HOUR) }).where(eq(e.id, received.id)))
    await env.store.tx((db) => db.update(e).set({ name: 'email.open' }).where(eq(e.name, 'contact.subscribed')))
    await env.store.tx((db) => db.update(e).set({ name: 'page_view' }).where(eq(e.name, 'contact.unsubscribed')))
    await expectExact(env, p.id)
    expect((await countedKinds(env.store, p.id, ['email.open'])).get('email.open')).toBe(opensBefore + 1)
    const m = env.store.t.emails
    await env.store.tx((db) => db.update(m).set({ createdAt: new Date(Date.now() - 40 * 24 * HOUR) }).where(eq(m.id, ids[3])))
    await expectExact(env, p.id)

    // A recount from the rows (after a bulk load) changes nothing when the triggers kept up.
    const kept = await counted(env, p.id)
    await env.store.tx((db) => recountActivity(env.store, db))
    expect(Object.fromEntries(await counted(env, p.id))).toEqual(Object.fromEntries(kept))

    await env.store.tx((db) => db.delete(env.store.t.projects).where(eq(env.store.t.projects.id, other.id)))
    const left = await env.store.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM activity_counts WHERE project_id = ${other.id}`)
    expect(Number(left[0].n)).toBe(0)
    await expectExact(env, p.id)
  })

  test('events of a campaign\'s emails carry the campaign (set by insertEvents on both stores), whoever inserts them', async () => {
    const rows = await env.store.rows<{ email_id: string; campaign_id: string | null }>(sql`SELECT email_id, campaign_id FROM events WHERE project_id = ${p.id} AND email_id IS NOT NULL`)
    expect(rows.length).toBeGreaterThan(0)
    for (const r of rows) expect(r.campaign_id).toBe(ids.indexOf(r.email_id) < 2 ? CAMPAIGN : null)
    const feed = await get(`/activity?campaignId=${CAMPAIGN}&limit=100`)
    const evs = (feed.body.data as Array<{ kind: string; emailId?: string }>).filter((d) => d.kind === 'event')
    expect(evs.length).toBeGreaterThan(0)
    expect(evs.every((d) => d.emailId === ids[0] || d.emailId === ids[1])).toBe(true)
    expect(feed.body.total).toBe(feed.body.data.length)
  })

  test('a filtered total is counted up to TOTAL_CAP', async () => {
    const contact = (await env.store.rows<{ id: string }>(sql`SELECT id FROM contacts WHERE project_id = ${p.id} AND email = 'cnt1@dest.test'`))[0].id
    const at = Date.now() - 2 * 24 * HOUR
    const rows = Array.from({ length: TOTAL_CAP + 5 }, (_, i) => eventRow(p.id, 'email.open', new Date(at + i), { contactId: contact }))
    for (let i = 0; i < rows.length; i += 1000) await env.store.tx((db) => insertEvents(env.store, db, rows.slice(i, i + 1000)))
    const res = await get(`/activity?contactId=${contact}&type=email.open&limit=5`)
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(TOTAL_CAP)
    expect(res.body.hasMore).toBe(true)
    // Unfiltered, the counters answer exactly.
    const all = await get('/activity?type=email.open&limit=5')
    expect(all.body.total).toBe((await countedKinds(env.store, p.id, ['email.open'])).get('email.open'))
    expect(all.body.total).toBeGreaterThan(TOTAL_CAP)
    await expectExact(env, p.id)
  })
})
