import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, pgReachableSync, TestEnv } from '../helpers/env'
import { GroupCommit, type Batched } from '../../src/db/group-commit'

forEachStore('group commit', (env) => {
  test('writes submitted together commit together; a failing one rolls back alone; answers come after commit', async () => {
    const p = await env.project()
    const g = new GroupCommit(env.store)
    const insert = (name: string) => (db: Parameters<Parameters<GroupCommit['run']>[0]>[0]) =>
      env.store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (${Bun.randomUUIDv7()}, ${p.id}, NULL, ${name}, '{}', NULL, ${env.store.dialect === 'pg' ? new Date().toISOString() : Date.now()})`, db)
    const visibleAtAnswer: number[] = []
    const count = async () => Number((await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id}`, env.store.db))[0].n)
    const results = await Promise.allSettled([
      g.run(async (db) => { await insert('a')(db); return 'a' }).then(async (v) => { visibleAtAnswer.push(await count()); return v }),
      g.run(async (db) => { await insert('bad')(db); throw new Error('boom') }),
      g.run(async (db) => { await insert('c')(db); return 'c' }),
    ])
    expect(results[0]).toEqual({ status: 'fulfilled', value: 'a' })
    expect(results[1].status).toBe('rejected')
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('boom')
    expect(results[2]).toEqual({ status: 'fulfilled', value: 'c' })
    const names = (await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${p.id} ORDER BY name`)).map((r) => r.name)
    expect(names).toEqual(['a', 'c'])
    // The first answer came after the commit that made its write (and its batch-mates') visible to readers.
    expect(visibleAtAnswer[0]).toBeGreaterThanOrEqual(1)
    if (env.store.dialect === 'sqlite') {
      // (On PostgreSQL `run` is a transaction of its own: only runMany batches there.)
      expect(visibleAtAnswer[0]).toBe(2)
      expect(g.stats.batches).toBe(1)
      expect(g.stats.writes).toBe(3)
    }
  })
  test('pure writes run without savepoints; one failing sends the batch back, and it rolls back alone', async () => {
    const p = await env.project()
    const g = new GroupCommit(env.store)
    const insert = (db: Parameters<Parameters<GroupCommit['run']>[0]>[0], name: string) =>
      env.store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (${Bun.randomUUIDv7()}, ${p.id}, NULL, ${name}, '{}', NULL, ${env.store.dialect === 'pg' ? new Date().toISOString() : Date.now()})`, db)
    let badRuns = 0
    const results = await Promise.allSettled([
      g.run(async (db) => { await insert(db, 'a'); return 'a' }, { pure: true }),
      g.run(async (db) => { await insert(db, 'bad'); badRuns++; throw new Error('boom') }, { pure: true }),
      g.run(async (db) => { await insert(db, 'c'); return 'c' }),
      g.run(async (db) => { await insert(db, 'd'); return 'd' }, { pure: true }),
    ])
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['a', 'boom', 'c', 'd'])
    const names = (await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${p.id} ORDER BY name`)).map((r) => r.name)
    expect(names).toEqual(['a', 'c', 'd'])
    if (env.store.dialect === 'sqlite') {
      // Run bare first, then again in its own savepoint after the rollback of the whole batch.
      expect(badRuns).toBe(2)
      expect(g.stats).toEqual({ batches: 1, writes: 4, retries: 1, conflicts: 0 })
      // A batch whose pure writes all succeed commits in one go.
      await Promise.all([g.run(async (db) => insert(db, 'e'), { pure: true }), g.run(async (db) => insert(db, 'f'), { pure: true })])
      expect(g.stats).toEqual({ batches: 2, writes: 6, retries: 1, conflicts: 0 })
    }
  })
  test('batched writes (runMany) share one call of many; when it throws, each runs alone in its savepoint', async () => {
    const p = await env.project()
    const g = new GroupCommit(env.store)
    const insert = (db: Parameters<Parameters<GroupCommit['run']>[0]>[0], name: string) =>
      env.store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (${Bun.randomUUIDv7()}, ${p.id}, NULL, ${name}, '{}', NULL, ${env.store.dialect === 'pg' ? new Date().toISOString() : Date.now()})`, db)
    const calls: string[][] = []
    const kind: Batched<string, string> = {
      async many(db, items) {
        calls.push(items)
        for (const name of items) {
          if (name === 'bad') throw new Error('boom')
          await insert(db, name)
        }
        return items.map((n) => n.toUpperCase())
      },
      async one(db, name) {
        if (name === 'bad') throw new Error('boom')
        await insert(db, name)
        return name.toUpperCase()
      },
    }
    expect(await Promise.all([g.runMany(kind, 'a'), g.runMany(kind, 'b')])).toEqual(['A', 'B'])
    expect(calls).toEqual([['a', 'b']])
    const results = await Promise.allSettled([g.runMany(kind, 'c'), g.runMany(kind, 'bad'), g.runMany(kind, 'd')])
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['C', 'boom', 'D'])
    const names = (await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${p.id} ORDER BY name`)).map((r) => r.name)
    expect(names).toEqual(['a', 'b', 'c', 'd'])
    expect(g.stats).toEqual({ batches: 2, writes: 5, retries: 1, conflicts: 0 })
  })
})

const pgRun = pgReachableSync()
;(pgRun ? describe : describe.skip)('group commit [pg]: conflicts', () => {
  const env = new TestEnv('pg')
  beforeAll(() => env.start(), 60_000)
  afterAll(() => env.stop(), 60_000)

  test('a write that deadlocks with another transaction is run again, and both commit', async () => {
    const p = await env.project()
    const ids = ['dl-a', 'dl-b']
    for (const id of ids) await env.store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (${id}, ${p.id}, ${`${id}@example.com`}, true, '{}', now(), now())`)
    // Two committers (as two nodes would have): each locks one row, waits until the other holds its own,
    // then locks the other one. PostgreSQL cancels one of them with deadlock_detected.
    const one = new GroupCommit(env.store)
    const two = new GroupCommit(env.store)
    let held = 0
    const bothHeld = async () => { held++; while (held < 2) await Bun.sleep(5) }
    let runs = 0
    const lockBoth = (first: string, second: string) => async (db: Parameters<Parameters<GroupCommit['run']>[0]>[0]) => {
      runs++
      await env.store.exec(sql`UPDATE contacts SET data = data || ${JSON.stringify({ [first]: runs })}::jsonb WHERE id = ${first}`, db)
      await bothHeld()
      await env.store.exec(sql`UPDATE contacts SET data = data || ${JSON.stringify({ [second]: runs })}::jsonb WHERE id = ${second}`, db)
      return first
    }
    const results = await Promise.allSettled([one.run(lockBoth('dl-a', 'dl-b')), two.run(lockBoth('dl-b', 'dl-a'))])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
    // The victim ran again (a retry may deadlock once more while the winner takes the rows it let go).
    const conflicts = one.stats.conflicts + two.stats.conflicts
    expect(conflicts).toBeGreaterThanOrEqual(1)
    expect(runs).toBe(2 + conflicts)
    const data = (await env.store.rows<{ id: string; data: Record<string, number> }>(sql`SELECT id, data FROM contacts WHERE id IN ('dl-a', 'dl-b') ORDER BY id`)).map((r) => Object.keys(r.data).sort())
    expect(data).toEqual([['dl-a'], ['dl-b']])
  }, 20_000)
})
