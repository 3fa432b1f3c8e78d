import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { wfClient } from '../workflows/fixture'
import { ctxFor } from '../../../src/deps'
import { wireConsumers } from '../../../src/main'
import { eventConsumers, registerEventConsumer } from '../../../src/modules/events/consumers'
import { settleEvents } from '../../helpers/events'
import { projectHasConsumers } from '../../../src/modules/events/interest'
import { owedToConsumers } from '../../../src/modules/events/outbox'
import { appendEvents, type EventRow } from '../../../src/modules/events/stream'

async function outboxIds(env: TestEnv, projectId: string): Promise<string[]> {
  const o = env.store.t.eventOutbox
  return (await env.store.db.select().from(o).where(eq(o.projectId, projectId))).flatMap((r) => r.eventIds)
}

test('every consumer wired into the event stream says what it reacts to (events/interest.ts)', () => {
  wireConsumers()
  const wired = eventConsumers().map((c) => ({ name: c.name, declares: /\$1/.test(c.interest) }))
  expect(wired.map((c) => c.name).sort()).toEqual(['hooks.deliveries', 'segments.hints', 'workflows.triggers', 'workflows.waits'])
  for (const c of wired) expect(c).toEqual({ name: c.name, declares: true })
})

forEachStore('the outbox of a project nothing consumes', (env) => {
  const has = (projectId: string) => env.store.tx((db) => projectHasConsumers(env.store, db, projectId))

  test('its events commit with no outbox row and are not announced; a track too (on SQLite, the writer thread)', async () => {
    const p = await env.project()
    const seen: EventRow[] = []
    env.onStop(registerEventConsumer({ name: 'test.interest', interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0", async handle(_c, rows) { seen.push(...rows.filter((r) => r.projectId === p.id)) } }))
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const rows = await env.store.tx((db) => appendEvents(ctx, db, [{ contactId: null, name: 'quiet' }]))
    expect(rows.map(owedToConsumers)).toEqual([false])
    const r = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'q@example.com', event: 'quiet-track' } })
    expect(r.status).toBe(200)
    await settleEvents(env.deps)
    expect(await outboxIds(env, p.id)).toEqual([])
    expect(seen).toEqual([])
    // Both events are in the stream all the same.
    const e = env.store.t.events
    expect((await env.store.db.select({ name: e.name }).from(e).where(eq(e.projectId, p.id))).map((x) => x.name).sort()).toEqual(['quiet', 'quiet-track'])
  })

  test('a consumer registered later is owed the events of the projects its own interest names, and only those', async () => {
    const p = await env.project()
    const other = await env.project()
    expect(await has(p.id)).toBe(false)
    const seen: EventRow[] = []
    const off = registerEventConsumer({
      name: 'test.declared', interest: `SELECT 1 FROM projects WHERE id = $1 AND name = '${p.name.replace(/'/g, "''")}'`,
      async handle(_c, rows) { seen.push(...rows) },
    })
    try {
      expect(await has(p.id)).toBe(true)
      expect(await has(other.id)).toBe(false)
      const mine = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'd@example.com', event: 'declared' } })
      const theirs = await env.request('POST', '/v1/track', { key: other.publicKey, body: { email: 'd@example.com', event: 'declared' } })
      expect([mine.status, theirs.status]).toEqual([200, 200])
      await settleEvents(env.deps)
      expect(seen.map((e) => e.id)).toEqual([mine.body.data.event])
    } finally { off() }
    expect(await has(p.id)).toBe(false)
  })

  test('a tracked segment, an enabled endpoint, an enabled workflow or a waiting execution makes its events owed', async () => {
    const p = await env.project()
    expect(await has(p.id)).toBe(false)

    // A tracked DYNAMIC segment (segment hints); an untracked one is not enough.
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }
    const seg = await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'Pro', condition } })
    expect(seg.status).toBe(201)
    expect(await has(p.id)).toBe(false)
    expect((await env.request('PATCH', `/segments/${seg.body.id}`, { key: p.secretKey, body: { trackMembership: true } })).status).toBe(200)
    expect(await has(p.id)).toBe(true)
    const track = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'o@example.com', event: 'owed' } })
    expect(track.status).toBe(200)
    expect(await outboxIds(env, p.id)).toContain(track.body.data.event)
    expect((await env.request('DELETE', `/segments/${seg.body.id}`, { key: p.secretKey })).status).toBe(204)
    expect(await has(p.id)).toBe(false)

    // An enabled webhook endpoint (no event is committed while it exists: nothing is delivered to it).
    const ep = await env.request('POST', '/webhooks/endpoints', { key: p.secretKey, body: { url: 'https://hooks.example.com/in' } })
    expect(ep.status).toBe(201)
    expect(await has(p.id)).toBe(true)
    expect((await env.request('PATCH', `/webhooks/endpoints/${ep.body.id}`, { key: p.secretKey, body: { enabled: false } })).status).toBe(200)
    expect(await has(p.id)).toBe(false)

    // An enabled workflow; once disabled, a WAITING execution of it.
    const c = wfClient(env, p.secretKey)
    const wf = await c.create({ name: 'Interest', eventName: 'interest-start' })
    const d = await c.step(wf.id, 'DELAY', { amount: 1, unit: 'hours' })
    await c.link(wf.id, wf.steps[0].id, d.id)
    expect(await has(p.id)).toBe(false)
    await c.enable(wf.id)
    expect(await has(p.id)).toBe(true)
    await c.call('PATCH', `/workflows/${wf.id}`, { enabled: false })
    expect(await has(p.id)).toBe(false)
    const contact = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'w@example.com' } })
    const now = new Date()
    const x = env.store.t.workflowExecutions
    await env.store.tx((db) => db.insert(x).values({
      id: Bun.randomUUIDv7(), projectId: p.id, workflowId: wf.id, contactId: contact.body.id, status: 'WAITING', waitEvent: 'go',
      context: {}, version: 1, startedAt: now, updatedAt: now,
    }))
    expect(await has(p.id)).toBe(true)
    await env.store.tx((db) => db.update(x).set({ status: 'CANCELLED' }).where(eq(x.projectId, p.id)))
    expect(await has(p.id)).toBe(false)
  })
})
