import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ctxFor } from '../../../src/deps'
import { countContacts, countMatches, filterWhere, queryContacts } from '../../../src/modules/contacts/query'
import { total as sqlTotal } from '../../../src/modules/contacts/repo/query'
import { currentIndex } from '../../../src/modules/contacts/search'
import { forEachStore, type TestEnv } from '../../helpers/env'

/** Counting a filter of the contacts page slice by slice: exact, estimated, and without holding the process. */

const N = 600
const planIs = (value: string) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value }] }] })

/** N contacts in one statement: plan pro for every third, "Anna Müller" for one in a hundred. */
async function seedMany(env: TestEnv, projectId: string) {
  const store = env.deps.store
  if (store.dialect === 'pg') {
    await store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${projectId} || '-' || i, ${projectId}, 'user' || i || '@example.com', true,
        jsonb_build_object('plan', (ARRAY['pro','free','team'])[i % 3 + 1], 'name', CASE WHEN i % 100 = 7 THEN 'Anna Müller' ELSE 'User ' || i END),
        to_timestamp(1700000000 + i), to_timestamp(1700000000 + i)
      FROM generate_series(0, ${N - 1}) AS i`)
    return
  }
  await store.exec(sql`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${N - 1})
    INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
    SELECT ${projectId} || '-' || i, ${projectId}, 'user' || i || '@example.com', 1,
      json_object('plan', CASE i % 3 WHEN 0 THEN 'pro' WHEN 1 THEN 'free' ELSE 'team' END, 'name', CASE WHEN i % 100 = 7 THEN 'Anna Müller' ELSE 'User ' || i END),
      1700000000000 + i * 1000, 1700000000000 + i * 1000 FROM n`)
}

/** Slices of a few rows: 50 rowids on SQLite, one block (about 40 of these rows) on PostgreSQL. */
const small = (env: TestEnv) => (env.deps.store.dialect === 'pg' ? 1 : 50)

forEachStore('contacts page counts', (env) => {
  test('a count over many slices is exact, and gives other requests their turn between slices', async () => {
    const p = await env.project()
    await seedMany(env, p.id)
    const other = await env.project()
    await seedMany(env, other.id)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const where = await filterWhere(ctx, { condition: planIs('pro') })
    let ticked = false
    setImmediate(() => { ticked = true })
    expect(await countMatches(ctx, where, { budgetMs: 60_000, minHits: 1, minSlices: 1, sliceSize: small(env) })).toEqual({ total: 200, estimated: false })
    expect(ticked).toBe(true)
    expect(await countMatches(ctx, where)).toEqual({ total: 200, estimated: false })
    // A filter with fewer matches than minHits is counted to the end, exactly, even past its budget.
    const rare = await filterWhere(ctx, { search: 'müller' })
    expect(await countMatches(ctx, rare, { budgetMs: 0, minHits: 7, minSlices: 1, sliceSize: small(env) })).toEqual({ total: 6, estimated: false })
  })

  test('past its budget an estimated count answers from the slices read, in two significant digits', async () => {
    const p = await env.project()
    await seedMany(env, p.id)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const where = await filterWhere(ctx, { condition: planIs('free') })
    // Not before minSlices slices are read: here more than there are, so the count is exact.
    expect(await countMatches(ctx, where, { budgetMs: 0, minHits: 1, minSlices: 100_000, sliceSize: small(env) })).toEqual({ total: 200, estimated: false })
    for (let i = 0; i < 5; i++) {
      const r = await countMatches(ctx, where, { budgetMs: 0, minHits: 1, minSlices: 1, sliceSize: small(env) })
      expect(r.estimated).toBe(true)
      // An estimate scales the matches of the slices read: never 0 once one was seen, never past the table.
      expect(r.total).toBeGreaterThan(0)
      expect(r.total).toBeLessThanOrEqual(20 * N)
      expect(String(r.total).replace(/^(\d\d)0*$/, '$1').length).toBeLessThanOrEqual(2)
    }
  })

  test('a search matches the text values, not the keys or the JSON around them', async () => {
    const p = await env.project()
    const made = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'k1@example.com', data: { plan: 'pro', note: 'line one\nBär "quoted" \\ slash/path', n: 12 } } })
    expect(made.status).toBe(201)
    const total = async (search: string) => (await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search } })).body.total
    expect(await total('plan')).toBe(0) // a key
    expect(await total('note":')).toBe(0) // JSON around a value
    expect(await total('12')).toBe(0) // a number
    expect(await total('pro')).toBe(1)
    expect(await total('BAR')).toBe(1)
    expect(await total('"quoted" \\ slash/path')).toBe(1)
    expect(await total('slash/path')).toBe(1)
    expect(await total('one\nbär')).toBe(1)
    expect(await total('one bär')).toBe(0)
  })

  test('a search read from the in-memory copy finds what SQL finds, and follows changes of the values', async () => {
    const p = await env.project()
    await seedMany(env, p.id)
    const extra = [
      { email: 'zoe@example.com', data: { name: 'Zoë Ærø', city: 'Köln', note: 'tab\there', plan: 'pro' } },
      { email: 'omer@example.com', data: { name: 'ΣΟΦΊΑ', n: 5, flag: true } },
      { email: 'MIXED@Example.com', data: { name: 'İlker' } },
    ]
    for (const body of extra) expect({ email: body.email, status: (await env.request('POST', '/contacts', { key: p.secretKey, body })).status }).toEqual({ email: body.email, status: 201 })
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    const terms = ['muller', 'MÜLLER', 'user 1', 'zoe', 'aero', 'ærø', 'koln', 'KÖLN', 'σοφ', 'ilker', 'mixed@', 'example.com', 'pro', 'user1@', '@example', 'tab', 'there', 'n', '5', 'nested', 'ö', 'ΟΦΊ', 'true']
    for (const search of terms) {
      for (const condition of [undefined, planIs('pro')]) {
        const inSql = await sqlTotal(env.deps.store, await filterWhere(ctx, { search, condition }))
        expect({ search, condition: Boolean(condition), total: (await countContacts(ctx, { search, condition })).total }).toEqual({ search, condition: Boolean(condition), total: inSql })
      }
    }
    // The copy follows changes of the values, whoever makes them: the API, a bulk job's SQL, a delete.
    const count = async (search: string) => (await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { search } })).body.total
    expect(await count('köln')).toBe(1)
    expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'zoe@example.com', data: { city: 'Zürich' } } })).status).toBe(200)
    expect(await count('zurich')).toBe(1)
    expect(await count('koln')).toBe(0)
    await env.deps.store.exec(sql`UPDATE contacts SET data = ${env.deps.store.dialect === 'pg' ? sql`jsonb_set(data, '{city}', '"Genève"')` : sql`json_set(data, '$.city', 'Genève')`} WHERE project_id = ${p.id} AND email = 'zoe@example.com'`)
    expect(await count('geneve')).toBe(1)
    expect(await count('zurich')).toBe(0)
    await env.deps.store.exec(sql`DELETE FROM contacts WHERE project_id = ${p.id} AND email = 'zoe@example.com'`)
    expect(await count('geneve')).toBe(0)
    const page = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'müller', condition: planIs('free'), limit: 2, sort: 'email', dir: 'asc' } })
    expect(page.body.data.map((c: { email: string }) => c.email)).toEqual(['user307@example.com', 'user7@example.com'])
    expect(page.body.total).toBe(2)
  })

  test('a search with more candidates than are read by key: its pages from the first candidates in page order', async () => {
    const p = await env.project()
    await seedMany(env, p.id)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await currentIndex(env.deps.store, p.id) // the copy built: the searches below read it
    // "User 1", "User 10".."User 19", "User 100".."User 199" but not 107 (Anna Müller): 110 candidates.
    const expected = (pro: boolean) => Array.from({ length: N }, (_, i) => i)
      .filter((i) => String(i).startsWith('1') && i % 100 !== 7 && (!pro || i % 3 === 0))
    for (const [keyedMax, what] of [[5, 'wide'], [20_000, 'keyed']] as const) {
      for (const pro of [false, true]) {
        for (const [sort, dir] of [['createdAt', 'desc'], ['createdAt', 'asc'], ['email', 'asc']] as const) {
          const seen: string[] = []
          let cursor: string | undefined
          for (let n = 0; n < 40; n++) {
            const r = await queryContacts(ctx, { search: 'user 1', ...(pro ? { condition: planIs('pro') } : {}), limit: 7, sort, dir, ...(cursor ? { cursor } : {}) }, keyedMax)
            seen.push(...r.data.map((c) => c.email))
            if (!r.cursor) break
            cursor = r.cursor
          }
          const want = expected(pro).map((i) => `user${i}@example.com`)
          if (sort === 'email') want.sort()
          else if (dir === 'desc') want.reverse()
          expect({ what, pro, sort, dir, seen }).toEqual({ what, pro, sort, dir, seen: want })
        }
      }
    }
    // A term every candidate of which is a key, not a value: no rows, by either path.
    expect((await queryContacts(ctx, { search: 'plan', limit: 5 }, 5)).data).toEqual([])
    // Counts: exact by default; estimated from a sample of the candidates (here all of them: exact
    // figures, rounded); a sample with too few matches counts over the table instead.
    expect(await countContacts(ctx, { search: 'user 1', condition: planIs('pro') }, 5)).toEqual({ total: expected(true).length, estimated: false })
    expect(await countContacts(ctx, { search: 'user 1', estimate: true }, 5)).toEqual({ total: 110, estimated: true })
    expect(await countContacts(ctx, { search: 'plan', estimate: true }, 5)).toEqual({ total: 0, estimated: false })
  })

  test('POST /contacts/query/count: exact by default, estimate on request, checked', async () => {
    const p = await env.project()
    await seedMany(env, p.id)
    const exact = await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { condition: planIs('pro') } })
    expect(exact.status).toBe(200)
    expect(exact.body).toEqual({ total: 200, estimated: false })
    // A few hundred rows are counted within the budget: the estimate is then the exact count.
    expect((await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { search: 'MULLER', estimate: true } })).body).toEqual({ total: 6, estimated: false })
    const bad = await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { estimate: 'yes' } })
    expect(bad.status).toBe(422)
    const badCondition = await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { estimate: true, condition: { groups: [{ filters: [{ field: 'data.plan', operator: 'isAbout', value: 1 }] }] } } })
    expect(badCondition.status).toBe(422)
    expect(badCondition.body.error.errors[0].field).toBe('condition.groups.0.filters.0.operator')
    // Another project's key counts its own contacts only.
    const q = await env.project()
    expect((await env.request('POST', '/contacts/query/count', { key: q.secretKey, body: { condition: planIs('pro'), estimate: true } })).body).toEqual({ total: 0, estimated: false })
    expect((await env.request('POST', '/contacts/query/count', { body: { estimate: true } })).status).toBe(401)
  })
})
