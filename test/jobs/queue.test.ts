import { expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { Worker, claim, defineJob, enqueue, getJob } from '../../src/jobs/queue'

forEachStore('job queue', (env) => {
  test('a queued job runs once and records its result', async () => {
    const p = await env.project()
    let runs = 0
    const w = new Worker(env.deps, [defineJob<{ n: number }>({ name: 'double', async run(_c, payload) { runs++; return { value: payload.n * 2 } } })])
    const id = (await enqueue(env.store, 'double', { n: 21 }, { projectId: p.id }))!
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
    const id = (await enqueue(env.store, 'flaky', {}, { maxAttempts: 5 }))!
    await w.drain()
    expect(runs).toBe(3)
    const [row] = await env.store.rows<{ status: string; attempts: number }>(
      (await import('drizzle-orm')).sql`SELECT status, attempts FROM jobs WHERE id = ${id}`)
    expect(row).toEqual({ status: 'completed', attempts: 3 })

    let fails = 0
    const w2 = new Worker(env.deps, [defineJob({ name: 'always-fails', backoffMs: () => 0, async run() { fails++; throw new Error('nope') } })])
    const id2 = (await enqueue(env.store, 'always-fails', {}, { maxAttempts: 2, projectId: (await env.project()).id }))!
    await w2.drain()
    expect(fails).toBe(2)
    const { jobs } = env.store.t
    const [j] = await env.store.db.select().from(jobs).where((await import('drizzle-orm')).eq(jobs.id, id2))
    expect(j.status).toBe('failed')
    expect(j.lastError).toBe('nope')
  })

  test('a job whose worker died is claimed again after its lease expires, and only then', async () => {
    const id = (await enqueue(env.store, 'lease', {}))!
    const crashed = await claim(env.store, ['lease'], 'dead-worker', 10, 30)
    expect(crashed.map((r) => r.id)).toEqual([id])
    expect(await claim(env.store, ['lease'], 'other', 10, 30)).toEqual([])
    await Bun.sleep(60)
    let ran = 0
    const w = new Worker(env.deps, [defineJob({ name: 'lease', async run() { ran++ } })])
    expect(await w.drain()).toBe(1)
    expect(ran).toBe(1)
  })

  test('concurrent claims never hand one job to two workers', async () => {
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => enqueue(env.store, 'race', { i })))
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(env.store, ['race'], `w${i}`, 10, 60_000)))
    const claimed = claims.flat().map((r) => r.id)
    expect(new Set(claimed).size).toBe(claimed.length)
    expect(claimed.sort()).toEqual((ids as string[]).sort())
  })

  test('a unique key allows one active job; a recurring job re-queues itself', async () => {
    expect(await enqueue(env.store, 'single', {}, { uniqueKey: 'k' })).not.toBeNull()
    expect(await enqueue(env.store, 'single', {}, { uniqueKey: 'k' })).toBeNull()
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
