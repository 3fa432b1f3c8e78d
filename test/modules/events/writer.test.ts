import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { TestEnv } from '../../helpers/env'
import { openTrackWriter, TrackWriter } from '../../../src/modules/events/writer'
import type { TrackWrite } from '../../../src/modules/events/track-write'
import { openStore } from '../../../src/db/client'
import { ctxFor } from '../../../src/deps'
import type { EventConsumer } from '../../../src/modules/events/consumers'
import { Outbox } from '../../../src/modules/events/outbox'
import { appendEvents } from '../../../src/modules/events/stream'
import { must } from '../../helpers/must'

/** A write that must not find its Idempotency-Key held. */
async function done(w: TrackWriter, projectId: string, now: Date, t: TrackWrite) {
  const out = await w.write(projectId, now, t)
  if (out.reused) throw new Error('unexpected reused key')
  return out
}

// The track writer thread exists on file-backed SQLite only (PostgreSQL runs concurrent transactions itself).
describe('track writer thread [sqlite]', () => {
  const env = new TestEnv('sqlite')
  beforeAll(() => env.start())
  afterAll(() => env.stop())

  test('one writer per file-backed SQLite store, in the deps\' runtime; none in memory or on PostgreSQL', () => {
    expect(env.deps.runtime.trackWriter).toBeInstanceOf(TrackWriter)
    const mem = openStore('sqlite://:memory:')
    expect(openTrackWriter(mem, 'NORMAL')).toBeNull()
    void mem.close()
  })

  test('tracks written together commit as one batch; answers carry the rows the listeners get', async () => {
    const p = await env.project()
    const w = new TrackWriter(env.store.url, 'NORMAL')
    const now = new Date()
    const before = w.stats.batches
    const outs = await Promise.all(Array.from({ length: 20 }, (_, i) => done(w, p.id, now, { email: `w${i % 10}@example.com`, event: 'seen', data: { n: i, tmp: { value: 1, persistent: false } } })))
    expect(w.stats.batches - before).toBe(1)
    expect(w.stats.writes).toBe(20)
    // Two tracks of one new email: one contact.
    expect(new Set(outs.map((o) => o.contactId)).size).toBe(10)
    const stored = await env.store.rows<{ id: string; contact_id: string | null; name: string; data: string; created_at: number }>(sql`SELECT id, contact_id, name, data, created_at FROM events WHERE project_id = ${p.id}`)
    expect(stored.length).toBe(20)
    for (const o of outs) {
      const row = must(stored.find((r) => r.id === o.event.id), 'the stored row')
      expect(row).toBeDefined()
      expect({ contactId: row.contact_id, name: row.name, data: JSON.parse(row.data), createdAt: row.created_at })
        .toEqual({ contactId: o.event.contactId, name: o.event.name, data: o.event.data, createdAt: o.event.createdAt.getTime() })
      expect(o.event).toMatchObject({ projectId: p.id, emailId: null })
      expect(o.events).toEqual([o.event])
    }
    expect(outs[3].event.data).toEqual({ n: 3, tmp: 1 })
    w.stop()
  })

  test('a subscription change comes back as its event row, before the tracked one', async () => {
    const p = await env.project()
    const w = new TrackWriter(env.store.url, 'NORMAL')
    const now = new Date()
    const first = await done(w, p.id, now, { email: 'flip@example.com', event: 'a' })
    const off = await done(w, p.id, now, { email: 'flip@example.com', event: 'b', subscribed: false })
    expect(off.contactId).toBe(first.contactId)
    expect(off.events.map((e) => [e.name, e.data, e.contactId, e.createdAt.getTime()])).toEqual([
      ['contact.unsubscribed', { subscribed: false }, first.contactId, now.getTime()],
      ['b', {}, first.contactId, now.getTime()],
    ])
    const [row] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id} AND id = ${off.events[0].id} AND name = 'contact.unsubscribed'`)
    expect(Number(row.n)).toBe(1)
    w.stop()
  })

  test('a failing write is refused alone; its batch-mates commit', async () => {
    const p = await env.project()
    const w = new TrackWriter(env.store.url, 'NORMAL')
    const now = new Date()
    // An unknown project breaks the contacts foreign key.
    const results = await Promise.allSettled([
      done(w, p.id, now, { email: 'ok1@example.com', event: 'x' }),
      done(w, 'no-such-project', now, { email: 'bad@example.com', event: 'x' }),
      done(w, p.id, now, { email: 'ok2@example.com', event: 'x' }),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/^track write failed: .*FOREIGN KEY/)
    expect(w.stats.retries).toBe(1)
    const rows = await env.store.rows<{ email: string }>(sql`SELECT email FROM contacts WHERE email IN ('ok1@example.com', 'ok2@example.com', 'bad@example.com') ORDER BY email`)
    expect(rows.map((r) => r.email)).toEqual(['ok1@example.com', 'ok2@example.com'])
    w.stop()
  })

  test('a stopped thread starts again at the next track', async () => {
    const p = await env.project()
    const w = new TrackWriter(env.store.url, 'NORMAL')
    const a = await done(w, p.id, new Date(), { email: 'again@example.com', event: 'one' })
    w.stop()
    const b = await done(w, p.id, new Date(), { email: 'again@example.com', event: 'two' })
    expect(b.contactId).toBe(a.contactId)
    const [row] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE contact_id = ${a.contactId}`)
    expect(Number(row.n)).toBe(2)
    w.stop()
  })
  test('an Idempotency-Key claimed in the batch: one write performs, the others find it held and write nothing', async () => {
    const p = await env.project()
    const w = new TrackWriter(env.store.url, 'NORMAL')
    const now = new Date()
    const claim = { projectId: p.id, key: 'same', method: 'POST', path: '/v1/track', requestHash: 'h', nowMs: now.getTime(), expiresAtMs: now.getTime() + 60_000 }
    const outs = await Promise.all(Array.from({ length: 10 }, (_, i) => w.write(p.id, now, { email: `k${i}@example.com`, event: 'once', claim })))
    expect(outs.filter((o) => !o.reused).length).toBe(1)
    for (const o of outs) if (o.reused) expect(o.reused).toEqual({ method: 'POST', path: '/v1/track', requestHash: 'h', createdAtMs: now.getTime(), statusCode: 200 })
    const [row] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id}`)
    expect(Number(row.n)).toBe(1)
    w.stop()
  })
  test('onCommit runs when a batch has committed, before its callers are answered (Store.refresh)', async () => {
    const p = await env.project()
    const order: string[] = []
    const w = new TrackWriter(env.store.url, 'NORMAL', () => order.push('commit'))
    await Promise.all([1, 2].map((i) => done(w, p.id, new Date(), { email: `c${i}@example.com`, event: 'x' }).then(() => order.push(`answer ${i}`))))
    expect(order).toEqual(['commit', 'answer 1', 'answer 2'])
    // The store's writer refreshes its reader: a read right after the answer sees the track.
    const out = await done(must(env.deps.runtime.trackWriter, 'the track writer'), p.id, new Date(), { email: 'seen@example.com', event: 'y' })
    const [row] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE id = ${out.event.id}`)
    expect(Number(row.n)).toBe(1)
    w.stop()
  })

  test('while its thread runs, the outbox drainer\'s claims and settlements go into its commits; stopped, the drainer claims on its own connection', async () => {
    const p = await env.consumedProject()
    const seen: string[] = []
    const consumer: EventConsumer = { name: 'test.routed', interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0", async handle(_c, rows) { for (const r of rows) if (r.projectId === p.id) seen.push(r.name) } }
    const outboxRows = async () => (await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM event_outbox WHERE project_id = ${p.id}`))[0].n
    const w = must(env.deps.runtime.trackWriter, 'the track writer')
    await done(w, p.id, new Date(), { email: 'routed@example.com', event: 'routed' })
    expect(Number(await outboxRows())).toBe(1)
    const viaThread = new Outbox(env.deps, { consumers: () => [consumer] })
    await viaThread.drain()
    expect(seen).toEqual(['routed'])
    expect(Number(await outboxRows())).toBe(0)
    // The claim, then the settlement (carried by the next claim, which found nothing else).
    expect(viaThread.stats.routed).toBeGreaterThanOrEqual(2)

    w.stop()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await env.store.tx((db) => appendEvents(ctx, db, [{ contactId: null, name: 'on-main' }]))
    expect(Number(await outboxRows())).toBe(1)
    const onMain = new Outbox(env.deps, { consumers: () => [consumer] })
    await onMain.drain()
    expect(seen).toEqual(['routed', 'on-main'])
    expect(Number(await outboxRows())).toBe(0)
    expect(onMain.stats.routed).toBe(0)
  })

  test('a claim carried by the thread answers its rows, leased; a stop asked for meanwhile happens once it is answered', async () => {
    const p = await env.consumedProject()
    const w = new TrackWriter(env.store.url, 'NORMAL')
    const out = await done(w, p.id, new Date(), { email: 'leased@example.com', event: 'leased' })
    const now = new Date()
    const claim = { holder: 'test-holder', now, until: new Date(now.getTime() + 60_000), maxRows: 10, candidates: [p.id], settle: [] }
    const pending = must(w.claimOutbox(claim), 'a claim on the running thread')
    w.stop()
    const rows = await pending
    expect(rows.map((r) => ({ projectId: r.projectId, eventIds: r.eventIds, lockedBy: r.lockedBy, lockedUntil: r.lockedUntil?.getTime() })))
      .toEqual([{ projectId: p.id, eventIds: [out.event.id], lockedBy: 'test-holder', lockedUntil: claim.until.getTime() }])
    // Stopped as soon as the claim was answered, not after the idle delay: the next claim is the caller's to make.
    expect(w.claimOutbox(claim)).toBeNull()
    const [row] = await env.store.rows<{ locked_by: string | null }>(sql`SELECT locked_by FROM event_outbox WHERE project_id = ${p.id}`)
    expect(row.locked_by).toBe('test-holder')
  })
})
