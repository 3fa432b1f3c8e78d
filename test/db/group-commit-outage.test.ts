import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { describePrivatePg } from '../helpers/private-pg'
import { until } from '../helpers/worker'
import { storageError } from '../../src/db/failures'
import { trackBatch } from '../../src/modules/events/track-write'

/**
 * The batched PostgreSQL write path when the database goes away (a private server, stopped as a crash
 * would): every caller of the batch fails with an error that answers 503 DATABASE_UNAVAILABLE with
 * Retry-After (none is answered as written, none waits forever), and the same writes go through once the
 * database is back, without a restart.
 */
describePrivatePg('group commit, database down [pg]', {}, (s) => {
  test('a batch of tracks with PostgreSQL down: every caller gets the 503 error; after the restart they commit', async () => {
    const p = await s.env.project()
    const g = s.env.deps.runtime.commits
    const track = (i: number) => g.runMany(trackBatch, { ctx: { store: s.env.store, projectId: p.id, now: new Date() }, write: { email: `down${i}@example.com`, event: 'outage', data: { i } } })
    expect((await track(0)).reused).toBeUndefined()
    const retries = g.stats.retries
    await s.pg.stop()
    let results: PromiseSettledResult<unknown>[]
    try {
      results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => track(i + 1)))
    } finally {
      await s.pg.start()
    }
    expect(results.map((r) => r.status)).toEqual(Array(20).fill('rejected'))
    // Not run a second time with savepoints: a store that is down fails the batch at once.
    expect(g.stats.retries).toBe(retries)
    for (const r of results) {
      const err = storageError((r as PromiseRejectedResult).reason)
      expect(err?.code).toBe('DATABASE_UNAVAILABLE')
      expect(err?.status).toBe(503)
      expect(err?.opts.headers?.['retry-after']).toBe('5')
    }
    // The node recovers by itself: the same writes commit once PostgreSQL answers again.
    await until(async () => (await Promise.allSettled([track(100)]))[0].status === 'fulfilled', 30_000, 'a track after PostgreSQL came back', 200)
    const again = await Promise.all(Array.from({ length: 20 }, (_, i) => track(i + 1)))
    expect(again.every((o) => o.reused === undefined)).toBe(true)
    const [n] = await s.env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id} AND name = 'outage'`)
    expect(Number(n.n)).toBe(22)
  }, 90_000)
})

/**
 * The same through the HTTP API, with the database cut mid-load (issue 33, "a lost database connection"):
 * clients keep posting tracks while PostgreSQL stops, three times, so batches are in flight on their
 * connections when they close. Every request answers, 200 or 503 DATABASE_UNAVAILABLE with Retry-After
 * (none fails otherwise, none waits forever, the process goes on), every track answered 200 is in the
 * database, and tracks are answered 200 again once PostgreSQL is back, without a restart. Before
 * src/db/pg-reserved.ts a cut crashed the process or left its batch waiting about every other time.
 */
// No rate limit here: the clients post again 10 ms after each 503, so a machine slow to see PostgreSQL back
// made them exceed a per-minute budget, and 429s (not paused on) then filled the last 30 s (CI, under load).
describePrivatePg('POST /v1/track with PostgreSQL cut mid-load [pg]', { rateLimitPerMinute: 100_000_000, publicRateLimitPerMinute: 100_000_000 }, (s) => {
  test('every caller gets 200 (written) or 503 with Retry-After; none hangs; tracks commit again after the restart', async () => {
    const p = await s.env.project()
    const hung = Symbol('hung')
    let n = 0
    const answered: Array<{ n: number; status: number; code?: string; retryAfter: string | null } | typeof hung> = []
    const post = async () => {
      const i = n++
      const res = await Promise.race([
        s.env.request<{ error?: { code: string } }>('POST', '/v1/track', { key: p.publicKey, body: { email: `cut${i}@example.com`, event: 'cut', data: { n: i } } }),
        Bun.sleep(20_000).then((): typeof hung => hung),
      ])
      answered.push(res === hung ? hung : { n: i, status: res.status, code: res.body?.error?.code, retryAfter: res.headers.get('retry-after') })
      return res
    }
    let loading = true
    // A client refused pauses a little, as one honouring Retry-After would (without spinning the CPU).
    const clients = Array.from({ length: 32 }, async () => {
      while (loading) {
        const res = await post()
        if (res === hung) return
        if (res.status === 503) await Bun.sleep(10)
      }
    })
    const ok = () => answered.filter((a) => a !== hung && a.status === 200).length
    const refused = () => answered.filter((a) => a !== hung && a.status === 503).length
    try {
      // Three cuts: each lands among batches in flight at a moment of its own.
      for (let cut = 0; cut < 3; cut++) {
        const [okBefore, refusedBefore] = [ok(), refused()]
        await until(() => ok() >= okBefore + 100, 30_000, '100 tracks answered 200 before the cut')
        await s.pg.stop()
        try {
          await until(() => refused() >= refusedBefore + 32, 30_000, 'tracks refused while PostgreSQL is down')
        } finally {
          await s.pg.start()
        }
      }
      const before = ok()
      await until(() => ok() >= before + 100, 30_000, 'tracks answered 200 after PostgreSQL came back')
    } finally {
      loading = false
      await Promise.all(clients)
    }
    expect(answered.filter((a) => a === hung)).toHaveLength(0)
    const all = answered as Array<{ n: number; status: number; code?: string; retryAfter: string | null }>
    expect(all.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([])
    for (const a of all.filter((x) => x.status === 503)) {
      expect(a.code).toBe('DATABASE_UNAVAILABLE')
      expect(a.retryAfter).toBe('5')
    }
    // Never a silent drop: every track answered 200 was written.
    const rows = await s.env.store.rows<{ n: string }>(sql`SELECT data->>'n' AS n FROM events WHERE project_id = ${p.id} AND name = 'cut'`)
    const written = new Set(rows.map((r) => Number(r.n)))
    expect(all.filter((a) => a.status === 200 && !written.has(a.n)).map((a) => a.n)).toEqual([])
  }, 120_000)
})
