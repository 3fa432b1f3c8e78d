import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Database } from 'bun:sqlite'
import postgres from 'postgres'
import { sqlitePath } from '../../../src/db/client'
import { openStore } from '../../../src/db/client'
import { forEachStore, type TestEnv } from '../../helpers/env'

/**
 * GET /contacts?search= against the store's own SQL (LIKE over every row) as the reference, while the
 * contacts change in every way the search index must follow (on SQLite the answers come from the
 * in-memory index; its chunks hold 4,096 rows, so the seeds below span several).
 */

const NAMES = ['ab', 'anna', 'bob', 'carla', 'zed', 'x_y', 'ba']
const DOMAINS = ['gmail.com', 'ex.io', 'abc.org', 'mail.ab.net', 'corp.io']

/** `n` contacts with ids <prefix><i>; created_at has ties of three (same millisecond). */
async function insertMany(env: TestEnv, projectId: string, prefix: string, from: number, n: number) {
  const names = `'${NAMES.join("','")}'`
  const domains = `'${DOMAINS.join("','")}'`
  if (env.kind === 'sqlite') {
    await env.store.exec(sql`WITH RECURSIVE g(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM g WHERE i < ${from + n - 1})
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${prefix} || printf('%06d', i), ${projectId},
        (json_array(${sql.raw(names)}) ->> (i % 7)) || i || '@' || (json_array(${sql.raw(domains)}) ->> ((i / 7) % 5)),
        (i % 4) != 0, '{}', 1700000000000 + (i / 3) * 1000, 1700000000000 FROM g`)
  } else {
    await env.store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${prefix} || lpad(i::text, 6, '0'), ${projectId},
        (ARRAY[${sql.raw(names)}])[i % 7 + 1] || i || '@' || (ARRAY[${sql.raw(domains)}])[(i / 7) % 5 + 1],
        (i % 4) != 0, '{}'::jsonb, to_timestamp((1700000000000 + (i / 3) * 1000) / 1000.0), now()
      FROM generate_series(${from}::int, ${from + n - 1}::int) AS g(i)`)
  }
}

function pattern(term: string) {
  return `%${term.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
}

/** The reference: ids in page order, by plain SQL. */
async function expected(env: TestEnv, projectId: string, term: string, order: string, subscribed?: boolean) {
  const state = subscribed === undefined ? sql`` : sql` AND subscribed = ${env.kind === 'pg' ? subscribed : subscribed ? 1 : 0}`
  const rows = await env.store.rows<{ id: string }>(sql`SELECT id FROM contacts WHERE project_id = ${projectId}
    AND email LIKE ${pattern(term)} ESCAPE '\\'${state} ORDER BY ${sql.raw(order)}`)
  return rows.map((r) => r.id)
}

interface Page { status: number; body: { data: Array<{ id: string; email: string }>; cursor: string | null; hasMore: boolean; total: number } }

async function pages(env: TestEnv, key: string, query: string, max: number) {
  const ids: string[] = []
  let cursor: string | null = null
  let total = -1
  for (let i = 0; i < max; i++) {
    const r: Page = await env.request('GET', `/contacts?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key })
    expect(r.status).toBe(200)
    if (i === 0) total = r.body.total
    ids.push(...r.body.data.map((c) => c.id))
    cursor = r.body.cursor
    if (!cursor) break
  }
  return { ids, total, done: cursor === null }
}

const TERMS = ['ab', 'gmail', 'b1', '@ex.io', 'x_y', 'zed12', 'a', 'nothing-here', 'AB.NET', 'moved', 'com\nab']

/** Every term, sort and state filter: the total exactly, the first pages (all of them for small results) in order. */
async function check(env: TestEnv, projectId: string, key: string, terms = TERMS) {
  for (const term of terms) {
    for (const subscribed of [undefined, false]) {
      const filter = subscribed === undefined ? '' : `&subscribed=${subscribed}`
      for (const [sortQ, order] of [['', 'created_at DESC, id DESC'], ['&sort=email&dir=asc', 'email ASC'], ['&dir=asc', 'created_at ASC, id ASC'], ['&sort=email&dir=desc', 'email DESC']]) {
        const want = await expected(env, projectId, term, order, subscribed)
        const limit = want.length > 60 ? 25 : 7
        const got = await pages(env, key, `search=${encodeURIComponent(term)}${filter}${sortQ}&limit=${limit}`, 3)
        expect({ term, subscribed, sortQ, total: got.total }).toEqual({ term, subscribed, sortQ, total: want.length })
        expect({ term, subscribed, sortQ, ids: got.ids }).toEqual({ term, subscribed, sortQ, ids: want.slice(0, got.ids.length) })
        expect(got.ids.length).toBe(got.done ? want.length : 3 * limit)
      }
    }
  }
}

forEachStore('GET /contacts?search= (exact under changes)', (env) => {
  test('totals and pages equal SQL through inserts, deletes (largest rowids too), email changes, state flips and another connection\'s writes', async () => {
    const p = await env.project()
    const q = await env.project()
    await insertMany(env, p.id, 'c', 0, 9000)
    await insertMany(env, q.id, 'q', 0, 3000)
    await check(env, p.id, p.secretKey)

    // More than a chunk of new rows, some in the other project.
    await insertMany(env, p.id, 'c', 9000, 4500)
    await insertMany(env, q.id, 'q', 3000, 200)
    await check(env, p.id, p.secretKey, ['ab', 'gmail', 'b1', 'a'])

    // Deleting the largest rowids lets SQLite reuse them for the next inserts.
    if (env.kind === 'sqlite') await env.store.exec(sql`DELETE FROM contacts WHERE rowid IN (SELECT rowid FROM contacts ORDER BY rowid DESC LIMIT 300)`)
    else await env.store.exec(sql`DELETE FROM contacts WHERE id IN (SELECT id FROM contacts ORDER BY created_at DESC LIMIT 300)`)
    await insertMany(env, p.id, 'r', 20000, 150)
    await insertMany(env, q.id, 's', 20000, 150)

    // Another connection (as the CLI would be) renames, flips and deletes.
    const other = openStore(env.store.url, { sqliteSynchronous: 'NORMAL' })
    try {
      const t = env.kind === 'pg' ? sql`true` : sql`1`
      const f = env.kind === 'pg' ? sql`false` : sql`0`
      await other.exec(sql`UPDATE contacts SET email = 'moved' || id || '@ab.net' WHERE project_id = ${p.id} AND id LIKE 'c%' AND substr(id, 6, 1) IN ('7', '8', '9')`)
      await other.exec(sql`UPDATE contacts SET subscribed = CASE WHEN subscribed = ${t} THEN ${f} ELSE ${t} END WHERE project_id = ${p.id} AND substr(id, 5, 2) = '13'`)
      await check(env, p.id, p.secretKey, ['moved', 'a'])
      await other.exec(sql`DELETE FROM contacts WHERE project_id = ${p.id} AND id LIKE 'c%' AND substr(id, 7, 1) IN ('1', '2', '3', '4', '5', '6')`)
      await other.exec(sql`UPDATE contacts SET email = 'moved-again-' || email WHERE project_id = ${p.id} AND email LIKE 'moved%' AND substr(id, 7, 1) = '9'`)
    } finally {
      await other.close()
    }
    await check(env, p.id, p.secretKey)
  }, 120_000)

  test('custom field values follow data changes: tracks one by one and batched, an UPDATE of many rows, an unchanged value', async () => {
    const p = await env.project()
    await insertMany(env, p.id, 'd', 0, 5000)
    const total = async (term: string) => {
      // The dashboard's search (POST /contacts/query) looks in the custom fields' values too.
      const r = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: term } })
      expect(r.status).toBe(200)
      return r.body.total
    }
    const track = async (emails: string[], city: string) => {
      const answers = await Promise.all(emails.map((email) => env.request('POST', '/v1/track', { key: p.publicKey, body: { email, event: 'moved', data: { city } } })))
      expect(answers.map((a) => a.status)).toEqual(emails.map(() => 200))
    }
    const emails = Array.from({ length: 12 }, (_, k) => `t${k}@data.test`)
    expect(await total('zebratown')).toBe(0)
    // New contacts (concurrent tracks share batches), then their data changed by tracks, alone and together.
    await track(emails, 'Zebratown')
    expect(await total('zebratown')).toBe(12)
    await track(emails.slice(0, 1), 'Oslo')
    expect([await total('zebratown'), await total('oslo')]).toEqual([11, 1])
    await track(emails, 'Oslo')
    expect([await total('zebratown'), await total('oslo')]).toEqual([0, 12])
    // A track that changes nothing leaves the contact found as it was.
    await track(emails.slice(0, 3), 'Oslo')
    expect(await total('oslo')).toBe(12)
    // One statement changing many rows, from another connection, and a change of one row's email alone.
    const other = openStore(env.store.url, { sqliteSynchronous: 'NORMAL' })
    try {
      await other.exec(env.kind === 'pg'
        ? sql`UPDATE contacts SET data = '{"city": "Quito"}'::jsonb WHERE project_id = ${p.id} AND email LIKE '%@data.test' AND email <> 't0@data.test'`
        : sql`UPDATE contacts SET data = '{"city": "Quito"}' WHERE project_id = ${p.id} AND email LIKE '%@data.test' AND email <> 't0@data.test'`)
      await other.exec(sql`UPDATE contacts SET email = 'renamed@data.test' WHERE project_id = ${p.id} AND email = 't0@data.test'`)
    } finally {
      await other.close()
    }
    // Another connection's commit is seen once the turn's read snapshot has ended (SQLite: client.ts).
    await new Promise((resolve) => setImmediate(resolve))
    expect([await total('oslo'), await total('quito'), await total('renamed'), await total('t0@data')]).toEqual([1, 11, 1, 0])
    // Contacts moved to another project, one with a new id too (seeded ones: a contact with events keeps its
    // id), leave this project's search and join the other's.
    const q = await env.project()
    const inQ = async (term: string) => (await env.request('POST', '/contacts/query', { key: q.secretKey, body: { search: term } })).body.total
    expect([await total('anna1@'), await total('bob2@'), await inQ('anna1@'), await inQ('bob2@')]).toEqual([1, 1, 0, 0])
    await env.store.exec(sql`UPDATE contacts SET project_id = ${q.id}, id = 'moved-d1' WHERE id = 'd000001'`)
    await env.store.exec(sql`UPDATE contacts SET project_id = ${q.id} WHERE id = 'd000002'`)
    expect([await total('anna1@'), await total('bob2@'), await inQ('anna1@'), await inQ('bob2@')]).toEqual([0, 0, 1, 1])
  }, 60_000)

  test('ties on created_at across page boundaries: every match once, in (created_at, id) order', async () => {
    const p = await env.project()
    await insertMany(env, p.id, 't', 0, 600)
    for (const dir of ['desc', 'asc']) {
      const want = await expected(env, p.id, 'a', `created_at ${dir.toUpperCase()}, id ${dir.toUpperCase()}`)
      const got = await pages(env, p.secretKey, `search=a&limit=4&dir=${dir}`, 1000)
      expect(got.done).toBe(true)
      expect(got.ids).toEqual(want)
    }
  }, 60_000)

  test('a transaction that commits after later ones is counted once it commits, not before', async () => {
    const p = await env.project()
    await insertMany(env, p.id, 'l', 0, 5000)
    const total = async () => (await env.request('GET', '/contacts?search=late', { key: p.secretKey })).body.total
    expect(await total()).toBe(0)
    const row = (id: string, email: string) => env.kind === 'pg'
      ? `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ('${id}', '${p.id}', '${email}', true, '{}', now(), now())`
      : `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES ('${id}', '${p.id}', '${email}', 1, '{}', 1, 1)`
    if (env.kind === 'pg') {
      const client = postgres(env.store.url, { max: 2, onnotice: () => {} })
      try {
        const slow = await client.reserve()
        await slow.unsafe('BEGIN')
        await slow.unsafe(row('late-1', 'late1@x.io'))
        await client.unsafe(row('late-2', 'late2@x.io'))
        expect(await total()).toBe(1)
        await slow.unsafe('COMMIT')
        slow.release()
        expect(await total()).toBe(2)
      } finally {
        await client.end()
      }
    } else {
      const other = new Database(sqlitePath(env.store.url))
      try {
        other.run('PRAGMA busy_timeout = 5000')
        other.run('BEGIN IMMEDIATE')
        other.run(row('late-1', 'late1@x.io'))
        expect(await total()).toBe(0)
        other.run('COMMIT')
        // Another process's commit is seen once the turn's read snapshot has ended (client.ts ends it in a setImmediate).
        await new Promise((resolve) => setImmediate(resolve))
        expect(await total()).toBe(1)
      } finally {
        other.close()
      }
    }
  }, 60_000)

  // SQLite only (the PostgreSQL search has no change log to prune): reported as skipped on PostgreSQL.
  test.skipIf(env.kind !== 'sqlite')('SQLite only: stored emails with capitals match as LIKE does; a pruned change log and a VACUUM rebuild the index', async () => {
    const p = await env.project()
    await insertMany(env, p.id, 'u', 0, 5000)
    await env.store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      VALUES ('cap1', ${p.id}, 'Mixed.Case@Example.COM', 1, '{}', 1, 1), ('cap2', ${p.id}, 'élan@ÉCOLE.fr', 1, '{}', 2, 2)`)
    await check(env, p.id, p.secretKey, ['mixed', 'EXAMPLE.com', 'élan', 'école', 'ÉCOLE', 'ab'])
    // A change after the index is current, then the log loses its older entries (as pruning does).
    await insertMany(env, p.id, 'v', 5000, 10)
    await env.store.exec(sql`DELETE FROM contacts WHERE id IN ('u000001', 'u000002')`)
    await env.store.exec(sql`DELETE FROM contact_changes WHERE seq < (SELECT max(seq) FROM contact_changes)`)
    await check(env, p.id, p.secretKey, ['ab', 'a', 'mixed'])
    // VACUUM may renumber rowids (it moves schema_version: the index is rebuilt).
    await env.store.exec(sql`DELETE FROM contacts WHERE project_id = ${p.id} AND id LIKE 'u%' AND substr(id, 7, 1) IN ('3', '4')`)
    await env.store.script('VACUUM')
    await check(env, p.id, p.secretKey, ['ab', 'a', 'mixed'])
    // The log emptied entirely: numbering starts again below what the index has seen.
    await env.store.exec(sql`DELETE FROM contact_changes`)
    await insertMany(env, p.id, 'w', 6000, 10)
    await check(env, p.id, p.secretKey, ['ab', 'a'])
  }, 60_000)
})
