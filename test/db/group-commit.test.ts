import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'
import { GroupCommit } from '../../src/db/group-commit'

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
      expect(g.stats).toEqual({ batches: 1, writes: 4, retries: 1 })
      // A batch whose pure writes all succeed commits in one go.
      await Promise.all([g.run(async (db) => insert(db, 'e'), { pure: true }), g.run(async (db) => insert(db, 'f'), { pure: true })])
      expect(g.stats).toEqual({ batches: 2, writes: 6, retries: 1 })
    }
  })
})
