import { afterEach, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { openStore } from '../../../src/db/client'
import { ctxFor, type Ctx, type Deps } from '../../../src/deps'
import { registerEventConsumer, type EventConsumer } from '../../../src/modules/events/consumers'
import { settleEvents } from '../../helpers/events'
import { MAX_ATTEMPTS, Outbox, outboxBackoffMs } from '../../../src/modules/events/outbox'
import { claimOutbox } from '../../../src/modules/events/repo'
import { storeRuntime } from '../../../src/main'
import { appendEvents, notifyEvents, type EventRow } from '../../../src/modules/events/stream'

/** A consumer that records what it gets (of the given projects: other tests' rows pass through too). */
function recorder(name: string, projects: string[], fail: () => boolean = () => false) {
  const got: EventRow[] = []
  let calls = 0
  const c: EventConsumer = {
    name,
    interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0",
    async handle(_ctx, events) {
      const mine = events.filter((e) => projects.includes(e.projectId))
      if (!mine.length) return
      calls++
      if (fail()) throw new Error(`${name} is down`)
      got.push(...mine)
    },
  }
  return { c, got, calls: () => calls }
}

/** Commits `n` events of `ctx.projectId` in one transaction; returns their rows. */
function commit(ctx: Ctx, names: string[]): Promise<EventRow[]> {
  return ctx.store.tx((db) => appendEvents(ctx, db, names.map((name) => ({ contactId: null, name }))))
}

async function outboxRows(env: TestEnv, projectId: string) {
  const o = env.store.t.eventOutbox
  return env.store.db.select().from(o).where(eq(o.projectId, projectId)).orderBy(o.id)
}

forEachStore('the events outbox', (env) => {
  afterEach(() => env.clock.reset())
  const ctxOf = (projectId: string, deps: Deps = env.deps) => ctxFor(deps, projectId, { kind: 'cli' })

  test('the transaction that appends events writes their outbox row; a rolled-back one writes neither', async () => {
    const p = await env.consumedProject()
    const ctx = ctxOf(p.id)
    const rows = await ctx.store.tx(async (db) => [
      ...await appendEvents(ctx, db, [{ contactId: null, name: 'a' }]),
      ...await appendEvents(ctx, db, [{ contactId: null, name: 'b' }, { contactId: null, name: 'c' }]),
    ])
    // One row for the transaction, whatever the number of appends in it.
    expect((await outboxRows(env, p.id)).map((r) => ({ consumer: r.consumer, eventIds: r.eventIds, attempts: r.attempts })))
      .toEqual([{ consumer: null, eventIds: rows.map((r) => r.id), attempts: 0 }])
    await expect(ctx.store.tx(async (db) => {
      await appendEvents(ctx, db, [{ contactId: null, name: 'lost' }])
      throw new Error('roll back')
    })).rejects.toThrow('roll back')
    expect((await outboxRows(env, p.id)).length).toBe(1)
  })

  test('a track (on SQLite, the track writer thread) commits its outbox row; settleEvents delivers it and empties the outbox', async () => {
    const p = await env.consumedProject()
    const seen = recorder('test.track', [p.id])
    const off = registerEventConsumer(seen.c)
    try {
      const r = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'o@example.com', event: 'signed-up' } })
      expect(r.status).toBe(200)
      const [row] = await outboxRows(env, p.id)
      expect(row?.eventIds).toContain(r.body.data.event)
      expect(seen.got).toEqual([])
      await settleEvents()
      expect(seen.got.map((e) => [e.id, e.name])).toEqual([[r.body.data.event, 'signed-up']])
      expect(await outboxRows(env, p.id)).toEqual([])
    } finally { off() }
  })

  test('a failing consumer is retried with backoff, alone: the other consumer goes on', async () => {
    const p = await env.consumedProject()
    const clock = env.clock
    clock.set(Date.now() + 1000)
    let down = true
    const good = recorder('test.good', [p.id])
    const bad = recorder('test.bad', [p.id], () => down)
    const outbox = new Outbox(env.deps, { consumers: () => [good.c, bad.c] })
    const first = await commit(ctxOf(p.id), ['one', 'two'])
    await outbox.drain()
    expect(good.got.map((e) => e.name)).toEqual(['one', 'two'])
    expect(bad.calls()).toBe(1)
    // The failure became a row of its own, for the failed consumer only, due after the backoff.
    const [retry] = await outboxRows(env, p.id)
    expect(retry).toMatchObject({ consumer: 'test.bad', eventIds: first.map((e) => e.id), attempts: 1, lockedBy: null, lastError: 'test.bad is down' })
    expect(retry?.dueAt.getTime()).toBe(clock.now() + outboxBackoffMs(1))
    // New events still reach the good consumer at once; the bad one's retry is not due yet.
    await commit(ctxOf(p.id), ['three'])
    await outbox.drain()
    expect(good.got.map((e) => e.name)).toEqual(['one', 'two', 'three'])
    expect(bad.calls()).toBe(2)
    // Its next failure doubles the delay of that row.
    clock.advance(outboxBackoffMs(1))
    await outbox.drain()
    expect(bad.calls()).toBe(3)
    const again = (await outboxRows(env, p.id)).find((r) => r.id === retry?.id)
    expect(again).toMatchObject({ attempts: 2 })
    expect(again?.dueAt.getTime()).toBe(clock.now() + outboxBackoffMs(2))
    // Back up: everything it missed arrives, the others are not told twice, the outbox is empty.
    down = false
    clock.advance(outboxBackoffMs(2))
    await outbox.drain()
    expect(bad.got.map((e) => e.name).sort()).toEqual(['one', 'three', 'two'])
    expect(good.got.length).toBe(3)
    expect(await outboxRows(env, p.id)).toEqual([])
  })

  test('a started drainer hands over the events this process announced as they were, without reading them back, once: a retry reads them from the database', async () => {
    const p = await env.consumedProject()
    // The drainer's clock is a second ahead: the rows committed meanwhile are due at once.
    env.clock.set(Date.now() + 1000)
    const calls: EventRow[][] = []
    const c: EventConsumer = {
      name: 'test.recent',
      interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0",
      async handle(_ctx, events) {
        const mine = events.filter((e) => e.projectId === p.id)
        if (!mine.length) return
        calls.push(mine)
        if (calls.length === 1) throw new Error('down once')
      },
    }
    const outbox = new Outbox(env.deps, { consumers: () => [c], pollMs: 20 })
    await outbox.start()
    try {
      const ctx = ctxOf(p.id)
      const rows = await commit(ctx, ['x', 'y'])
      await notifyEvents(ctx, rows)
      for (let i = 0; i < 1000 && calls.length < 1; i++) await Bun.sleep(10)
      // The very objects appendEvents returned: no read of the events table.
      expect(calls[0]).toHaveLength(2)
      expect(calls[0][0]).toBe(rows[0])
      expect(calls[0][1]).toBe(rows[1])
      // The consumer failed: its retry, once due, gets the events from the database (equal, not the same).
      env.clock.advance(outboxBackoffMs(1))
      for (let i = 0; i < 1000 && calls.length < 2; i++) await Bun.sleep(10)
      expect(calls[1]).toEqual(rows)
      expect(calls[1][0]).not.toBe(rows[0])
    } finally {
      await outbox.stop()
    }
    expect(await outboxRows(env, p.id)).toEqual([])
  }, 30_000)

  test('a claim carries its holder\'s settlement: its delivered rows are deleted in the claim\'s transaction, never another holder\'s', async () => {
    // Other tests' due rows delivered first: each claim below then sees only this project's.
    await settleEvents(env.deps)
    const p = await env.consumedProject()
    const ctx = ctxOf(p.id)
    const at = () => new Date()
    const lease = () => new Date(Date.now() + 60_000)
    await commit(ctx, ['first'])
    const [first] = await claimOutbox(env.store, 'holder-a', at(), lease(), 20, new Set())
    expect(first.projectId).toBe(p.id)
    await commit(ctx, ['second'])
    // Another holder cannot settle a's row, nor claim the project while a holds a row of it.
    expect(await claimOutbox(env.store, 'holder-b', at(), lease(), 20, new Set(), [first.id])).toEqual([])
    expect((await outboxRows(env, p.id)).map((r) => r.id)).toContain(first.id)
    // a's next claim deletes its delivered row first, then the project is free: it takes the second row.
    const next = await claimOutbox(env.store, 'holder-a', at(), lease(), 20, new Set(), [first.id])
    expect(next).toHaveLength(1)
    expect(next[0].id).not.toBe(first.id)
    expect((await outboxRows(env, p.id)).map((r) => r.id)).toEqual([next[0].id])
    // With nothing left to claim, a claim still settles.
    expect(await claimOutbox(env.store, 'holder-a', at(), lease(), 20, new Set(), [next[0].id])).toEqual([])
    expect(await outboxRows(env, p.id)).toEqual([])
  })

  test('a consumer that keeps failing is given up after MAX_ATTEMPTS: its row stays, marked, and is no longer claimed', async () => {
    const p = await env.consumedProject()
    env.clock.set(Date.now() + 1000)
    const bad = recorder('test.hopeless', [p.id], () => true)
    const outbox = new Outbox(env.deps, { consumers: () => [bad.c] })
    await commit(ctxOf(p.id), ['x'])
    for (let i = 0; i < MAX_ATTEMPTS + 2; i++) {
      await outbox.drain()
      env.clock.advance(3_600_000)
    }
    expect(bad.calls()).toBe(MAX_ATTEMPTS)
    const [row] = await outboxRows(env, p.id)
    expect(row).toMatchObject({ consumer: 'test.hopeless', attempts: MAX_ATTEMPTS, lastError: 'test.hopeless is down' })
    expect(row?.failedAt).toBeInstanceOf(Date)
    await env.store.tx((db) => db.delete(env.store.t.eventOutbox).where(eq(env.store.t.eventOutbox.projectId, p.id)))
  }, 30_000)

  test('a project\'s events arrive oldest first, across batches and projects', async () => {
    const p = await env.consumedProject()
    const q = await env.consumedProject()
    const seen = recorder('test.order', [p.id, q.id])
    const expected: Record<string, string[]> = { [p.id]: [], [q.id]: [] }
    // More transactions than one claim takes (20 rows), interleaved between two projects.
    for (let i = 0; i < 45; i++) {
      for (const project of [p.id, q.id]) {
        const rows = await commit(ctxOf(project), [`e${i}a`, `e${i}b`])
        expected[project]?.push(...rows.map((r) => r.id))
      }
    }
    await new Outbox(env.deps, { consumers: () => [seen.c] }).drain()
    for (const project of [p.id, q.id]) {
      expect(seen.got.filter((e) => e.projectId === project).map((e) => e.id)).toEqual(expected[project] ?? [])
    }
  }, 30_000)

  test('two nodes drain one outbox: each batch is delivered once, and a project by one node at a time', async () => {
    // A second store on the same database: another node (its own connections and node id).
    const other = openStore(env.store.url, { sqliteSynchronous: 'NORMAL' })
    try {
      // Fewer projects than drains, more rows than a claim takes: the drains compete for the same projects.
      const projects = await Promise.all(Array.from({ length: 2 }, () => env.consumedProject()))
      const ids = projects.map((p) => p.id)
      const delivered = new Map<string, number>()
      const busy = new Map<string, number>()
      let overlap = 0
      const consumer: EventConsumer = {
        name: 'test.nodes',
        interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0",
        async handle(ctx, events) {
          if (!ids.includes(ctx.projectId)) return
          busy.set(ctx.projectId, (busy.get(ctx.projectId) ?? 0) + 1)
          if ((busy.get(ctx.projectId) ?? 0) > 1) overlap++
          await Bun.sleep(1)
          for (const e of events) delivered.set(e.id, (delivered.get(e.id) ?? 0) + 1)
          busy.set(ctx.projectId, (busy.get(ctx.projectId) ?? 1) - 1)
        },
      }
      const all: string[] = []
      for (let i = 0; i < 60; i++) {
        for (const id of ids) all.push(...(await commit(ctxOf(id), [`n${i}`, `m${i}`])).map((r) => r.id))
      }
      const a = new Outbox(env.deps, { consumers: () => [consumer] })
      const b = new Outbox({ ...env.deps, store: other, runtime: storeRuntime(other, env.config, env.deps.log) }, { consumers: () => [consumer] })
      await Promise.all([a.drain(), b.drain(), a.drain(), b.drain()])
      expect(overlap).toBe(0)
      expect(all.filter((id) => delivered.get(id) !== 1)).toEqual([])
      expect(delivered.size).toBe(all.length)
      const o = env.store.t.eventOutbox
      expect(await env.store.db.select().from(o).where(inArray(o.projectId, ids))).toEqual([])
    } finally {
      await other.close()
    }
  }, 30_000)
})
