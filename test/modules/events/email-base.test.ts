import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { startSink } from '../../helpers/smtp'
import { Worker } from '../../../src/jobs/queue'
import { settleEvents } from '../../helpers/events'
import { BASE_KEYS, emailBase, storedData, withBase } from '../../../src/modules/events/email-base'
import { eventsByIds, insertEvents } from '../../../src/modules/events/repo'
import { eventRow } from '../../../src/modules/events/stream'
import { Dispatcher } from '../../../src/modules/hooks/dispatcher'
import { recordOpen } from '../../../src/modules/tracking/service'
import { workflowJobs } from '../../../src/modules/workflows/jobs'
import { wfClient } from '../workflows/fixture'
import { startReceiver, verified } from '../hooks/receiver'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../emails/fixture'

/**
 * Email events are stored without the email's base (docs/decisions.md, Events the service emits): the
 * rows hold only the event's own facts, and every read (the events list, the activity feed, the attempts,
 * webhook payloads, workflow trigger contexts) shows the full data as before, the base read from the
 * email's row. Rows stored with the full data read exactly as stored.
 */

const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
afterAll(async () => { await sink.close(); await dns.close() })
const rnd = () => Math.random().toString(36).slice(2, 8)

test('storedData leaves out exactly the base fields holding the base value; withBase restores the data', () => {
  const base = emailBase({ id: 'e1', messageId: '<m@x>', subject: 'Hi', fromAddress: 'a@x.test', toAddress: 'b@y.test', templateId: null, campaignId: 'c1', sourceType: 'campaign' })
  const full = { ...base, attempt: 2, host: 'mx', subject: 'Reported subject', templateId: 't9' }
  const stored = storedData(full, base)
  expect(stored).toEqual({ attempt: 2, host: 'mx', subject: 'Reported subject', templateId: 't9' })
  expect(withBase(stored, base)).toEqual(full)
  expect(Object.keys(withBase(stored, base))).toEqual(Object.keys(full))
})

forEachStore('email events stored without the email base', (env) => {
  let p: Awaited<ReturnType<typeof projectWithDomain>>
  const get = async (path: string) => {
    const res = await env.request('GET', path, { key: p.secretKey })
    expect({ path, status: res.status }).toEqual({ path, status: 200 })
    return res.body
  }
  const storedRows = async (emailId: string) => {
    const { events } = env.store.t
    return env.store.db.select({ id: events.id, name: events.name, data: events.data }).from(events)
      .where(and(eq(events.projectId, p.id), eq(events.emailId, emailId)))
  }
  const baseOf = async (emailId: string) => {
    const { emails } = env.store.t
    const [m] = await env.store.db.select().from(emails).where(eq(emails.id, emailId))
    return emailBase(m)
  }

  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `slim-${rnd()}.test`)
  })

  test('stored rows lack the base; the events list, activity, attempts, webhooks and workflow contexts show it', async () => {
    const rx = startReceiver()
    const hook = await env.request('POST', '/webhooks/endpoints', { key: p.secretKey, body: { url: rx.url, eventTypes: ['email.*'] } })
    expect(hook.status).toBe(201)
    const subject = `Slim ${rnd()}`
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'On delivery', eventName: 'email.delivery' })
    const cond = await c.step(wf.id, 'CONDITION', { field: 'context.event.data.subject', operator: 'equals', value: subject })
    const yes = await c.step(wf.id, 'EXIT', { reason: 'subject matched' })
    const no = await c.step(wf.id, 'EXIT', { reason: 'subject missing' })
    await c.link(wf.id, wf.steps[0].id, cond.id)
    await c.link(wf.id, cond.id, yes.id, 'yes')
    await c.link(wf.id, cond.id, no.id, 'no')
    await c.enable(wf.id)

    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to: `r.${rnd()}@dest.test`, subject, body: '<p>Hi</p>' } })
    expect(sent.status).toBe(200)
    const id = sent.body.data.emails[0].email as string
    await pipelineFor(env).drain()
    await recordOpen(env.deps, id)
    await settleEvents()

    const base = await baseOf(id)
    expect(base).toMatchObject({ emailId: id, subject, from: p.from, templateId: null, campaignId: null, sourceType: 'send' })
    const rows = await storedRows(id)
    expect(rows.map((r) => r.name).sort()).toEqual(['email.delivery', 'email.open', 'email.sent'])
    for (const r of rows) {
      for (const k of BASE_KEYS) expect({ name: r.name, key: k, stored: k in r.data }).toEqual({ name: r.name, key: k, stored: false })
    }
    const stored = new Map(rows.map((r) => [r.id, r.data]))
    const byName = new Map(rows.map((r) => [r.name, r.data]))
    expect(byName.get('email.sent')).toMatchObject({ attempt: 1, sentAt: expect.any(String), host: expect.stringContaining('mx.dest.test') })
    expect(byName.get('email.delivery')).toMatchObject({ attempt: 1, smtpCode: 250, reply: expect.stringMatching(/^250/) })
    expect(byName.get('email.open')).toMatchObject({ isFirstOpen: true, openedAt: expect.any(String) })
    const full = (eventId: string) => ({ ...base, ...stored.get(eventId) })

    // GET /events (and by contact): every email event with the base, in the order it always had.
    const listed = (await get('/events?limit=100')).data.filter((e: { emailId: string | null }) => e.emailId === id)
    expect(listed).toHaveLength(3)
    for (const e of listed) {
      expect(e.data).toEqual(full(e.id))
      expect(Object.keys(e.data).slice(0, BASE_KEYS.length)).toEqual([...BASE_KEYS])
    }
    const contactId = listed[0].contactId as string
    const timeline = (await get(`/events/contact/${contactId}`)).data
    expect(timeline.map((e: { id: string; data: unknown }) => e.data)).toEqual(timeline.map((e: { id: string }) => full(e.id)))

    // GET /activity: the email's events with the base.
    const feed = (await get(`/activity?emailId=${id}&type=email.delivery,email.open`)).data
    expect(feed.map((i: { type: string }) => i.type).sort()).toEqual(['email.delivery', 'email.open'])
    for (const i of feed) expect(i.data).toEqual(full(i.id))

    // GET /emails/:id/attempts: the accepting server's reply, as before.
    const attempts = await get(`/emails/${id}/attempts`)
    expect(attempts).toMatchObject({ attempts: 1, complete: true })
    expect(attempts.data).toEqual([expect.objectContaining({ attempt: 1, outcome: 'accepted', smtpCode: 250, host: byName.get('email.delivery')?.host })])

    // Webhook payloads: the full data, signed.
    expect(await new Dispatcher(env.deps, {}).drain()).toBe(3)
    const bodies = rx.received.map((r) => verified(hook.body.secret, r) as { type: string; data: Record<string, unknown> })
    expect(bodies.map((b) => b.type).sort()).toEqual(['email.delivery', 'email.open', 'email.sent'])
    for (const b of bodies) expect(b.data).toEqual({ ...base, ...byName.get(b.type) })
    rx.stop()

    // The workflow's trigger context holds the full data, and its CONDITION on the subject matches.
    const worker = new Worker(env.deps, workflowJobs)
    await worker.drain()
    const execs = (await get(`/workflows/${wf.id}/executions?limit=100`)).data
    expect(execs).toHaveLength(1)
    const exec = await get(`/workflows/${wf.id}/executions/${execs[0].id}`)
    expect(exec.context.event.data).toEqual({ ...base, ...byName.get('email.delivery') })
    expect(exec).toMatchObject({ status: 'EXITED', exitReason: 'subject matched' })
  }, 60_000)

  test('a row stored with the full data reads exactly as stored; a row missing some base fields gets them', async () => {
    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { from: p.from, to: `o.${rnd()}@dest.test`, subject: 'Old style', body: 'b' } })
    const id = sent.body.data.emails[0].email as string
    const base = await baseOf(id)
    const oldFull = { ...base, subject: 'The subject as it was recorded', openedAt: '2026-01-01T00:00:00.000Z', isFirstOpen: true }
    const partial = { emailId: id, clickedAt: '2026-01-01T00:00:01.000Z', link: 'https://example.org/', isFirstClick: true }
    const at = new Date()
    const old = eventRow(p.id, at, { contactId: null, name: 'email.open', emailId: id, data: oldFull })
    const half = eventRow(p.id, new Date(at.getTime() + 1), { contactId: null, name: 'email.click', emailId: id, data: partial })
    await env.store.tx((db) => insertEvents(env.store, db, [old, half]))

    const listed = new Map<string, Record<string, unknown>>((await get('/events?limit=100')).data.map((e: { id: string; data: Record<string, unknown> }) => [e.id, e.data]))
    expect(listed.get(old.id)).toEqual(oldFull)
    expect(listed.get(half.id)).toEqual({ ...base, ...partial })
    const feed = new Map<string, Record<string, unknown>>((await get(`/activity?emailId=${id}`)).data.map((i: { id: string; data: Record<string, unknown> }) => [i.id, i.data]))
    expect(feed.get(old.id)).toEqual(oldFull)
    expect(feed.get(half.id)).toEqual({ ...base, ...partial })
    // The outbox's read (webhooks, workflows): the same.
    const loaded = await eventsByIds(env.store, p.id, [old.id, half.id])
    expect(loaded.map((e) => e.data)).toEqual([oldFull, { ...base, ...partial }])
    // Another project's id never reads this project's email.
    const other = await env.project()
    expect(await eventsByIds(env.store, other.id, [old.id])).toEqual([])
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct', webhookAllowHosts: ['127.0.0.1'] })
