import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, pgReachableSync, TestEnv } from '../helpers/env'
import { GroupCommit, LostRaceError, type Batched } from '../../src/db/group-commit'

/** The driver's error code in a cause chain (drizzle wraps the driver's error as `cause`). */
function codeOf(e: unknown): string {
  for (let c = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code
    if (typeof code === 'string') return code
  }
  return ''
}

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
  test('a write that lost a race with another writer (LostRaceError) runs again in its savepoint; lost three times, it fails alone with its 409', async () => {
    const p = await env.project()
    const g = new GroupCommit(env.store)
    const insert = (db: Parameters<Batched<string, string>['one']>[0], name: string) =>
      env.store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (${Bun.randomUUIDv7()}, ${p.id}, NULL, ${name}, '{}', NULL, ${env.store.dialect === 'pg' ? new Date().toISOString() : Date.now()})`, db)
    const runs = new Map<string, number>()
    // Each run writes its row first, then finds out it lost: the row of a lost run must not stay.
    const write = async (db: Parameters<Batched<string, string>['one']>[0], name: string) => {
      const n = (runs.get(name) ?? 0) + 1
      runs.set(name, n)
      await insert(db, name)
      if (name === 'lost' || (name === 'raced' && n < 3)) throw new LostRaceError(`${name} lost its race`)
      return name.toUpperCase()
    }
    const kind: Batched<string, string> = {
      async many(db, items) { const out: string[] = []; for (const name of items) out.push(await write(db, name)); return out },
      one: write,
    }
    const results = await Promise.allSettled([g.runMany(kind, 'a'), g.runMany(kind, 'raced'), g.runMany(kind, 'lost'), g.runMany(kind, 'b')])
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['A', 'RACED', 'lost lost its race', 'B'])
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ status: 409, code: 'CONFLICT' })
    const names = (await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${p.id} ORDER BY name`)).map((r) => r.name)
    expect(names).toEqual(['a', 'b', 'raced'])
    // The batch once (many: 'raced' lost), then each in its savepoint: 'raced' twice more, 'lost' three times.
    expect(Object.fromEntries(runs)).toEqual({ a: 2, raced: 3, lost: 3, b: 1 })
    expect(g.stats).toEqual({ batches: 1, writes: 4, retries: 1, conflicts: 3 })
  })
  test('a deadlock or a serialization failure on every run answers the 409 of a lost race, with the driver\'s error as its cause (a batch\'s write, and a write of its own)', async () => {
    const g = new GroupCommit(env.store)
    // As drizzle throws the driver's error: wrapped, the code on its cause.
    const driverError = (code: string) => Object.assign(new Error('Failed query'), { cause: Object.assign(new Error('deadlock detected'), { code }) })
    const runs = new Map<string, number>()
    const write = async (_db: unknown, name: string) => {
      runs.set(name, (runs.get(name) ?? 0) + 1)
      if (name === 'deadlock') throw driverError('40P01')
      if (name === 'serialization') throw driverError('40001')
      if (name === 'unique') throw driverError('23505')
      return name
    }
    const kind: Batched<string, string> = {
      async many(db, items) { const out: string[] = []; for (const name of items) out.push(await write(db, name)); return out },
      one: write,
    }
    const results = await Promise.allSettled([
      g.runMany(kind, 'deadlock'), g.runMany(kind, 'serialization'), g.runMany(kind, 'unique'), g.runMany(kind, 'ok'),
      g.run((db) => write(db, 'alone')), g.run(async () => { runs.set('alone-deadlock', (runs.get('alone-deadlock') ?? 0) + 1); throw driverError('40P01') }),
    ])
    const reasons = results.map((r) => (r.status === 'rejected' ? r.reason : r.value))
    for (const i of [0, 1, 5]) {
      expect(reasons[i]).toBeInstanceOf(LostRaceError)
      expect(reasons[i]).toMatchObject({ status: 409, code: 'CONFLICT' })
      expect(codeOf((reasons[i] as Error).cause)).toBe(i === 1 ? '40001' : '40P01')
    }
    // Any other error stays what it was, and is not run again.
    expect(reasons[2]).not.toBeInstanceOf(LostRaceError)
    expect(codeOf(reasons[2])).toBe('23505')
    expect([reasons[3], reasons[4]]).toEqual(['ok', 'alone'])
    expect(runs.get('unique')).toBeLessThanOrEqual(2)
    expect(runs.get('alone-deadlock')).toBe(3)
  })
  test('a write the database refuses (a duplicate key) fails alone in a batch: the others of its batch commit', async () => {
    const p = await env.project()
    const g = new GroupCommit(env.store)
    const at = env.store.dialect === 'pg' ? new Date().toISOString() : Date.now()
    const row = (id: string) => sql`(${id}, ${p.id}, NULL, 'dup-test', '{}', NULL, ${at})`
    const insert = (db: Parameters<Batched<string, string>['one']>[0], ids: string[]) =>
      env.store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES ${sql.join(ids.map(row), sql`, `)}`, db)
    // One multi-row statement for the batch, as the track and send kinds do: the duplicate fails all of it
    // (and on PostgreSQL aborts the transaction), so the batch runs again an item a savepoint.
    const kind: Batched<string, string> = {
      async many(db, ids) { await insert(db, ids); return ids },
      async one(db, id) { await insert(db, [id]); return id },
    }
    const taken = `taken-${p.id}`
    await env.store.tx((db) => insert(db, [taken]))
    const results = await Promise.allSettled([g.runMany(kind, `a-${p.id}`), g.runMany(kind, taken), g.runMany(kind, `b-${p.id}`)])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(codeOf((results[1] as PromiseRejectedResult).reason)).toMatch(/^(23505|SQLITE_CONSTRAINT)/)
    const ids = (await env.store.rows<{ id: string }>(sql`SELECT id FROM events WHERE project_id = ${p.id} ORDER BY id`)).map((r) => r.id)
    expect(ids).toEqual([`a-${p.id}`, `b-${p.id}`, taken].sort())
    expect(g.stats).toEqual({ batches: 1, writes: 3, retries: 1, conflicts: 0 })
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

  test('a batch (runMany) that deadlocks with another batch is run again, and every write commits', async () => {
    const p = await env.project()
    for (const id of ['bdl-a', 'bdl-b']) await env.store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (${id}, ${p.id}, ${`${id}@example.com`}, true, '{}', now(), now())`)
    // As two nodes' committers: each batch marks one row, waits until the other holds its own, then marks
    // the other one. PostgreSQL cancels one batch with deadlock_detected; its write runs again.
    let held = 0
    const bothHeld = async () => { held++; while (held < 2) await Bun.sleep(5) }
    const codes: string[] = []
    type Item = { by: string; first: string; second: string }
    const markBoth = async (db: Parameters<Batched<Item, string>['one']>[0], { by, first, second }: Item) => {
      try {
        await env.store.exec(sql`UPDATE contacts SET data = data || ${JSON.stringify({ [by]: true })}::jsonb WHERE id = ${first}`, db)
        await bothHeld()
        await env.store.exec(sql`UPDATE contacts SET data = data || ${JSON.stringify({ [by]: true })}::jsonb WHERE id = ${second}`, db)
        return by
      } catch (e) {
        codes.push(codeOf(e))
        throw e
      }
    }
    const kind: Batched<Item, string> = {
      async many(db, items) { const out: string[] = []; for (const it of items) out.push(await markBoth(db, it)); return out },
      one: markBoth,
    }
    const one = new GroupCommit(env.store)
    const two = new GroupCommit(env.store)
    const results = await Promise.allSettled([one.runMany(kind, { by: 'one', first: 'bdl-a', second: 'bdl-b' }), two.runMany(kind, { by: 'two', first: 'bdl-b', second: 'bdl-a' })])
    expect(results).toEqual([{ status: 'fulfilled', value: 'one' }, { status: 'fulfilled', value: 'two' }])
    // A real deadlock, and the batch that lost it ran again (the safe way, its write in a savepoint).
    expect(codes).toContain('40P01')
    expect(one.stats.retries + two.stats.retries).toBeGreaterThanOrEqual(1)
    const data = (await env.store.rows<{ data: Record<string, boolean> }>(sql`SELECT data FROM contacts WHERE id IN ('bdl-a', 'bdl-b') ORDER BY id`)).map((r) => Object.keys(r.data).sort())
    expect(data).toEqual([['one', 'two'], ['one', 'two']])
  }, 20_000)

  test('a write that fails with a serialization failure is run again in a new transaction', async () => {
    const p = await env.project()
    await env.store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ('ser-a', ${p.id}, 'ser-a@example.com', true, '{}', now(), now())`)
    // mailctl's writes run at READ COMMITTED, where PostgreSQL raises no serialization failure; this write
    // asks for REPEATABLE READ, takes its snapshot, and another transaction changes the row before it does.
    let snapshot = () => {}
    const snapshotTaken = new Promise<void>((resolve) => { snapshot = resolve })
    let otherDone = () => {}
    const otherCommitted = new Promise<void>((resolve) => { otherDone = resolve })
    const codes: string[] = []
    let runs = 0
    const g = new GroupCommit(env.store)
    const write = g.run(async (db) => {
      runs++
      try {
        await env.store.exec(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`, db)
        await env.store.rows(sql`SELECT data FROM contacts WHERE id = 'ser-a'`, db)
        if (runs === 1) { snapshot(); await otherCommitted }
        await env.store.exec(sql`UPDATE contacts SET data = data || '{"mine": true}'::jsonb WHERE id = 'ser-a'`, db)
      } catch (e) {
        codes.push(codeOf(e))
        throw e
      }
    })
    await snapshotTaken
    await env.store.exec(sql`UPDATE contacts SET data = data || '{"theirs": true}'::jsonb WHERE id = 'ser-a'`)
    otherDone()
    await write
    expect(codes).toEqual(['40001'])
    expect(runs).toBe(2)
    expect(g.stats.conflicts).toBe(1)
    const [row] = await env.store.rows<{ data: Record<string, boolean> }>(sql`SELECT data FROM contacts WHERE id = 'ser-a'`)
    expect(row.data).toEqual({ mine: true, theirs: true })
  }, 20_000)

  test('a batch held up (a row lock, a deadlock being detected) does not hold up the writes that come after it: a few writes start a batch of their own', async () => {
    const g = new GroupCommit(env.store)
    let entered = () => {}
    const heldEntered = new Promise<void>((resolve) => { entered = resolve })
    let open = () => {}
    const gate = new Promise<void>((resolve) => { open = resolve })
    const kind: Batched<string, string> = {
      async many(_db, items) {
        if (items.includes('held')) { entered(); await gate }
        return items
      },
      one: async (_db, item) => item,
    }
    let heldSettled = false
    const held = g.runMany(kind, 'held').finally(() => { heldSettled = true })
    await heldEntered
    // Fewer than a shared batch's worth, while a batch is in flight: they still commit, the held one still open.
    expect(await Promise.all([g.runMany(kind, 'free-1'), g.runMany(kind, 'free-2')])).toEqual(['free-1', 'free-2'])
    expect(heldSettled).toBe(false)
    open()
    expect(await held).toBe('held')
    expect(g.stats.batches).toBe(2)
  }, 20_000)

  test('a transaction in which a statement failed unawaited (its rejection handled) is not reported committed', async () => {
    const p = await env.project()
    const failed = await env.store.tx(async (db) => {
      env.store.exec(sql`SELECT 1 / 0`, db).catch(() => {})
      await env.store.exec(sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (${Bun.randomUUIDv7()}, ${p.id}, NULL, 'after', '{}', NULL, now())`, db).catch(() => {})
      return 'done'
    }).then(() => null, (e: Error) => e.message)
    expect(failed).toContain('rolled back at its commit')
    expect(await env.store.rows(sql`SELECT 1 FROM events WHERE project_id = ${p.id}`)).toEqual([])
  })
})

