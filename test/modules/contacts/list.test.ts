import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { ctxFor } from '../../../src/deps'
import { upsertContact } from '../../../src/modules/contacts/service'

async function seed(env: TestEnv, projectId: string, emails: string[], subscribed = (i: number) => i % 3 !== 0) {
  const ctx = ctxFor(env.deps, projectId, { kind: 'cli' })
  for (let i = 0; i < emails.length; i++) await upsertContact(ctx, { email: emails[i], subscribed: subscribed(i) }, { defaultSubscribed: true })
}

async function all(env: TestEnv, key: string, query: string, onPage?: (n: number) => Promise<void>) {
  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const r: { status: number; body: { data: Array<{ email: string }>; cursor: string | null; hasMore: boolean; total: number } } =
      await env.request('GET', `/contacts?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key })
    expect(r.status).toBe(200)
    if (pages > 0) expect(r.body.total).toBe(0)
    seen.push(...r.body.data.map((c) => c.email))
    expect(r.body.hasMore).toBe(r.body.cursor !== null)
    cursor = r.body.cursor
    pages++
    if (onPage) await onPage(pages)
  } while (cursor)
  return { seen, pages }
}

forEachStore('GET /contacts', (env) => {
  test('defaults: 20 per page, newest first, total on the first page only', async () => {
    const p = await env.project()
    const emails = Array.from({ length: 45 }, (_, i) => `u${String(i).padStart(2, '0')}@example.com`)
    await seed(env, p.id, emails)
    const r = await env.request('GET', '/contacts', { key: p.secretKey })
    expect(r.status).toBe(200)
    expect(r.body.data.length).toBe(20)
    expect(r.body.total).toBe(45)
    expect(r.body.hasMore).toBe(true)
    expect(typeof r.body.cursor).toBe('string')
    expect(r.body.data[0].email).toBe('u44@example.com')
    const { seen, pages } = await all(env, p.secretKey, '')
    expect(pages).toBe(3)
    expect(seen).toEqual([...emails].reverse())
  })

  test('limit above 100 is clamped to 100; below 1 or non-numeric is 400 naming limit', async () => {
    const p = await env.project()
    await seed(env, p.id, Array.from({ length: 105 }, (_, i) => `c${i}@example.com`))
    expect((await env.request('GET', '/contacts?limit=500', { key: p.secretKey })).body.data.length).toBe(100)
    expect((await env.request('GET', '/contacts?limit=7', { key: p.secretKey })).body.data.length).toBe(7)
    for (const v of ['0', '-1', 'abc']) {
      const bad = await env.request('GET', `/contacts?limit=${v}`, { key: p.secretKey })
      expect(bad.status).toBe(400)
      expect(bad.body.error.code).toBe('BAD_REQUEST')
      expect(bad.body.error.errors[0].field).toBe('limit')
    }
  })

  test('sort=email asc/desc, unknown sort and dir fall back to createdAt desc', async () => {
    const p = await env.project()
    await seed(env, p.id, ['b@example.com', 'c@example.com', 'a@example.com'])
    const asc = await all(env, p.secretKey, 'sort=email&dir=asc&limit=2')
    expect(asc.seen).toEqual(['a@example.com', 'b@example.com', 'c@example.com'])
    const desc = await all(env, p.secretKey, 'sort=email&limit=1')
    expect(desc.seen).toEqual(['c@example.com', 'b@example.com', 'a@example.com'])
    const fallback = await all(env, p.secretKey, 'sort=banana&dir=sideways&limit=2')
    expect(fallback.seen).toEqual(['a@example.com', 'c@example.com', 'b@example.com'])
    const created = await all(env, p.secretKey, 'sort=createdAt&dir=asc')
    expect(created.seen).toEqual(['b@example.com', 'c@example.com', 'a@example.com'])
  })

  test('subscribed filter and case-insensitive search (with LIKE wildcards taken literally)', async () => {
    const p = await env.project()
    await seed(env, p.id, ['alpha@example.com', 'beta@example.com', 'ALPHA.two@other.org', 'x_y@example.com', 'xzy@example.com'], () => true)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    await upsertContact(ctx, { email: 'beta@example.com', subscribed: false }, { defaultSubscribed: true })
    const subs = await env.request('GET', '/contacts?subscribed=true', { key: p.secretKey })
    expect(subs.body.total).toBe(4)
    expect(subs.body.data.every((c: { subscribed: boolean }) => c.subscribed)).toBe(true)
    const unsubs = await env.request('GET', '/contacts?subscribed=false', { key: p.secretKey })
    expect(unsubs.body.data.map((c: { email: string }) => c.email)).toEqual(['beta@example.com'])
    const s = await env.request('GET', '/contacts?search=AlPhA', { key: p.secretKey })
    expect(s.body.data.map((c: { email: string }) => c.email).sort()).toEqual(['alpha.two@other.org', 'alpha@example.com'])
    expect(s.body.total).toBe(2)
    const wild = await env.request('GET', '/contacts?search=x_y', { key: p.secretKey })
    expect(wild.body.data.map((c: { email: string }) => c.email)).toEqual(['x_y@example.com'])
    const both = await env.request('GET', '/contacts?search=example&subscribed=false', { key: p.secretKey })
    expect(both.body.total).toBe(1)
    expect((await env.request('GET', '/contacts?subscribed=maybe', { key: p.secretKey })).status).toBe(400)
  })

  test('total=false: the same first page without its count (the dashboard asks the count apart); a bad value is 400', async () => {
    const p = await env.project()
    await seed(env, p.id, Array.from({ length: 7 }, (_, i) => `t${i}@example.com`))
    const counted = await env.request('GET', '/contacts?limit=5&subscribed=true', { key: p.secretKey })
    const fast = await env.request('GET', '/contacts?limit=5&subscribed=true&total=false', { key: p.secretKey })
    expect(fast.status).toBe(200)
    expect(counted.body.total).toBe(4)
    expect(fast.body).toEqual({ ...counted.body, total: 0 })
    expect((await env.request('GET', '/contacts?search=t1&total=false', { key: p.secretKey })).body).toMatchObject({ total: 0, data: [{ email: 't1@example.com' }] })
    expect((await env.request('GET', '/contacts?total=true', { key: p.secretKey })).body.total).toBe(7)
    const bad = await env.request('GET', '/contacts?total=maybe', { key: p.secretKey })
    expect(bad.status).toBe(400)
    expect((await env.request('GET', '/contacts?total=false', { key: null })).status).toBe(401)
  })

  test('a bad cursor is 400 BAD_REQUEST', async () => {
    const p = await env.project()
    const r = await env.request('GET', '/contacts?cursor=garbage', { key: p.secretKey })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('BAD_REQUEST')
  })

  test('paging while inserting sees every original contact exactly once (both sorts)', async () => {
    const p = await env.project()
    const original = Array.from({ length: 30 }, (_, i) => `orig${String(i).padStart(3, '0')}@example.com`)
    await seed(env, p.id, original, () => true)
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })
    let n = 0
    const insertSome = async () => {
      // New contacts sort both before and after the reader's position, in both orders.
      for (let k = 0; k < 2; k++) {
        n++
        await upsertContact(ctx, { email: `${n % 2 ? 'a' : 'z'}new${n}@example.com` }, { defaultSubscribed: true })
      }
    }
    for (const q of ['limit=7', 'limit=7&dir=asc', 'limit=7&sort=email', 'limit=7&sort=email&dir=asc']) {
      const { seen } = await all(env, p.secretKey, q, insertSome)
      const origSeen = seen.filter((e) => e.startsWith('orig'))
      expect(origSeen.length).toBe(original.length)
      expect(new Set(seen).size).toBe(seen.length)
      expect(new Set(origSeen)).toEqual(new Set(original))
    }
  }, 60_000)

  test('contacts created in the same millisecond are ordered by id and paged without loss', async () => {
    const p = await env.project()
    const { contacts } = env.store.t
    const at = new Date('2024-01-01T00:00:00.000Z')
    const rows = Array.from({ length: 25 }, (_, i) => ({ id: Bun.randomUUIDv7(), projectId: p.id, email: `same${i}@example.com`, subscribed: true, data: {}, createdAt: at, updatedAt: at }))
    await env.store.tx((db) => db.insert(contacts).values(rows))
    const { seen } = await all(env, p.secretKey, 'limit=4')
    expect(seen.length).toBe(25)
    expect(new Set(seen).size).toBe(25)
  })

  test('search follows email changes and deletes; short terms, quotes and paging within a search', async () => {
    const p = await env.project()
    const q = await env.project()
    await seed(env, p.id, Array.from({ length: 12 }, (_, i) => `match${i}@findme.org`), () => true)
    await seed(env, p.id, ['other@else.org', 'ab@x.io', 'quote"me@x.io'], () => true)
    await seed(env, q.id, ['match99@findme.org'], () => true)
    const search = async (term: string, extra = '') => (await env.request('GET', `/contacts?search=${encodeURIComponent(term)}${extra}`, { key: p.secretKey })).body
    expect((await search('findme')).total).toBe(12)
    expect((await search('FINDME.ORG')).total).toBe(12)
    const paged = await all(env, p.secretKey, 'search=findme&limit=5&sort=email&dir=asc')
    expect(paged.seen.length).toBe(12)
    expect(paged.seen).toEqual([...paged.seen].sort())
    const byDate = await all(env, p.secretKey, 'search=findme&limit=5')
    expect(byDate.seen).toEqual(Array.from({ length: 12 }, (_, i) => `match${11 - i}@findme.org`))
    expect((await search('ab')).data.map((c: { email: string }) => c.email)).toEqual(['ab@x.io'])
    expect((await search('e"m')).data.map((c: { email: string }) => c.email)).toEqual(['quote"me@x.io'])
    const one = (await search('match3@')).data[0]
    await env.request('PATCH', `/contacts/${one.id}`, { key: p.secretKey, body: { email: 'renamed@else.org' } })
    expect((await search('findme')).total).toBe(11)
    expect((await search('renamed')).data.map((c: { id: string }) => c.id)).toEqual([one.id])
    await env.request('DELETE', `/contacts/${one.id}`, { key: p.secretKey })
    expect((await search('renamed')).total).toBe(0)
    expect((await search('findme', '&subscribed=false')).total).toBe(0)
    expect((await search('%')).total).toBe(0)
  })
})
