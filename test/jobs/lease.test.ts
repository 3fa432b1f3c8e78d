import { describe, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import Redis from 'ioredis'
import { forEachStore } from '../helpers/env'
import { TestClock } from '../helpers/clock'
import { createLogger } from '../../src/log'
import { claim, enqueue, jobLeases } from '../../src/jobs/queue'
import { leaseEnd, release, releaseDead, renew, renewAfterMs, Wakeups } from '../../src/jobs/lease'
import { NODE_STALE_MS, NodeRegistry, nodeOfHolder } from '../../src/jobs/nodes'
import { until } from '../helpers/worker'
import { describeStoreError } from '../../src/db/client'

/**
 * The lease module both queues share (src/jobs/lease.ts), on the job table: holder ids and which holders
 * are gone (the nodes table, src/jobs/nodes.ts: two processes are simulated by two registries on one
 * store, on an injected clock), renewal and release by the holder only, release of a gone holder's live
 * leases, and the
 * wake-up signal locally and through Redis. The outbound table's side is in test/mail/outbound.test.ts.
 */

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const rnd = () => Math.random().toString(36).slice(2, 8)

describe('lease holders', () => {
  test('lease arithmetic: the end is now + length; renewal is due after a third of it', () => {
    expect(leaseEnd(new Date(1_000), 30_000).getTime()).toBe(31_000)
    expect(renewAfterMs(30_000)).toBe(10_000)
  })
})

describe('wake-ups', () => {
  test('local: every listener hears a notify until it stops listening', () => {
    const w = new Wakeups(`test-${rnd()}`)
    let a = 0
    let b = 0
    const offA = w.on(() => a++)
    const offB = w.on(() => b++)
    w.notify()
    offA()
    w.notify()
    offB()
    w.notify()
    expect([a, b]).toEqual([1, 2])
  })

  test('through Redis: a notify on one node wakes a subscriber on another; unsubscribed, it hears nothing', async () => {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    const log = createLogger('silent')
    const name = `test-${rnd()}`
    const nodeA = new Wakeups(name)
    const nodeB = new Wakeups(name)
    try {
      // Connected first, as serve's client is (a client that is not connected does not publish).
      await redis.ping()
      let heard = 0
      let resolveHeard = () => {}
      const first = new Promise<void>((r) => { resolveHeard = r })
      const stop = await nodeB.subscribe(redis, log, () => { heard++; resolveHeard() })
      let local = 0
      nodeB.on(() => local++)
      nodeA.notify({ redis, log })
      await first
      expect(heard).toBe(1)
      // A remote wake-up reaches the subscriber, not node B's local listeners.
      expect(local).toBe(0)
      stop()
      // The subscriber's connection is gone once Redis counts no subscriber on the channel.
      const subscribers = async () => Number(((await redis.pubsub('NUMSUB', nodeA.channel)) as [string, number])[1])
      while ((await subscribers()) > 0) await Bun.sleep(5)
      nodeA.notify({ redis, log })
      expect(await redis.publish(nodeA.channel, '1')).toBe(0)
      expect(heard).toBe(1)
    } finally {
      redis.disconnect()
    }
  })
})

forEachStore('leases on the job table', (env) => {
  const jobRow = async (id: string) => {
    const { jobs } = env.store.t
    return (await env.store.db.select().from(jobs).where(eq(jobs.id, id)))[0]
  }
  /** Queues `n` jobs of a fresh kind and claims them for `holder` at `now` with a lease of `leaseMs`. */
  async function held(n: number, holder: string, now: Date, leaseMs = 60_000): Promise<string[]> {
    const name = `lease-${rnd()}`
    for (let i = 0; i < n; i++) await enqueue(env.store, name, { i }, { wake: null, now, runAt: new Date(now.getTime() - 1) })
    const rows = await claim(env.store, [name], holder, n, leaseMs, now)
    expect(rows.length).toBe(n)
    return rows.map((r) => r.id)
  }

  test('renew extends the holder\'s leases and writes what comes with it; another holder\'s rows are untouched', async () => {
    const t0 = new Date()
    const mine = await held(2, 'holder-a', t0, 30_000)
    const theirs = await held(1, 'holder-b', t0, 30_000)
    const t1 = new Date(t0.getTime() + 10_000)
    const n = await renew(env.store, jobLeases(env.store), 'holder-a', [...mine, ...theirs], 30_000, t1, { processed: 7 })
    expect(n).toBe(2)
    for (const id of mine) expect(await jobRow(id)).toMatchObject({ lockedBy: 'holder-a', lockedUntil: leaseEnd(t1, 30_000), processed: 7 })
    expect(await jobRow(theirs[0])).toMatchObject({ lockedBy: 'holder-b', lockedUntil: leaseEnd(t0, 30_000), processed: 0 })
    // Nothing to renew: a holder that holds nothing renews nothing.
    expect(await renew(env.store, jobLeases(env.store), 'nobody', mine, 30_000, t1)).toBe(0)
  })

  test('release hands back the holder\'s rows (all, or the keys given), due now; another holder\'s stay held', async () => {
    const t0 = new Date()
    const mine = await held(3, 'holder-c', t0)
    const theirs = await held(1, 'holder-d', t0)
    const leases = jobLeases(env.store)
    const t1 = new Date(t0.getTime() + 5)
    expect(await release(env.store, leases, 'holder-c', [], t1)).toBe(0)
    expect(await release(env.store, leases, 'holder-c', [mine[0], theirs[0]], t1)).toBe(1)
    expect(await jobRow(mine[0])).toMatchObject({ status: 'queued', lockedBy: null, lockedUntil: null, runAt: t1 })
    expect(await jobRow(mine[1])).toMatchObject({ status: 'running', lockedBy: 'holder-c' })
    expect(await release(env.store, leases, 'holder-c', undefined, t1)).toBe(2)
    expect(await jobRow(theirs[0])).toMatchObject({ status: 'running', lockedBy: 'holder-d' })
    // A released job is claimed again like any due job.
    const { jobs } = env.store.t
    const [{ name }] = await env.store.db.select({ name: jobs.name }).from(jobs).where(eq(jobs.id, mine[0]))
    const again = await claim(env.store, [name], 'holder-e', 10, 60_000, new Date(t1.getTime() + 1))
    expect(again.map((r) => r.id).sort()).toEqual([...mine].sort())
    expect(again.every((r) => r.attempts === 2)).toBe(true)
  })

  /** Two or more "processes" on one store, all with the same hostname and pid (containers), on one clock. */
  function nodes(n: number, clock: TestClock): NodeRegistry[] {
    return Array.from({ length: n }, () => new NodeRegistry(env.store, { hostname: 'box', pid: 1, clock, heartbeatMs: 3_600_000 }))
  }
  /** Leases left by the tests above name no node (no row): gone. Each node test starts from an empty table. */
  const clearJobs = async () => {
    const { jobs } = env.store.t
    await env.store.tx((db) => db.delete(jobs))
  }
  const nodeRow = async (id: string) => {
    const { nodes: t } = env.store.t
    return (await env.store.db.select().from(t).where(eq(t.id, id)))[0] ?? null
  }

  test('holder ids name their node, differ per worker, and differ between processes with the same hostname and pid', () => {
    const [a, b] = nodes(2, new TestClock())
    const w1 = a.newId()
    expect(nodeOfHolder(w1)).toBe(a.id)
    expect(a.newId()).not.toBe(w1)
    expect(a.id).not.toBe(b.id)
  })

  test('two processes, same hostname and pid: a live node keeps its leases; a stale heartbeat or a missing row loses them', async () => {
    const t0 = new Date()
    const clock = new TestClock(t0)
    const [a, b, c] = nodes(3, clock)
    await clearJobs()
    for (const n of [a, b, c]) await n.beat()
    expect(await nodeRow(a.id)).toMatchObject({ hostname: 'box', pid: 1, startedAt: t0, heartbeatAt: t0 })
    const holderA = a.newId()
    const ofA = await held(2, holderA, t0)
    const ofB = await held(1, b.newId(), t0)
    const noRow = await held(1, 'nGONE:aa', t0)
    const expired = await held(1, c.newId(), t0, 10)
    const leases = jobLeases(env.store)
    const t1 = new Date(t0.getTime() + 1_000)

    // Just within the bound: only the holder without a node row is gone.
    clock.set(t0.getTime() + NODE_STALE_MS - 1)
    await b.beat()
    expect(await releaseDead(env.store, leases, b, t1)).toBe(1)
    expect(await jobRow(noRow[0])).toMatchObject({ status: 'queued', lockedBy: null, runAt: t1 })
    for (const id of ofA) expect(await jobRow(id)).toMatchObject({ status: 'running', lockedBy: holderA })

    // A's heartbeat is now older than the bound: B hands its leases back; B's own stay; a node never judges itself.
    clock.set(t0.getTime() + NODE_STALE_MS + 1)
    await b.beat()
    expect(await a.dead([holderA])).toEqual([])
    expect(await b.dead([holderA])).toEqual([holderA])
    expect(await releaseDead(env.store, leases, b, t1)).toBe(2)
    for (const id of ofA) expect(await jobRow(id)).toMatchObject({ status: 'queued', lockedBy: null, runAt: t1 })
    expect(await jobRow(ofB[0])).toMatchObject({ status: 'running' })
    // An expired lease is not released (the claim query takes it back as it is).
    expect(await jobRow(expired[0])).toMatchObject({ status: 'running' })
    expect(await releaseDead(env.store, leases, b, t1)).toBe(0)

    // A node that was only paused comes back with its next beat and is live again.
    await a.beat()
    expect(await b.dead([`${a.id}:x`])).toEqual([])
    const { jobs } = env.store.t
    await env.store.tx((db) => db.delete(jobs).where(inArray(jobs.id, [...ofB, ...expired])))
    for (const n of [a, b, c]) await n.stop()
  })

  test('join registers the node and releases dead leases; each sweep deletes stale rows; a clean stop deletes the row', async () => {
    const t0 = new Date()
    const clock = new TestClock(t0)
    const [a, b, c] = nodes(3, clock)
    await clearJobs()
    const leases = jobLeases(env.store)
    await b.beat()
    await c.beat()
    const ofB = await held(1, b.newId(), t0)
    const ofC = await held(1, c.newId(), t0)
    // B stops cleanly (its row goes) with a lease it did not hand back: A's start releases it.
    await b.stop()
    expect(await nodeRow(b.id)).toBeNull()
    expect(await a.join(leases, new Date(t0.getTime() + 1))).toBe(1)
    expect(await nodeRow(a.id)).toMatchObject({ heartbeatAt: t0 })
    expect(await jobRow(ofB[0])).toMatchObject({ status: 'queued', lockedBy: null })
    expect(await jobRow(ofC[0])).toMatchObject({ status: 'running' })
    // C stops beating; A beats and sweeps: C's lease is released and its row deleted.
    clock.set(t0.getTime() + NODE_STALE_MS + 1)
    await a.beat()
    expect(await a.sweep()).toBe(1)
    expect(await jobRow(ofC[0])).toMatchObject({ status: 'queued', lockedBy: null })
    expect(await nodeRow(c.id)).toBeNull()
    expect(await nodeRow(a.id)).toMatchObject({ heartbeatAt: clock.date() })
    // The last worker leaving deletes the row.
    await a.leave()
    expect(await nodeRow(a.id)).toBeNull()
  })

  /** Makes every insert into `nodes` fail in the database (as a full disk or a failing store would), or stops it. */
  async function refuseNodeRows(on: boolean) {
    if (env.store.dialect === 'sqlite') {
      await env.store.script(on
        ? "CREATE TRIGGER refuse_nodes BEFORE INSERT ON nodes BEGIN SELECT RAISE(ABORT, 'node rows refused (test)'); END"
        : 'DROP TRIGGER IF EXISTS refuse_nodes')
    } else {
      await env.store.script(on
        ? "CREATE OR REPLACE FUNCTION refuse_nodes() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'node rows refused (test)'; END $$ LANGUAGE plpgsql; CREATE TRIGGER refuse_nodes BEFORE INSERT ON nodes FOR EACH ROW EXECUTE FUNCTION refuse_nodes()"
        : 'DROP TRIGGER IF EXISTS refuse_nodes ON nodes')
    }
  }

  test('a node whose first heartbeat fails claims nothing, retries the heartbeat until it lands, then claims', async () => {
    await clearJobs()
    const name = `lease-${rnd()}`
    await enqueue(env.store, name, {}, { wake: null, now: new Date(), runAt: new Date(Date.now() - 1) })
    const a = new NodeRegistry(env.store, { heartbeatMs: 3_600_000, retryMs: 10 })
    const holder = a.newId()
    await refuseNodeRows(true)
    try {
      let failure: unknown = null
      await a.join(jobLeases(env.store)).catch((err) => { failure = err })
      expect(describeStoreError(failure)).toContain('node rows refused')
      expect(await nodeRow(a.id)).toBeNull()
      // Other nodes would judge it dead and hand its leases out: it claims nothing.
      expect(await claim(env.store, [name], holder, 10, 60_000, new Date())).toEqual([])
    } finally {
      await refuseNodeRows(false)
    }
    // The heartbeat is retried until it lands; then the node claims.
    await until(async () => (await nodeRow(a.id)) !== null, 10_000, 'the node row after the store recovered')
    expect((await claim(env.store, [name], holder, 10, 60_000, new Date())).map((r) => r.name)).toEqual([name])
    await a.stop()
    await clearJobs()
  })

  test('SQLite: the leases of a killed process are handed back at the next start, not once its heartbeat is stale', async () => {
    // PostgreSQL nodes may run on other hosts: there only the heartbeat tells (the test above).
    if (env.store.dialect !== 'sqlite') return
    await clearJobs()
    const name = `lease-${rnd()}`
    await enqueue(env.store, name, {}, { wake: null, now: new Date(), runAt: new Date(Date.now() - 1) })
    const child = Bun.spawn(['bun', `${import.meta.dir}/node-child.ts`, env.store.url, name], { stdout: 'pipe', stderr: 'inherit' })
    const reader = child.stdout.getReader()
    let out = ''
    while (!out.includes('\n')) {
      const { value, done } = await reader.read()
      if (done) break
      out += new TextDecoder().decode(value)
    }
    expect(out.trim()).toBe('claimed 1')
    child.kill('SIGKILL')
    await child.exited
    // The child's node row is still there with a fresh heartbeat, as after any kill -9.
    const { nodes: t, jobs } = env.store.t
    expect((await env.store.db.select().from(t)).length).toBeGreaterThanOrEqual(1)
    const b = new NodeRegistry(env.store, { heartbeatMs: 3_600_000 })
    expect(await b.join(jobLeases(env.store))).toBe(1)
    expect((await env.store.db.select().from(jobs).where(eq(jobs.name, name)))[0]).toMatchObject({ status: 'queued', lockedBy: null })
    // The dead process's row goes at the next sweep; this node's stays.
    await b.sweep()
    expect((await env.store.db.select({ id: t.id }).from(t)).map((r) => r.id)).toEqual([b.id])
    await b.stop()
    await clearJobs()
  })
})
