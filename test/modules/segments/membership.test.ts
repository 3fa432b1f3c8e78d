import { beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { and, eq, like, sql } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { forgetSegmentHintCache, segmentJobs } from '../../../src/modules/segments/jobs'
import { settleEvents } from '../../helpers/events'
import { computeKey } from '../../../src/modules/segments/service'
import { must } from '../../helpers/must'

const cond = (field: string, operator: string, value?: unknown, unit?: string) =>
  ({ logic: 'AND', groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) }] }] })

/** Entry/exit events of tracked segments: once per change, nothing when nothing changed. */
forEachStore('segment membership', (env) => {
  let key: string
  let projectId: string
  const req = (method: string, path: string, body?: unknown) => env.request(method, path, { key, body })

  async function segEvents(slug: string) {
    const e = env.store.t.events
    const c = env.store.t.contacts
    const rows = await env.store.db.select({ name: e.name, email: c.email, data: e.data }).from(e).innerJoin(c, eq(c.id, e.contactId))
      .where(and(eq(e.projectId, projectId), like(e.name, `segment.${slug}.%`))).orderBy(e.id)
    return rows.map((r) => `${r.name.slice(`segment.${slug}.`.length)} ${r.email}`)
  }
  async function memberRows(segmentId: string) {
    const m = env.store.t.segmentMembers
    const c = env.store.t.contacts
    const rows = await env.store.db.select({ email: c.email }).from(m).innerJoin(c, eq(c.id, m.contactId)).where(eq(m.segmentId, segmentId))
    return rows.map((r) => r.email).sort()
  }
  const upsert = (email: string, data: Record<string, unknown>, subscribed?: boolean) =>
    req('POST', '/contacts', { email, data, ...(subscribed !== undefined ? { subscribed } : {}) })
  async function jobsFor(segmentId: string) {
    const j = env.store.t.jobs
    return env.store.db.select().from(j).where(and(eq(j.uniqueKey, computeKey(segmentId)), eq(j.status, 'queued')))
  }
  /** Makes queued jobs due now and runs them. */
  async function runJobs() {
    await env.store.exec(sql`UPDATE jobs SET run_at = ${env.kind === 'pg' ? sql`now()` : sql`${Date.now()}`} WHERE status = 'queued' AND name LIKE 'segments.%'`)
    await new Worker(env.deps, segmentJobs).drain()
  }

  beforeAll(async () => {
    const p = await env.project()
    key = p.secretKey
    projectId = p.id
    await upsert('a@x.io', { plan: 'pro' })
    await upsert('b@x.io', { plan: 'free' })
    await upsert('c@x.io', { plan: 'pro' })
  })
  beforeEach(() => forgetSegmentHintCache())

  test('compute: one entry per contact that starts matching, one exit per contact that stops, nothing otherwise', async () => {
    const s = (await req('POST', '/segments', { name: 'Pro plan', condition: cond('data.plan', 'equals', 'pro'), trackMembership: true })).body
    expect(s.slug).toBe('pro-plan')
    const first = await req('POST', `/segments/${s.id}/compute`)
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ id: s.id, entered: 2, exited: 0, memberCount: 2 })
    expect(await segEvents('pro-plan')).toEqual(['entry a@x.io', 'entry c@x.io'])
    expect(await memberRows(s.id)).toEqual(['a@x.io', 'c@x.io'])

    // Nothing changed: nothing happens.
    const again = await req('POST', `/segments/${s.id}/compute`)
    expect(again.body).toMatchObject({ entered: 0, exited: 0, memberCount: 2 })
    expect((await segEvents('pro-plan')).length).toBe(2)

    // b starts matching, a stops; c's unrelated change changes nothing.
    await upsert('b@x.io', { plan: 'pro' })
    await upsert('a@x.io', { plan: 'free' })
    await upsert('c@x.io', { city: 'Oslo' })
    const third = await req('POST', `/segments/${s.id}/compute`)
    expect(third.body).toMatchObject({ entered: 1, exited: 1, memberCount: 2 })
    expect(await segEvents('pro-plan')).toEqual(['entry a@x.io', 'entry c@x.io', 'entry b@x.io', 'exit a@x.io'])
    expect(await memberRows(s.id)).toEqual(['b@x.io', 'c@x.io'])
    expect((await req('GET', `/segments/${s.id}`)).body.memberCount).toBe(2)

    const fourth = await req('POST', `/segments/${s.id}/compute`)
    expect(fourth.body).toMatchObject({ entered: 0, exited: 0 })
    expect((await segEvents('pro-plan')).length).toBe(4)

    // Event data names the segment.
    const e = env.store.t.events
    const [row] = await env.store.db.select().from(e).where(eq(e.name, 'segment.pro-plan.exit'))
    expect(row.data).toEqual({ segmentId: s.id, segmentName: 'Pro plan' })

    // A deleted member leaves without an event (it no longer exists to receive one).
    await req('DELETE', `/contacts/${(await upsert('c@x.io', {})).body.id}`)
    const fifth = await req('POST', `/segments/${s.id}/compute`)
    expect(fifth.body).toMatchObject({ entered: 0, exited: 0, memberCount: 1 })
    await upsert('c@x.io', { plan: 'pro' })
  })

  test('two computes at once never emit a change twice', async () => {
    const s = (await req('POST', '/segments', { name: 'Race', condition: cond('data.plan', 'equals', 'pro'), trackMembership: true })).body
    const [x, y] = await Promise.all([req('POST', `/segments/${s.id}/compute`), req('POST', `/segments/${s.id}/compute`)])
    expect(x.body.entered + y.body.entered).toBe(2)
    expect((await segEvents('race')).sort()).toEqual(['entry b@x.io', 'entry c@x.io'])
  })

  test('event-based conditions: entry when the event arrives', async () => {
    const s = (await req('POST', '/segments', { name: 'Buyers', condition: cond('event.purchase', 'triggeredWithin', 7, 'days'), trackMembership: true })).body
    expect((await req('POST', `/segments/${s.id}/compute`)).body).toMatchObject({ entered: 0, exited: 0, memberCount: 0 })
    expect((await req('POST', '/events/track', { email: 'b@x.io', event: 'purchase' })).status).toBeLessThan(300)
    expect((await req('POST', `/segments/${s.id}/compute`)).body).toMatchObject({ entered: 1, exited: 0, memberCount: 1 })
    expect(await segEvents('buyers')).toEqual(['entry b@x.io'])
  })

  test('turning tracking off drops the rows; on again starts from nobody', async () => {
    const s = (await req('POST', '/segments', { name: 'Toggle', condition: cond('data.plan', 'equals', 'pro'), trackMembership: true })).body
    await req('POST', `/segments/${s.id}/compute`)
    expect((await memberRows(s.id)).length).toBe(2)
    await req('PATCH', `/segments/${s.id}`, { trackMembership: false })
    expect(await memberRows(s.id)).toEqual([])
    expect((await req('POST', `/segments/${s.id}/compute`)).status).toBe(400)
    await req('PATCH', `/segments/${s.id}`, { trackMembership: true })
    expect((await req('POST', `/segments/${s.id}/compute`)).body).toMatchObject({ entered: 2, exited: 0 })
    expect((await segEvents('toggle')).length).toBe(4)
  })

  test('STATIC tracked segments emit entry/exit as members are added and removed', async () => {
    const s = (await req('POST', '/segments', { name: 'Static tracked', type: 'STATIC', trackMembership: true })).body
    await req('POST', `/segments/${s.id}/members`, { emails: ['a@x.io', 'b@x.io'] })
    await req('POST', `/segments/${s.id}/members`, { emails: ['a@x.io'] })
    await req('DELETE', `/segments/${s.id}/members`, { emails: ['a@x.io', 'c@x.io'] })
    await req('DELETE', `/segments/${s.id}/members`, { emails: ['a@x.io'] })
    expect(await segEvents('static-tracked')).toEqual(['entry a@x.io', 'entry b@x.io', 'exit a@x.io'])
    // Untracked: no events.
    const u = (await req('POST', '/segments', { name: 'Static quiet', type: 'STATIC' })).body
    await req('POST', `/segments/${u.id}/members`, { emails: ['a@x.io'] })
    expect(await segEvents('static-quiet')).toEqual([])
  })

  describe('background recompute', () => {
    test('creating a tracked segment queues its first compute; the worker runs it', async () => {
      const s = (await req('POST', '/segments', { name: 'Queued', condition: cond('data.plan', 'equals', 'pro'), trackMembership: true })).body
      expect((await jobsFor(s.id)).length).toBe(1)
      await runJobs()
      expect(await segEvents('queued')).toEqual(['entry b@x.io', 'entry c@x.io'])
      expect((await req('GET', `/segments/${s.id}`)).body.memberCount).toBe(2)
    })

    test('the 5-minute sweep recomputes tracked segments and recounts the others', async () => {
      const tracked = (await req('POST', '/segments', { name: 'Swept', condition: cond('data.plan', 'equals', 'pro'), trackMembership: true })).body
      const counted = (await req('POST', '/segments', { name: 'Counted', condition: cond('data.plan', 'equals', 'pro') })).body
      await runJobs()
      await upsert('d@x.io', { plan: 'pro' })
      expect((await req('GET', `/segments/${counted.id}`)).body.memberCount).toBe(2)
      const sweep = must(segmentJobs.find((j) => j.name === 'segments.sweep'), 'the segments.sweep job')
      expect(sweep.everyMs).toBe(5 * 60_000)
      const { enqueue } = await import('../../../src/jobs/queue')
      await enqueue(env.store, 'segments.sweep', {}, { wake: null, now: new Date(), uniqueKey: 'segments.sweep-test' })
      await runJobs()
      expect((await req('GET', `/segments/${counted.id}`)).body.memberCount).toBe(3)
      expect((await req('GET', `/segments/${tracked.id}`)).body.memberCount).toBe(3)
      expect(await segEvents('swept')).toEqual(['entry b@x.io', 'entry c@x.io', 'entry d@x.io'])
      expect(await segEvents('counted')).toEqual([])
    })

    test('an event the condition names queues a debounced compute; an unrelated one does not', async () => {
      const s = (await req('POST', '/segments', { name: 'Signups', condition: cond('event.signup', 'triggered'), trackMembership: true })).body
      await runJobs()
      forgetSegmentHintCache()
      await req('POST', '/events/track', { email: 'a@x.io', event: 'pageview' })
      await settleEvents()
      expect(await jobsFor(s.id)).toEqual([])
      await req('POST', '/events/track', { email: 'a@x.io', event: 'signup' })
      await settleEvents()
      const [job] = await jobsFor(s.id)
      expect(job).toBeDefined()
      expect(job.runAt.getTime()).toBeGreaterThan(Date.now())
      // A burst collapses into the one queued job.
      await req('POST', '/events/track', { email: 'b@x.io', event: 'signup' })
      forgetSegmentHintCache()
      await req('POST', '/events/track', { email: 'c@x.io', event: 'signup' })
      await settleEvents()
      expect((await jobsFor(s.id)).length).toBe(1)
      await runJobs()
      expect((await segEvents('signups')).sort()).toEqual(['entry a@x.io', 'entry b@x.io', 'entry c@x.io'])
    })

    test('a contact change queues a compute of segments that read contacts', async () => {
      const s = (await req('POST', '/segments', { name: 'Unsubscribed', condition: cond('subscribed', 'equals', false), trackMembership: true })).body
      await runJobs()
      forgetSegmentHintCache()
      await req('PATCH', `/contacts/${(await upsert('a@x.io', {})).body.id}`, { subscribed: false })
      await settleEvents()
      expect((await jobsFor(s.id)).length).toBe(1)
      await runJobs()
      expect(await segEvents('unsubscribed')).toEqual(['entry a@x.io'])
    })
  })
})
