import { describe, expect, test } from 'bun:test'
import { eq, inArray } from 'drizzle-orm'
import Redis from 'ioredis'
import { forEachStore } from '../helpers/env'
import { createLogger } from '../../src/log'
import { claim, enqueue, jobLeases } from '../../src/jobs/queue'
import { leaseEnd, processHolders, release, releaseDead, renew, renewAfterMs, Wakeups } from '../../src/jobs/lease'

/**
 * The lease module both queues share (src/jobs/lease.ts), on the job table: holder ids and which holders
 * are gone, renewal and release by the holder only, release of a gone holder's live leases, and the
 * wake-up signal locally and through Redis. The outbound table's side is in test/mail/outbound.test.ts.
 */

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const rnd = () => Math.random().toString(36).slice(2, 8)

describe('lease holders (host:pid)', () => {
  const h = processHolders({ host: 'node-a', pid: 100, alive: () => true })

  test('a new id names this host and pid, and differs per worker', () => {
    const a = h.newId()
    expect(a).toMatch(/^node-a:100:[0-9a-z]+$/)
    expect(h.newId()).not.toBe(a)
  })

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
  test('gone: a pid of this host that no longer runs; never this process, another host or a malformed id', async () => {
    // Its own pid counts as alive whatever the check says.
    const alive = new Set([200])
    const h = processHolders({ host: 'node-a', pid: 100, alive: (pid) => alive.has(pid) })
    const ids = ['node-a:300:x', 'node-a:200:x', 'node-a:100:x', 'node-b:300:x', 'node-a:abc:x', 'garbage', '']
    expect(await h.dead(ids, env.store)).toEqual(['node-a:300:x'])
  })

  test('the default holders judge real processes: a finished child is gone, a running one is not', async () => {
    const real = processHolders({ host: 'here' })
    const done = Bun.spawn(['true'])
    await done.exited
    const running = Bun.spawn(['sleep', '30'])
    try {
      expect(await real.dead([`here:${done.pid}:x`, `here:${running.pid}:x`], env.store)).toEqual([`here:${done.pid}:x`])
    } finally {
      running.kill()
    }
  })

  const jobRow = async (id: string) => {
    const { jobs } = env.store.t
    return (await env.store.db.select().from(jobs).where(eq(jobs.id, id)))[0]
  }
  /** Queues `n` jobs of a fresh kind and claims them for `holder` at `now` with a lease of `leaseMs`. */
  async function held(n: number, holder: string, now: Date, leaseMs = 60_000): Promise<string[]> {
    const name = `lease-${rnd()}`
    for (let i = 0; i < n; i++) await enqueue(env.store, name, { i }, { runAt: new Date(now.getTime() - 1) })
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
    expect(await release(env.store, leases, 'holder-c', [])).toBe(0)
    const t1 = new Date(t0.getTime() + 5)
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

  test('releaseDead hands back the live leases of gone holders only', async () => {
    const t0 = new Date()
    const who = processHolders({ host: 'node-x', pid: 1, alive: (pid) => pid === 2 })
    const gone = await held(2, 'node-x:3:aa', t0)
    const living = await held(1, 'node-x:2:bb', t0)
    const elsewhere = await held(1, 'node-y:3:cc', t0)
    const expired = await held(1, 'node-x:4:dd', t0, 10)
    const t1 = new Date(t0.getTime() + 1_000)
    expect(await releaseDead(env.store, jobLeases(env.store), t1, who)).toBe(2)
    for (const id of gone) expect(await jobRow(id)).toMatchObject({ status: 'queued', lockedBy: null, runAt: t1 })
    expect(await jobRow(living[0])).toMatchObject({ status: 'running', lockedBy: 'node-x:2:bb' })
    expect(await jobRow(elsewhere[0])).toMatchObject({ status: 'running', lockedBy: 'node-y:3:cc' })
    // An expired lease is not released (the claim query takes it back as it is).
    expect(await jobRow(expired[0])).toMatchObject({ status: 'running', lockedBy: 'node-x:4:dd' })
    expect(await releaseDead(env.store, jobLeases(env.store), t1, who)).toBe(0)
    const { jobs } = env.store.t
    await env.store.tx((db) => db.delete(jobs).where(inArray(jobs.id, [...living, ...elsewhere, ...expired])))
  })
})
