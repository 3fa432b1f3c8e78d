import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq, inArray, sql } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { must } from '../../helpers/must'
import { startSink } from '../../helpers/smtp'
import { ctxFor } from '../../../src/deps'
import { countMatching, matchingAmong, pageMatching, prepareFilter, type FilterCtx } from '../../../src/filters'
import { parseReply } from '../../../src/mail/outbound/replies'
import type { OutboundPipeline } from '../../../src/mail/outbound/deliver'
import { BASE_KEYS } from '../../../src/modules/events/email-base'
import { Worker } from '../../../src/jobs/queue'
import { countEvents } from '../../../src/modules/analytics/repo'
import { campaignSendJob } from '../../../src/modules/campaigns/jobs'
import { wipeProjectData } from '../../../src/modules/projects/repo'
import { applyBounce } from '../../../src/modules/tracking/feedback'
import { emailById } from '../../../src/modules/tracking/repo'
import { startReceiver } from '../hooks/receiver'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../emails/fixture'

/**
 * Inline delivery events (src/modules/events/inline.ts, migration 0027). In a project no consumer listens
 * to (events/interest.ts), a direct MX delivery stores no email.sent / email.delivery rows: the email's
 * row holds the facts (`inline_events` 0, or 1 over TLS) and every reader synthesises the two events
 * under virtual ids (the email's id, char 14 -> '8', last char -> '0' sent / '1' delivery). These tests
 * check that every reader shows them exactly as stored rows would read: GET /events (list, by name, by
 * contact, paging), /events/names, /events/stats, /activity (items and totals), /emails/:id/attempts and
 * the filter engine; that a project with a consumer (a webhook endpoint) stores rows whose data has the
 * same shape; and that a bounce report rewriting the email's last reply first spills the two events into
 * real rows under the same ids, with the same data and the activity counters unchanged; and that deleting
 * a contact or resetting the project removes inline events as it removes stored ones.
 */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
afterAll(async () => { await sink.close(); await dns.close() })
const rnd = () => Math.random().toString(36).slice(2, 8)

const virtualId = (emailId: string, name: 'email.sent' | 'email.delivery') =>
  `${emailId.slice(0, 14)}8${emailId.slice(15, 35)}${name === 'email.sent' ? '0' : '1'}`

const INLINE_NAMES = ['email.sent', 'email.delivery']
const SENT_FACTS = ['attempt', 'sentAt', 'host']
const DELIVERY_FACTS = ['attempt', 'deliveredAt', 'host', 'reply', 'smtpCode', 'enhancedCode', 'tls']

type Json = Record<string, unknown>
interface ApiEvent { id: string; name: string; contactId: string | null; contact: { id: string; email: string } | null; data: Json; emailId: string | null; createdAt: string }

forEachStore('inline delivery events (projects without event consumers)', (env) => {
  let pipeline: OutboundPipeline

  beforeAll(() => { pipeline = pipelineFor(env) })

  type Project = Awaited<ReturnType<typeof projectWithDomain>>
  const quietProject = () => projectWithDomain(env, dns, `quiet-${rnd()}.test`)

  const get = async (p: Project, path: string) => {
    const res = await env.request('GET', path, { key: p.secretKey })
    expect({ path, status: res.status, body: res.status === 200 ? null : res.body }).toEqual({ path, status: 200, body: null })
    return res.body
  }
  /** POST /v1/send of one message to `to`; returns the email id and contact id. */
  const send = async (p: Project, to: string, subject = `Inline ${rnd()}`) => {
    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to, subject, body: '<p>Hi</p>' } })
    expect(sent.status).toBe(200)
    const e = sent.body.data.emails[0]
    return { id: e.email as string, contactId: e.contact.id as string, subject }
  }
  const track = async (p: Project, email: string, event: string) => {
    const r = await env.request('POST', '/v1/track', { key: p.secretKey, body: { email, event, data: { n: rnd() } } })
    expect(r.status).toBe(200)
    return r.body.data.event as string
  }
  /** Rows of `events` of the project (optionally of one email). */
  const storedRows = async (projectId: string, emailId?: string) => {
    const { events } = env.store.t
    return env.store.db.select().from(events)
      .where(and(eq(events.projectId, projectId), ...(emailId ? [eq(events.emailId, emailId)] : [])))
  }
  const inlineFlag = async (emailId: string): Promise<number | null> => {
    const { emails } = env.store.t
    const [m] = await env.store.db.select({ v: emails.inlineEvents }).from(emails).where(eq(emails.id, emailId))
    return must(m, `email ${emailId}`).v === null ? null : Number(m.v)
  }
  /** Every event of the project through GET /events, following the cursor with page size `limit`. */
  const allEvents = async (p: Project, limit: number, query = ''): Promise<ApiEvent[]> => {
    const out: ApiEvent[] = []
    let cursor: string | null = null
    for (let i = 0; i < 1000; i++) {
      const page = await get(p, `/events?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      out.push(...page.data)
      if (!page.hasMore) { expect(page.cursor).toBeNull(); return out }
      expect(page.data).toHaveLength(limit)
      cursor = page.cursor
    }
    throw new Error('GET /events never ended')
  }
  /** The order in which a stored event's data holding these keys (in the recorder's order) reads back. */
  const storedOrder = async (keys: readonly string[]): Promise<string[]> => {
    const text = JSON.stringify(Object.fromEntries(keys.map((k) => [k, 1])))
    const [r] = env.store.dialect === 'pg'
      ? await env.store.rows<{ j: string }>(sql`SELECT (${text}::jsonb)::text AS j`)
      : await env.store.rows<{ j: string }>(sql`SELECT json(${text}) AS j`)
    return Object.keys(JSON.parse(must(r, 'round trip').j))
  }
  /** The sum of the activity counters of `kind` (activity_counts) for the project. */
  const counted = async (projectId: string, kind: string) => {
    const [r] = await env.store.rows<{ n: number | string | null }>(sql`SELECT sum(n) AS n FROM activity_counts WHERE project_id = ${projectId} AND kind = ${kind}`)
    return Number(r?.n ?? 0)
  }

  /**
   * The data the two events must hold, built from the email record (GET /emails/:id), the email's base
   * first: what the recorder would have stored (recorder.ts, applyFinal, case 'accepted').
   */
  const expectedData = (m: Json, tls: boolean) => {
    const base = { emailId: m.id, messageId: m.messageId, subject: m.subject, from: m.from, to: m.to, templateId: m.templateId, campaignId: m.campaignId, sourceType: m.sourceType }
    const reply = parseReply(String(m.lastReply))
    return {
      sent: { ...base, attempt: m.attempts, sentAt: m.deliveredAt, host: m.deliveredTo },
      delivery: { ...base, attempt: m.attempts, deliveredAt: m.deliveredAt, host: m.deliveredTo, reply: m.lastReply, smtpCode: reply.code, enhancedCode: reply.enhanced, tls },
    }
  }

  test('a quiet project stores no delivery rows; every reader shows both events with their full data', async () => {
    const p = await quietProject()
    const to = `q.${rnd()}@dest.test`
    const { id, contactId, subject } = await send(p, to)
    await pipeline.drain()

    // Nothing in `events`; the flag on the email's row.
    const rows = await storedRows(p.id, id)
    expect(rows.filter((r) => INLINE_NAMES.includes(r.name)).map((r) => r.name)).toEqual([])
    const flag = await inlineFlag(id)
    expect([0, 1]).toContain(flag as number)
    const tls = flag === 1

    const m = await get(p, `/emails/${id}`)
    expect({ id: m.id, status: m.status, attempts: m.attempts, subject: m.subject, to: m.to, contactId: m.contactId }).toEqual({ id, status: 'DELIVERED', attempts: 1, subject, to, contactId })
    expect(m.deliveredTo).toContain('mx.dest.test')
    expect(m.lastReply).toMatch(/^250\b/)
    expect(m.sentAt).toBe(m.deliveredAt)
    const want = expectedData(m, tls)
    expect(want.delivery.smtpCode).toBe(250)
    const sentId = virtualId(id, 'email.sent')
    const deliveryId = virtualId(id, 'email.delivery')
    expect(sentId).not.toBe(id)
    expect(sentId.slice(0, 14) + sentId.slice(15, 35)).toBe(id.slice(0, 14) + id.slice(15, 35))
    const event = (name: string, evId: string, data: Json) => ({
      id: evId, name, contactId, contact: { id: contactId, email: to }, data, emailId: id, createdAt: m.deliveredAt,
    })
    const wantDelivery = event('email.delivery', deliveryId, want.delivery)
    const wantSent = event('email.sent', sentId, want.sent)

    // GET /events: both, newest first (same time: delivery's id sorts after sent's), full data, keys in order.
    const listed = (await get(p, '/events?limit=100')).data.filter((e: ApiEvent) => e.emailId === id)
    expect(listed).toEqual([wantDelivery, wantSent])
    expect(typeof listed[0].data.smtpCode).toBe('number')

    // By name: only that event (the query parameter is `name`).
    expect((await get(p, '/events?name=email.delivery&limit=100')).data).toEqual([wantDelivery])
    expect((await get(p, '/events?name=email.sent&limit=100')).data).toEqual([wantSent])
    expect((await get(p, '/events?name=email.delivery&limit=100')).total).toBe(1)
    expect((await get(p, `/events?name=email.delivery&contactId=${contactId}`)).data).toEqual([wantDelivery])
    expect((await get(p, '/events?name=email.open&limit=100')).data).toEqual([])

    // By contact.
    const timeline = await get(p, `/events/contact/${contactId}`)
    expect(timeline.data.filter((e: ApiEvent) => e.emailId === id)).toEqual([wantDelivery, wantSent])

    // The first page's total counts them with the stored events.
    const stored = await storedRows(p.id)
    expect((await get(p, '/events?limit=100')).total).toBe(stored.length + 2)

    // GET /emails/:id/attempts: the attempt as the stored email.delivery gives it.
    expect(await get(p, `/emails/${id}/attempts`)).toEqual({
      data: [{ attempt: 1, at: m.deliveredAt, outcome: 'accepted', host: m.deliveredTo, reply: m.lastReply, smtpCode: 250, enhancedCode: want.delivery.enhancedCode, nextAttemptAt: null, tls: want.delivery.tls, tlsNote: want.delivery.tls ? null : 'the server did not offer STARTTLS' }],
      attempts: 1, complete: true,
    })

    // GET /events/names: both names, counted once each.
    const names = (await get(p, '/events/names')).data as Array<{ name: string; count: number; lastSeenAt: string; reserved: boolean }>
    expect(names.find((n) => n.name === 'email.sent')).toEqual({ name: 'email.sent', count: 1, lastSeenAt: m.deliveredAt, reserved: true })
    expect(names.find((n) => n.name === 'email.delivery')).toEqual({ name: 'email.delivery', count: 1, lastSeenAt: m.deliveredAt, reserved: true })

    // GET /events/stats: counted in the totals, the period, the top names, the contacts and the day.
    const stats = await get(p, '/events/stats')
    expect(stats.totalEvents).toBe(stored.length + 2)
    expect(stats.eventsInPeriod).toBe(stored.length + 2)
    expect(stats.topEvents).toEqual(expect.arrayContaining([{ name: 'email.sent', count: 1 }, { name: 'email.delivery', count: 1 }]))
    expect(stats.uniqueNames).toBe(new Set([...stored.map((r) => r.name), ...INLINE_NAMES]).size)
    expect(stats.uniqueContacts).toBe(new Set([...stored.map((r) => r.contactId), contactId].filter(Boolean)).size)
    const day = String(m.deliveredAt).slice(0, 10)
    const storedToday = stored.filter((r) => r.createdAt.toISOString().slice(0, 10) === day).length
    expect(stats.daily).toEqual(expect.arrayContaining([{ date: day, count: storedToday + 2 }]))

    // GET /activity: the email.delivery item (email.sent is not an activity type), and its totals.
    const activityItem = { kind: 'event', id: deliveryId, type: 'email.delivery', contact: { id: contactId, email: to }, emailId: id, data: want.delivery, createdAt: m.deliveredAt }
    const byEmail = await get(p, `/activity?emailId=${id}&type=email.delivery`)
    expect(byEmail.data).toEqual([activityItem])
    expect(byEmail.total).toBe(1)
    const feed = await get(p, '/activity?limit=100')
    expect(feed.data.filter((i: { kind: string }) => i.kind === 'event')).toEqual([activityItem])
    const byType = await get(p, '/activity?type=email.delivery')
    expect(byType.data).toEqual([activityItem])
    expect(byType.total).toBe(1)
    expect((await get(p, `/activity?contactId=${contactId}&type=email.delivery`)).data).toEqual([activityItem])
    expect(await counted(p.id, 'email.delivery')).toBe(1)

    // Last: the data's keys in the order a stored row reads back on this store (the base first, then the
    // facts as the store keeps them: insertion order on SQLite, jsonb's order on PostgreSQL).
    expect([Object.keys(listed[0].data), Object.keys(listed[1].data)]).toEqual([
      [...BASE_KEYS, ...await storedOrder(DELIVERY_FACTS)], [...BASE_KEYS, ...await storedOrder(SENT_FACTS)],
    ])
  }, 60_000)

  test('a project with a webhook endpoint stores the rows; their data has the same keys, order and kinds of values', async () => {
    const quiet = await quietProject()
    const hooked = await projectWithDomain(env, dns, `hooked-${rnd()}.test`)
    const rx = startReceiver()
    const hook = await env.request('POST', '/webhooks/endpoints', { key: hooked.secretKey, body: { url: rx.url, eventTypes: ['email.*'] } })
    expect(hook.status).toBe(201)
    const subject = `Same ${rnd()}`
    const q = await send(quiet, `eq.${rnd()}@dest.test`, subject)
    const h = await send(hooked, `eq.${rnd()}@dest.test`, subject)
    await pipeline.drain()
    rx.stop()

    // The hooked project's events are rows; the quiet one's are not.
    expect((await storedRows(hooked.id, h.id)).map((r) => r.name).sort()).toEqual(['email.delivery', 'email.sent'])
    expect(await inlineFlag(h.id)).toBeNull()
    expect((await storedRows(quiet.id, q.id)).filter((r) => INLINE_NAMES.includes(r.name))).toEqual([])
    expect([0, 1]).toContain(await inlineFlag(q.id) as number)

    const eventsOf = async (p: Project, emailId: string) => {
      const list = (await get(p, '/events?limit=100')).data.filter((e: ApiEvent) => e.emailId === emailId) as ApiEvent[]
      return new Map(list.map((e) => [e.name, e]))
    }
    const qe = await eventsOf(quiet, q.id)
    const he = await eventsOf(hooked, h.id)
    expect([...qe.keys()]).toEqual(['email.delivery', 'email.sent'])
    expect([...he.keys()]).toEqual(['email.delivery', 'email.sent'])
    const kinds = (d: Json) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v === null ? 'null' : typeof v]))
    const qm = await get(quiet, `/emails/${q.id}`)
    const hm = await get(hooked, `/emails/${h.id}`)
    const qTls = (await inlineFlag(q.id)) === 1
    // Each event's data is what expectedData builds from its own email: the stored rows and the inline
    // events are the same function of the email's record.
    expect(must(qe.get('email.sent'), 'quiet sent').data).toEqual(expectedData(qm, qTls).sent)
    expect(must(qe.get('email.delivery'), 'quiet delivery').data).toEqual(expectedData(qm, qTls).delivery)
    expect(must(he.get('email.sent'), 'hooked sent').data).toEqual(expectedData(hm, qTls).sent)
    expect(must(he.get('email.delivery'), 'hooked delivery').data).toEqual(expectedData(hm, qTls).delivery)
    for (const name of INLINE_NAMES) {
      const a = must(qe.get(name), `quiet ${name}`)
      const b = must(he.get(name), `hooked ${name}`)
      expect({ name, keys: Object.keys(a.data).sort(), kinds: kinds(a.data) }).toEqual({ name, keys: Object.keys(b.data).sort(), kinds: kinds(b.data) })
      expect(Object.keys(a)).toEqual(Object.keys(b))
      // The same facts wherever the two deliveries are alike.
      for (const k of ['subject', 'templateId', 'campaignId', 'sourceType', 'attempt', 'host', 'smtpCode', 'enhancedCode', 'tls']) {
        if (k in b.data) expect({ name, k, v: a.data[k] }).toEqual({ name, k, v: b.data[k] })
      }
      // Each against its own email.
      expect([a.createdAt, a.contact, a.emailId]).toEqual([qm.deliveredAt, { id: q.contactId, email: qm.to }, q.id])
      expect([b.createdAt, b.contact, b.emailId]).toEqual([hm.deliveredAt, { id: h.contactId, email: hm.to }, h.id])
    }

    // The attempts read the same way.
    const qa = await get(quiet, `/emails/${q.id}/attempts`)
    const ha = await get(hooked, `/emails/${h.id}/attempts`)
    expect({ ...qa, data: qa.data.map((x: Json) => ({ ...x, at: null, reply: null })) }).toEqual({ ...ha, data: ha.data.map((x: Json) => ({ ...x, at: null, reply: null })) })

    // Last: the keys in the same order (a client comparing the JSON sees no difference).
    for (const name of INLINE_NAMES) {
      expect({ name, keys: Object.keys(must(qe.get(name), name).data) }).toEqual({ name, keys: Object.keys(must(he.get(name), name).data) })
    }
  }, 60_000)

  test('a bounce report after delivery spills the two events into rows under the same ids, with the same data', async () => {
    const p = await quietProject()
    const { id, contactId } = await send(p, `b.${rnd()}@dest.test`)
    await pipeline.drain()
    expect([0, 1]).toContain(await inlineFlag(id) as number)
    const before = (await get(p, '/events?limit=100')).data.filter((e: ApiEvent) => e.emailId === id) as ApiEvent[]
    expect(before.map((e) => [e.name, e.id])).toEqual([['email.delivery', virtualId(id, 'email.delivery')], ['email.sent', virtualId(id, 'email.sent')]])
    const m = await get(p, `/emails/${id}`)
    const attemptsBefore = await get(p, `/emails/${id}/attempts`)
    const activityBefore = await get(p, `/activity?emailId=${id}&type=email.delivery`)
    expect(activityBefore.data.map((i: { id: string }) => i.id)).toEqual([virtualId(id, 'email.delivery')])
    expect((await get(p, '/activity?type=email.delivery')).total).toBe(1)
    expect(await counted(p.id, 'email.delivery')).toBe(1)

    const ctx = ctxFor(env.deps, p.id, { kind: 'job', name: 'test' })
    const e = must(await emailById(env.store, env.store.db, id), 'email')
    const bouncedAt = new Date(Date.parse(m.deliveredAt) + 1000)
    const res = await env.store.tx((db) => applyBounce(ctx, db, e, {
      source: 'dsn', bounceType: 'hard', bounceKind: 'unknown-user', status: '5.1.1', diagnostic: '550 5.1.1 <user> No such user here',
      recipient: e.toAddress, at: bouncedAt,
    }))
    expect(res.applied).toBe(true)

    // Rows under the virtual ids, at the delivery's time; the flag cleared; the email's reply is the bounce's.
    expect(await inlineFlag(id)).toBeNull()
    const rows = await storedRows(p.id, id)
    const spilled = rows.filter((r) => INLINE_NAMES.includes(r.name)).sort((a, b) => (a.id < b.id ? -1 : 1))
    expect(spilled.map((r) => ({ id: r.id, name: r.name, contactId: r.contactId, at: r.createdAt.toISOString() }))).toEqual([
      { id: virtualId(id, 'email.sent'), name: 'email.sent', contactId, at: m.deliveredAt },
      { id: virtualId(id, 'email.delivery'), name: 'email.delivery', contactId, at: m.deliveredAt },
    ])
    expect(rows.map((r) => r.name).sort()).toEqual(['email.bounce', 'email.delivery', 'email.sent'])
    const after = await get(p, `/emails/${id}`)
    expect(after).toMatchObject({ status: 'BOUNCED', lastReply: '550 5.1.1 <user> No such user here' })

    // GET /events: the same two events, same ids and data, plus the bounce.
    const listed = (await get(p, '/events?limit=100')).data.filter((x: ApiEvent) => x.emailId === id) as ApiEvent[]
    expect(listed.map((x) => x.name)).toEqual(['email.bounce', 'email.delivery', 'email.sent'])
    expect(listed.slice(1)).toEqual(before)
    expect((await get(p, `/events/contact/${contactId}`)).data.filter((x: ApiEvent) => x.emailId === id).slice(1)).toEqual(before)
    const names = (await get(p, '/events/names')).data as Array<{ name: string; count: number }>
    expect(names.filter((n) => INLINE_NAMES.includes(n.name)).map((n) => [n.name, n.count]).sort()).toEqual([['email.delivery', 1], ['email.sent', 1]])
    expect((await get(p, '/events?name=email.delivery')).total).toBe(1)

    // The attempt still reads the delivery's reply (not the bounce's).
    const attemptsAfter = await get(p, `/emails/${id}/attempts`)
    expect(attemptsAfter.data[0]).toEqual(attemptsBefore.data[0])

    // Activity: the same item, counted once.
    const activityAfter = await get(p, `/activity?emailId=${id}&type=email.delivery`)
    expect(activityAfter.data).toEqual(activityBefore.data)
    expect(activityAfter.total).toBe(1)
    expect((await get(p, '/activity?type=email.delivery')).total).toBe(1)
    expect(await counted(p.id, 'email.delivery')).toBe(1)
    expect((await get(p, '/activity/types')).data.find((x: { type: string }) => x.type === 'email.delivery')?.count).toBe(1)

    // Last: the same data down to the order of its keys, before and after the spill.
    expect(listed.slice(1).map((x) => [x.name, Object.keys(x.data)])).toEqual(before.map((x) => [x.name, Object.keys(x.data)]))
  }, 60_000)

  test('paging GET /events returns every inline and stored event exactly once, newest first', async () => {
    const p = await quietProject()
    const to = `page.${rnd()}@dest.test`
    const other = `other.${rnd()}@dest.test`
    const emailIds: string[] = []
    let contactId = ''
    for (let i = 0; i < 5; i++) {
      const s = await send(p, i === 4 ? other : to)
      emailIds.push(s.id)
      if (i === 0) contactId = s.contactId
      await track(p, to, `step-${i}`)
      if (i % 2 === 1) await pipeline.drain()
    }
    await pipeline.drain()
    await track(p, to, 'last')
    for (const id of emailIds) expect({ id, flag: [0, 1].includes(await inlineFlag(id) as number) }).toEqual({ id, flag: true })

    // Ground truth: the rows of `events` plus two events per inline email, at its delivered_at.
    const { emails } = env.store.t
    const inline = await env.store.db.select({ id: emails.id, at: emails.deliveredAt, contactId: emails.contactId }).from(emails).where(inArray(emails.id, emailIds))
    const truth = [
      ...(await storedRows(p.id)).map((r) => ({ id: r.id, at: r.createdAt.getTime(), contactId: r.contactId, name: r.name })),
      ...inline.flatMap((m) => (['email.sent', 'email.delivery'] as const).map((name) => ({ id: virtualId(m.id, name), at: must(m.at, 'deliveredAt').getTime(), contactId: m.contactId, name }))),
    ].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    expect(truth.filter((x) => INLINE_NAMES.includes(x.name))).toHaveLength(10)
    expect(truth.filter((x) => x.name.startsWith('step-') || x.name === 'last')).toHaveLength(6)

    const first = await get(p, '/events?limit=3')
    expect(first.total).toBe(truth.length)
    for (const limit of [1, 2, 3, 7, 100]) {
      const ids = (await allEvents(p, limit)).map((e) => e.id)
      expect({ limit, ids }).toEqual({ limit, ids: truth.map((x) => x.id) })
    }
    // Filtered by name and by contact, the same.
    for (const name of ['email.delivery', 'email.sent']) {
      const ids = (await allEvents(p, 2, `&name=${name}`)).map((e) => e.id)
      expect({ name, ids }).toEqual({ name, ids: truth.filter((x) => x.name === name).map((x) => x.id) })
    }
    const mine = truth.filter((x) => x.contactId === contactId).map((x) => x.id)
    expect((await allEvents(p, 3, `&contactId=${contactId}`)).map((e) => e.id)).toEqual(mine)
    const timeline: string[] = []
    let cursor: string | null = null
    do {
      const page = await get(p, `/events/contact/${contactId}?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      timeline.push(...page.data.map((e: ApiEvent) => e.id))
      cursor = page.cursor
    } while (cursor)
    expect(timeline).toEqual(mine)
    // The activity feed pages the same way over its email.delivery items.
    const feed: string[] = []
    cursor = null
    do {
      const page = await get(p, `/activity?type=email.delivery&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      feed.push(...page.data.map((i: { id: string }) => i.id))
      cursor = page.cursor
    } while (cursor)
    expect(feed).toEqual(truth.filter((x) => x.name === 'email.delivery').map((x) => x.id))
  }, 60_000)

  test('the filter engine sees inline email.delivery and email.sent events', async () => {
    const p = await quietProject()
    const a = `fa.${rnd()}@dest.test`
    const b = `fb.${rnd()}@dest.test`
    const first = await send(p, a)
    await send(p, a)
    await pipeline.drain()
    await track(p, b, 'visited')
    const aId = first.contactId
    const bId = must((await get(p, `/events?name=visited`)).data[0]?.contactId, 'contact b')
    expect((await storedRows(p.id)).filter((r) => INLINE_NAMES.includes(r.name))).toEqual([])

    const ctx: FilterCtx = { store: env.store, projectId: p.id, now: new Date() }
    const one = (field: string, operator: string, value?: number, unit?: string) =>
      ({ logic: 'AND', groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) }] }] })
    const byId = new Map([[aId, 'a'], [bId, 'b']])
    const members = async (tree: unknown) => {
      const f = await prepareFilter(ctx, tree)
      const page = (await pageMatching(ctx, f, { offset: 0, limit: 100 })).map((r) => byId.get(r.id) ?? r.id).sort()
      const among = (await matchingAmong(ctx, f, [aId, bId])).map((id) => byId.get(id) ?? id).sort()
      const n = await countMatching(ctx, f)
      return { set: page, correlated: among, count: n }
    }
    const cases: Array<[unknown, string[]]> = [
      [one('event.email.delivery', 'triggered'), ['a']],
      [one('event.email.delivery', 'notTriggered'), ['b']],
      [one('event.email.delivery', 'triggeredWithin', 1, 'hours'), ['a']],
      [one('event.email.delivery', 'notTriggeredWithin', 1, 'hours'), ['b']],
      [one('event.email.delivery', 'triggeredMoreThan', 1), ['a']],
      [one('event.email.delivery', 'triggeredMoreThan', 2), []],
      [one('event.email.sent', 'triggered'), ['a']],
      [one('event.email.sent', 'triggeredMoreThan', 1), ['a']],
      [one('event.visited', 'triggered'), ['b']],
    ]
    const label = (tree: unknown) => JSON.stringify((tree as { groups: Array<{ filters: unknown[] }> }).groups[0].filters[0])
    const got: Array<[string, unknown]> = []
    for (const [tree] of cases) got.push([label(tree), await members(tree)])
    expect(got).toEqual(cases.map(([tree, want]) => [label(tree), { set: want, correlated: want, count: want.length }]))

    // Through the API: a preview and an untracked DYNAMIC segment (neither makes the project a consumer).
    const cond = one('event.email.delivery', 'triggeredWithin', 7, 'days')
    expect((await env.request('POST', '/segments/preview', { key: p.secretKey, body: { condition: cond } })).body).toMatchObject({ count: 1 })
    const seg = await env.request('POST', '/segments', { key: p.secretKey, body: { name: `Delivered ${rnd()}`, condition: cond, trackMembership: false } })
    expect(seg.status).toBe(201)
    expect(seg.body.memberCount).toBe(1)
    const listed = await get(p, `/segments/${seg.body.id}/contacts`)
    expect(listed.data.map((c: { id: string }) => c.id)).toEqual([aId])

    // The field catalogue lists the inline names among the project's events.
    const fields = JSON.stringify(await get(p, '/workflows/fields'))
    expect({ delivery: fields.includes('"event.email.delivery"'), sent: fields.includes('"event.email.sent"') }).toEqual({ delivery: true, sent: true })
  }, 60_000)

  test('deleting a contact removes its inline events like its stored ones; the counters follow', async () => {
    const p = await quietProject()
    const gone = `gone.${rnd()}@dest.test`
    const kept = `kept.${rnd()}@dest.test`
    const a = await send(p, gone)
    const b = await send(p, kept)
    await track(p, gone, 'visited')
    await pipeline.drain()
    expect(await inlineFlag(a.id)).not.toBeNull()
    expect(await counted(p.id, 'email.delivery')).toBe(2)

    const del = await env.request('DELETE', `/contacts/${a.contactId}`, { key: p.secretKey })
    expect(del.status).toBeLessThan(300)
    // The email stays (its record), its events do not: neither the tracked one nor the two inline ones.
    expect(await inlineFlag(a.id)).toBeNull()
    const left = await allEvents(p, 100)
    expect(left.filter((e) => e.emailId === a.id || e.name === 'visited')).toEqual([])
    expect(left.filter((e) => e.emailId === b.id).map((e) => e.id).sort()).toEqual([virtualId(b.id, 'email.delivery'), virtualId(b.id, 'email.sent')].sort())
    expect(await counted(p.id, 'email.delivery')).toBe(1)
    const names = await get(p, '/events/names')
    expect(names.data.find((n: { name: string }) => n.name === 'email.delivery')?.count).toBe(1)
    expect((await get(p, `/emails/${a.id}`)).status).toBe('DELIVERED')
  })

  test('a project reset wipes inline events with the stored ones; the emails stay', async () => {
    const p = await quietProject()
    const a = await send(p, `reset.${rnd()}@dest.test`)
    await pipeline.drain()
    expect((await allEvents(p, 100)).filter((e) => e.emailId === a.id)).toHaveLength(2)
    await env.store.tx((db) => wipeProjectData(env.store, db, p.id))
    expect(await allEvents(p, 100)).toEqual([])
    expect(await inlineFlag(a.id)).toBeNull()
    expect(await counted(p.id, 'email.delivery')).toBe(0)
    expect((await get(p, `/emails/${a.id}`)).status).toBe('DELIVERED')
  })

  test('a campaign: its activity, stats and analytics count the inline deliveries', async () => {
    const p = await quietProject()
    const tag = rnd()
    for (const x of ['a', 'b', 'c']) {
      const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: `${tag}-${x}@dest.test`, data: { firstName: x } } })
      expect(r.status).toBeLessThan(300)
    }
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name: 'Inline', subject: 'Hi {{firstName}}', body: '<p>Hi</p>', from: p.from, audienceType: 'ALL' } })
    expect(c.status).toBe(200)
    const id = c.body.data.id as string
    expect((await env.request('POST', `/campaigns/${id}/send`, { key: p.secretKey, body: {} })).status).toBe(200)
    await new Worker(env.deps, [campaignSendJob({ batchSize: 2 })]).drain()
    await pipeline.drain()

    const { emails } = env.store.t
    const ids = (await env.store.db.select({ id: emails.id, inline: emails.inlineEvents }).from(emails).where(eq(emails.campaignId, id)))
    expect(ids.map((m) => m.inline === null)).toEqual([false, false, false])
    expect((await storedRows(p.id)).filter((r) => INLINE_NAMES.includes(r.name))).toEqual([])
    // The campaign's activity walks the campaign's partial index: three deliveries, newest first, with their base.
    const feed = await get(p, `/activity?campaignId=${id}&type=email.delivery`)
    expect(feed.data.map((x: { id: string }) => x.id).sort()).toEqual(ids.map((m) => virtualId(m.id, 'email.delivery')).sort())
    expect(feed.data.every((x: { data: Json }) => x.data.campaignId === id && x.data.sourceType === 'campaign')).toBe(true)
    expect(feed.total).toBe(3)
    const stats = await get(p, `/campaigns/${id}/stats`)
    expect({ sent: stats.sent, delivered: stats.delivered }).toEqual({ sent: 3, delivered: 3 })
    // Analytics reads the inline deliveries of the hours not rolled up yet.
    const live = await countEvents(env.store, p.id, new Date(Date.now() - 3_600_000), new Date(Date.now() + 60_000))
    const sum = (campaignId: string, metric: string) => live.filter((x) => x.campaignId === campaignId && x.metric === metric).reduce((n, x) => n + x.value, 0)
    expect({ sent: sum(id, 'sent'), delivered: sum(id, 'delivered'), all: sum('', 'delivered') }).toEqual({ sent: 3, delivered: 3, all: 3 })
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct', webhookAllowHosts: ['127.0.0.1'] })
