import { afterEach, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import { hostname } from 'node:os'
import { forEachStore } from '../helpers/env'
import { behind, type TestClock } from '../helpers/clock'
import { Worker, claim, defineJob, enqueue, getJob, type EnqueueOptions, type JobContext } from '../../src/jobs/queue'
import type { Store } from '../../src/db/client'
import { leaseEnd } from '../../src/jobs/lease'
import { NODE_STALE_MS, NodeRegistry } from '../../src/jobs/nodes'

const rnd = () => Math.random().toString(36).slice(2, 8)

/** Queues a job that must be queued (no unique key in the way), made at the machine's time; returns its id. */
async function queued(store: Store, name: string, payload: Record<string, unknown>, opts: Partial<EnqueueOptions> = {}): Promise<string> {
  const id = await enqueue(store, name, payload, { wake: null, now: new Date(), ...opts })
  if (!id) throw new Error(`job ${name} was not queued`)
  return id
}

/**
 * A clock the test moves by hand (the env's clock: claims, leases and heartbeats). It starts a second
 * ahead of the wall clock, so a job queued after it was made (run_at = the wall clock) is already due.
 */
function manualClock(c: TestClock, start = Date.now() + 1_000) {
  c.set(start)
  return { now: () => c.date(), at: (ms: number) => c.set(start + ms), start }
}

/** A promise the test resolves when it wants, and a flag saying a job reached it. */
function gate() {
  let open = () => {}
  let reached = () => {}
  const opened = new Promise<void>((r) => { open = r })
  const arrived = new Promise<void>((r) => { reached = r })
  return { open, opened, arrived, reach: () => reached() }
}

async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(5)
  }
}

forEachStore('job queue', (env) => {
  afterEach(() => env.clock.reset())
  test('a queued job runs once and records its result', async () => {
    const p = await env.project()
    let runs = 0
    const w = new Worker(env.deps, [defineJob<{ n: number }>({ name: 'double', async run(_c, payload) { runs++; return { value: payload.n * 2 } } })])
    const id = await queued(env.store, 'double', { n: 21 }, { projectId: p.id })
    expect(await w.drain()).toBe(1)
    expect(await w.drain()).toBe(0)
    const job = await getJob(env.store, p.id, id)
    expect(job?.status).toBe('completed')
    expect(job?.result).toEqual({ value: 42 })
    expect(runs).toBe(1)
    expect(await getJob(env.store, 'another-project', id)).toBeNull()
  })

  test('failures retry until maxAttempts, then the job fails with the last error', async () => {
    let runs = 0
    const w = new Worker(env.deps, [defineJob({ name: 'flaky', backoffMs: () => 0, async run() { runs++; if (runs < 3) throw new Error(`boom ${runs}`); return { ok: true } } })])
    const id = await queued(env.store, 'flaky', {}, { maxAttempts: 5 })
    await w.drain()
    expect(runs).toBe(3)
    const [row] = await env.store.rows<{ status: string; attempts: number }>(
      (await import('drizzle-orm')).sql`SELECT status, attempts FROM jobs WHERE id = ${id}`)
    expect(row).toEqual({ status: 'completed', attempts: 3 })

    let fails = 0
    const w2 = new Worker(env.deps, [defineJob({ name: 'always-fails', backoffMs: () => 0, async run() { fails++; throw new Error('nope') } })])
    const id2 = await queued(env.store, 'always-fails', {}, { maxAttempts: 2, projectId: (await env.project()).id })
    await w2.drain()
    expect(fails).toBe(2)
    const { jobs } = env.store.t
    const [j] = await env.store.db.select().from(jobs).where((await import('drizzle-orm')).eq(jobs.id, id2))
    expect(j.status).toBe('failed')
    expect(j.lastError).toBe('nope')
  })

  test('a failure whose message holds a NUL (quoting a refused value) is recorded, the NUL as U+FFFD, on both stores', async () => {
    const w = new Worker(env.deps, [defineJob({ name: 'nul-error', backoffMs: () => 0, async run() { throw new Error('bad value "a\u0000b" and half a pair \ud800') } })])
    const id = await queued(env.store, 'nul-error', {}, { maxAttempts: 2 })
    await w.drain()
    const { jobs } = env.store.t
    const [j] = await env.store.db.select().from(jobs).where(eq(jobs.id, id))
    expect(j).toMatchObject({ status: 'failed', attempts: 2, lastError: 'bad value "a\uFFFDb" and half a pair \uFFFD', lockedBy: null })
  })

  const jobRow = async (id: string) => {
    const { jobs } = env.store.t
    return (await env.store.db.select().from(jobs).where(eq(jobs.id, id)))[0]
  }

  test('lease length: a live lease is not claimed again; an expired one is, by one claimer, as a new attempt', async () => {
    const clock = manualClock(env.clock)
    const name = `lease-${rnd()}`
    const id = await queued(env.store, name, {})
    const crashed = await claim(env.store, [name], 'dead-worker', 10, 30_000, clock.now())
    expect(crashed.map((r) => r.id)).toEqual([id])
    expect(await jobRow(id)).toMatchObject({ status: 'running', lockedBy: 'dead-worker', lockedUntil: leaseEnd(clock.now(), 30_000), attempts: 1 })
    clock.at(29_999)
    expect(await claim(env.store, [name], 'other', 10, 30_000, clock.now())).toEqual([])
    clock.at(30_001)
    let ran = 0
    const w = new Worker(env.deps, [defineJob({ name, async run() { ran++ } })])
    expect(await w.drain()).toBe(1)
    expect(ran).toBe(1)
    expect(await jobRow(id)).toMatchObject({ status: 'completed', attempts: 2, lockedBy: null, lockedUntil: null })
    expect(await claim(env.store, [name], 'late', 10, 30_000, clock.now())).toEqual([])
  })

  test('a job whose lease expired more often than its attempts allow fails instead of running', async () => {
    const clock = manualClock(env.clock)
    const name = `expired-${rnd()}`
    const id = await queued(env.store, name, {}, { maxAttempts: 1 })
    await claim(env.store, [name], 'dead-worker', 1, 1_000, clock.now())
    clock.at(2_000)
    let ran = 0
    const w = new Worker(env.deps, [defineJob({ name, async run() { ran++ } })])
    expect(await w.drain()).toBe(1)
    expect(ran).toBe(0)
    expect(await jobRow(id)).toMatchObject({ status: 'failed', lastError: 'lease expired too many times', lockedBy: null })
  })

  test('the progress heartbeat extends the lease once a third of it has passed, and records progress each time', async () => {
    const clock = manualClock(env.clock)
    const name = `progress-${rnd()}`
    const id = await queued(env.store, name, {})
    const seen: Array<{ processed: number; total: number; lockedUntil: Date | null }> = []
    let stolen: unknown[] = []
    const w = new Worker(env.deps, [defineJob({
      name, leaseMs: 30_000,
      async run(ctx: JobContext) {
        const look = async () => {
          const r = await jobRow(ctx.job.id)
          seen.push({ processed: r.processed, total: r.total, lockedUntil: r.lockedUntil })
        }
        clock.at(5_000)
        await ctx.progress(1, 10)
        await look()
        clock.at(10_001)
        await ctx.progress(2)
        await look()
        // The first lease would have ended at 30 s; the renewed one ends at 40 s.
        clock.at(35_000)
        stolen = await claim(env.store, [name], 'thief', 1, 30_000, clock.now())
        return { done: true }
      },
    })])
    expect(await w.drain()).toBe(1)
    expect(seen).toEqual([
      { processed: 1, total: 10, lockedUntil: new Date(clock.start + 30_000) },
      { processed: 2, total: 10, lockedUntil: new Date(clock.start + 10_001 + 30_000) },
    ])
    expect(stolen).toEqual([])
    expect(await jobRow(id)).toMatchObject({ status: 'completed', processed: 2, result: { done: true }, lockedBy: null })
  })

  test('a job that reports no progress keeps its lease while it runs: renewed on a timer, so no other worker takes it', async () => {
    const clock = manualClock(env.clock)
    const name = `silent-${rnd()}`
    const id = await queued(env.store, name, {})
    const g = gate()
    // A short lease: the renewal timer runs every third of it (100 ms of real time).
    const w = new Worker(env.deps, [defineJob({ name, leaseMs: 300, async run() { g.reach(); await g.opened; return { done: true } } })])
    const drained = w.drain()
    await g.arrived
    expect((await jobRow(id)).lockedUntil).toEqual(new Date(clock.start + 300))
    clock.at(200)
    await until(async () => (await jobRow(id)).lockedUntil?.getTime() === clock.start + 500, 'the lease renewed by the timer')
    // The first lease would have ended at 300 ms; at 400 ms the renewed one still holds.
    clock.at(400)
    expect(await claim(env.store, [name], 'thief', 1, 300, clock.now())).toEqual([])
    g.open()
    expect(await drained).toBe(1)
    expect(await jobRow(id)).toMatchObject({ status: 'completed', result: { done: true }, lockedBy: null })
  })

  test('a worker that lost its lease can neither record progress nor finish the job: the new holder keeps it', async () => {
    const clock = manualClock(env.clock)
    const name = `lost-${rnd()}`
    const id = await queued(env.store, name, {})
    const g = gate()
    const w = new Worker(env.deps, [defineJob({
      name, leaseMs: 1_000,
      async run(ctx: JobContext) {
        g.reach()
        await g.opened
        clock.at(2_000)
        await ctx.progress(99, 100)
        return { from: 'the old holder' }
      },
    })])
    const draining = w.drain()
    await g.arrived
    clock.at(1_500)
    const [taken] = await claim(env.store, [name], 'new-holder', 1, 60_000, clock.now())
    expect(taken?.id).toBe(id)
    g.open()
    expect(await draining).toBe(1)
    expect(await jobRow(id)).toMatchObject({ status: 'running', lockedBy: 'new-holder', processed: 0, total: 0, result: null, attempts: 2 })
    // Its stop hands back only what it holds: the new holder's lease stays.
    await w.stop()
    expect(await jobRow(id)).toMatchObject({ status: 'running', lockedBy: 'new-holder' })
  })

  test('stop: the job in flight finishes, nothing new is claimed, no lease stays held', async () => {
    const name = `stop-${rnd()}`
    const g = gate()
    let runs = 0
    const w = new Worker(env.deps, [defineJob({ name, async run() { runs++; g.reach(); await g.opened; return { ok: true } } })], { concurrency: 1, pollMs: 3_600_000 })
    await w.start()
    const first = await queued(env.store, name, {})
    await g.arrived
    const stopping = w.stop()
    const second = await queued(env.store, name, {})
    g.open()
    await stopping
    expect(runs).toBe(1)
    expect(await jobRow(first)).toMatchObject({ status: 'completed', result: { ok: true }, lockedBy: null })
    expect(await jobRow(second)).toMatchObject({ status: 'queued', attempts: 0, lockedBy: null })
    const { jobs } = env.store.t
    expect(await env.store.db.select().from(jobs).where(eq(jobs.lockedBy, w.id))).toEqual([])
    await env.store.tx((db) => db.delete(jobs).where(eq(jobs.name, name)))
  })

  test('stop hands back a lease the worker still holds (a job whose last write failed), due at once', async () => {
    const name = `held-${rnd()}`
    const w = new Worker(env.deps, [], { pollMs: 3_600_000 })
    const id = await queued(env.store, name, {})
    await claim(env.store, [name], w.id, 1, 60_000, new Date())
    await w.start()
    await w.stop()
    const row = await jobRow(id)
    expect(row).toMatchObject({ status: 'queued', lockedBy: null, lockedUntil: null, attempts: 1 })
    expect(row.runAt.getTime()).toBeLessThanOrEqual(Date.now())
    let ran = 0
    expect(await new Worker(env.deps, [defineJob({ name, async run() { ran++ } })]).drain()).toBe(1)
    expect(ran).toBe(1)
  })

  test('start: the jobs of a dead node run at once; a live node keeps its leases, even with this process\'s hostname and pid', async () => {
    const name = `dead-${rnd()}`
    // Two other "processes" on this store: one whose last heartbeat is older than the bound, one beating
    // now with the very hostname and pid of this process (another container).
    const crashed = new NodeRegistry(env.store, { clock: behind(NODE_STALE_MS + 60_000) })
    const living = new NodeRegistry(env.store, { hostname: hostname(), pid: process.pid })
    await crashed.beat()
    await living.beat()
    const busy = living.newId()
    try {
      const orphan = await queued(env.store, name, { who: 'dead' })
      await claim(env.store, [name], crashed.newId(), 1, 3_600_000, new Date())
      const kept = await queued(env.store, name, { who: 'alive' })
      await claim(env.store, [name], busy, 1, 3_600_000, new Date())
      const ran: string[] = []
      const w = new Worker(env.deps, [defineJob<{ who: string }>({ name, async run(_c, p) { ran.push(p.who) } })], { pollMs: 3_600_000 })
      await w.start()
      await until(async () => (await jobRow(orphan)).status === 'completed', 'the orphaned job to run')
      await w.stop()
      expect(ran).toEqual(['dead'])
      expect(await jobRow(kept)).toMatchObject({ status: 'running', lockedBy: busy })
      const { jobs } = env.store.t
      await env.store.tx((db) => db.delete(jobs).where(eq(jobs.id, kept)))
    } finally {
      await crashed.stop()
      await living.stop()
    }
  })

  test('concurrent claims never hand one job to two workers', async () => {
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => enqueue(env.store, 'race', { i }, { wake: null, now: new Date() })))
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(env.store, ['race'], `w${i}`, 10, 60_000, new Date())))
    const claimed = claims.flat().map((r) => r.id)
    expect(new Set(claimed).size).toBe(claimed.length)
    expect(claimed.sort()).toEqual((ids as string[]).sort())
  })

  test('a recurring job has a slot of its own: it runs while a backlog of older work fills every slot', async () => {
    const busy = `busy-${rnd()}`
    const tick = `tick-${rnd()}`
    const g = gate()
    let busyRuns = 0
    let ticks = 0
    const w = new Worker(env.deps, [
      defineJob({ name: busy, async run() { busyRuns++; g.reach(); await g.opened } }),
      defineJob({ name: tick, everyMs: 3_600_000, async run() { ticks++ } }),
    ], { concurrency: 2, pollMs: 20 })
    for (let i = 0; i < 5; i++) await queued(env.store, busy, { i })
    await w.start()
    await g.arrived
    await until(() => ticks === 1, 'the recurring job to run beside the busy slots')
    expect(busyRuns).toBe(2)
    g.open()
    await until(() => busyRuns === 5, 'the backlog to finish')
    await w.stop()
    const { jobs } = env.store.t
    await env.store.tx((db) => db.delete(jobs).where(inArray(jobs.name, [busy, tick])))
  })

  test('a unique key allows one active job; a recurring job re-queues itself', async () => {
    expect(await enqueue(env.store, 'single', {}, { wake: null, now: new Date(), uniqueKey: 'k' })).not.toBeNull()
    expect(await enqueue(env.store, 'single', {}, { wake: null, now: new Date(), uniqueKey: 'k' })).toBeNull()
    let ticks = 0
    const w = new Worker(env.deps, [defineJob({ name: 'tick', everyMs: 3_600_000, async run() { ticks++ } })])
    await w.ensureRecurring()
    await w.ensureRecurring()
    expect(await w.drain()).toBe(1)
    expect(ticks).toBe(1)
    const { jobs } = env.store.t
    const { eq } = await import('drizzle-orm')
    const rows = await env.store.db.select().from(jobs).where(eq(jobs.name, 'tick'))
    expect(rows.map((r) => r.status).sort()).toEqual(['completed', 'queued'])
  })
})
