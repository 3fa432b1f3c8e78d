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
