import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, type Res, type TestEnv } from '../../helpers/env'
import { migrate } from '../../../src/db/migrate'
import { Worker } from '../../../src/jobs/queue'
import { contactJobs } from '../../../src/modules/contacts/jobs'
import { MAX_DATA_BYTES, MAX_DATA_DEPTH, measureJson } from '../../../src/modules/contacts/data'

/**
 * Issue 18, defect 1: contact and event `data` is limited in depth (10 levels of objects and arrays,
 * `data` itself the first) and size (64 KB as compact JSON) on every write path, so that nothing stored
 * can break SQLite's JSON functions (which give up at 1,000 levels) or PostgreSQL's parser.
 */

/** JSON text of a `data` object `depth` levels deep (data itself is level 1). */
const nestText = (depth: number, leaf = '1') => '{"v":'.repeat(depth) + leaf + '}'.repeat(depth)
const nest = (depth: number): Record<string, unknown> => JSON.parse(nestText(depth))

async function lookup(env: TestEnv, key: string, email: string) {
  const r = await env.request('POST', '/contacts/lookup', { key, body: { emails: [email] } })
  return r.body.results[0] as { exists: boolean; id: string | null }
}

async function contactData(env: TestEnv, key: string, email: string) {
  const l = await lookup(env, key, email)
  return l.id ? (await env.request('GET', `/contacts/${l.id}`, { key })).body.data : null
}

function expectLimitError(r: Res, code: 'too_deep' | 'too_big', limit: string) {
  expect(r.status).toBe(422)
  expect(r.body.error.code).toBe('VALIDATION_ERROR')
  expect(r.body.error.errors).toHaveLength(1)
  expect(r.body.error.errors[0]).toMatchObject({ field: 'data', code })
  expect(r.body.error.errors[0].message).toContain(limit)
  expect(r.body.error.message).toContain(limit)
  // The refused value is never echoed back.
  expect(r.body.error.errors[0].received).toBeUndefined()
}

/** A raw JSON request (bodies too deep for JSON.stringify). */
function raw(env: TestEnv, method: string, path: string, key: string, text: string, headers: Record<string, string> = {}) {
  return env.request(method, path, { key, raw: text, headers: { 'content-type': 'application/json', ...headers } })
}

test('measureJson: the compact JSON size in UTF-8 bytes, or too_deep', () => {
  for (const v of [
    {}, [], { a: 1, b: 'x', c: true, d: false, e: null, f: [1, 2, { g: -0.5e-7 }] }, { 'k"\\': 'q"\\\n\u0001\u001f' },
    { s: 'é€😀', [String.fromCharCode(0xd800)]: 'lone \udc00 surrogate' }, { n: 1e21, m: 123456789.125, big: Number.MAX_VALUE },
    { u: undefined, list: [undefined, 1] }, { when: new Date(0) }, 'top', 42, null,
  ]) {
    expect(measureJson(v, 50)).toBe(Buffer.byteLength(JSON.stringify(v)))
  }
  expect(measureJson(nest(10), 10)).toBe(nestText(10).length)
  expect(measureJson(nest(11), 10)).toBe('too_deep')
  expect(measureJson({ a: [[[1]]] }, 3)).toBe('too_deep')
  expect(measureJson({ a: ['x\u0000'] }, 3)).toBe('nul')
  expect(measureJson({ a: [[1]] }, 3)).toBe(11)
  // Iterative: a hostile depth is no problem for the walk itself.
  expect(measureJson(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)), MAX_DATA_DEPTH)).toBe('too_deep')
  // Stops once past the byte limit given.
  expect(measureJson({ a: 'x'.repeat(1000), b: 'y'.repeat(1000) }, 10, 100)).toBeGreaterThan(100)
})

forEachStore('contact data limits', (env) => {
  test(`track: data nesting ${MAX_DATA_DEPTH} levels is stored, ${MAX_DATA_DEPTH + 1} answers 422 too_deep and nothing is written`, async () => {
    const p = await env.project()
    const ok = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'ok@example.com', event: 'e', data: nest(MAX_DATA_DEPTH) } })
    expect(ok.status).toBe(200)
    expect(await contactData(env, p.secretKey, 'ok@example.com')).toEqual(nest(MAX_DATA_DEPTH))
    const deep = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'deep@example.com', event: 'e', data: nest(MAX_DATA_DEPTH + 1) }, headers: { 'idempotency-key': 'k1' } })
    expectLimitError(deep, 'too_deep', '10 levels')
    expect((await lookup(env, p.secretKey, 'deep@example.com')).exists).toBe(false)
    // The refused request did not hold its Idempotency-Key.
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'deep@example.com', event: 'e' }, headers: { 'idempotency-key': 'k1' } })).status).toBe(200)
    // A {value, persistent: false} wrapper is a level like any object; arrays count too.
    expectLimitError(await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'w@example.com', event: 'e', data: { x: { value: nest(MAX_DATA_DEPTH - 1), persistent: false } } } }), 'too_deep', '10')
    expectLimitError(await env.request('POST', '/events/track', { key: p.secretKey, body: { email: 'w@example.com', event: 'e', data: { a: JSON.parse('['.repeat(MAX_DATA_DEPTH) + ']'.repeat(MAX_DATA_DEPTH)) } } }), 'too_deep', '10')
    const events = await env.request('GET', '/events?name=e', { key: p.secretKey })
    expect(events.body.total).toBe(2)
  })

  test('issue 18: a track nesting 1,000 levels is refused, and the field and segment endpoints keep answering', async () => {
    const p = await env.project()
    const k = p.secretKey
    expect((await env.request('POST', '/contacts', { key: k, body: { email: 'a@example.com', data: { plan: 'pro' } } })).status).toBe(201)
    const r = await raw(env, 'POST', '/v1/track', p.publicKey, `{"email":"b@example.com","event":"e","data":{"plan":"pro","x":${nestText(1000)}}}`)
    expectLimitError(r, 'too_deep', '10 levels')
    expect((await lookup(env, k, 'b@example.com')).exists).toBe(false)
    const fields = await env.request('GET', '/contacts/fields', { key: k })
    expect(fields.status).toBe(200)
    expect(fields.body.fields.map((f: { name: string }) => f.name)).toEqual(['email', 'subscribed', 'createdAt', 'updatedAt', 'plan'])
    expect((await env.request('GET', '/contacts/fields/plan/values', { key: k })).body.values).toEqual([{ value: 'pro', count: 1 }])
    const seg = await env.request('POST', '/segments', { key: k, body: { name: 'Pro', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } } })
    expect(seg.status).toBe(201)
    expect(seg.body.memberCount).toBe(1)
    expect((await env.request('GET', `/segments/${seg.body.id}/contacts`, { key: k })).status).toBe(200)
    expect((await env.request('POST', `/segments/${seg.body.id}/refresh`, { key: k })).status).toBeLessThan(300)
    expect((await env.request('DELETE', '/contacts/fields/plan', { key: k })).status).toBe(200)
  })

  test('hostile depths (20,000 and 100,000 levels) answer 422 on every JSON write path, never 500', async () => {
    const p = await env.project()
    const c = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'c@example.com' } })
    for (const depth of [20_000, 100_000]) {
      const data = nestText(depth)
      const attempts = [
        raw(env, 'POST', '/v1/track', p.publicKey, `{"email":"h@example.com","event":"e","data":${data}}`),
        raw(env, 'POST', '/v1/track', p.publicKey, `{"email":"h@example.com","event":"e","data":${data}}`, { 'idempotency-key': `t${depth}` }),
        raw(env, 'POST', '/events/track', p.secretKey, `{"email":"h@example.com","event":"e","data":${data}}`),
        raw(env, 'POST', '/contacts', p.secretKey, `{"email":"h@example.com","data":${data}}`),
        raw(env, 'PATCH', `/contacts/${c.body.id}`, p.secretKey, `{"data":${data}}`),
        raw(env, 'POST', '/v1/send', p.secretKey, `{"to":"h@example.com","from":"a@nowhere.test","subject":"s","body":"b","data":${data}}`, { 'idempotency-key': `s${depth}` }),
      ]
      for (const r of await Promise.all(attempts)) expectLimitError(r, 'too_deep', '10 levels')
    }
    expect((await lookup(env, p.secretKey, 'h@example.com')).exists).toBe(false)
    expect(await contactData(env, p.secretKey, 'c@example.com')).toEqual({})
  })

  test(`size: data over ${MAX_DATA_BYTES} bytes of JSON answers 422 too_big on track, POST and PATCH /contacts`, async () => {
    const p = await env.project()
    const overhead = '{"s":""}'.length
    const exact = { s: 'x'.repeat(MAX_DATA_BYTES - overhead) }
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'e', data: exact } })).status).toBe(200)
    expect(await contactData(env, p.secretKey, 'a@example.com')).toEqual(exact)
    const limit = `${MAX_DATA_BYTES} bytes`
    expectLimitError(await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'b@example.com', event: 'e', data: { s: `${exact.s}x` } } }), 'too_big', limit)
    // UTF-8 bytes, not characters: "é" is two.
    expectLimitError(await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'b@example.com', data: { s: 'é'.repeat(MAX_DATA_BYTES / 2) } } }), 'too_big', limit)
    expect((await lookup(env, p.secretKey, 'b@example.com')).exists).toBe(false)
    const b = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'b@example.com', data: { keep: 1 } } })
    expectLimitError(await env.request('PATCH', `/contacts/${b.body.id}`, { key: p.secretKey, body: { data: { s: 'x'.repeat(MAX_DATA_BYTES) } } }), 'too_big', limit)
    // Many small fields count as much as one big one.
    const many = Object.fromEntries(Array.from({ length: 8000 }, (_, i) => [`field${i}`, i]))
    expectLimitError(await env.request('PATCH', `/contacts/${b.body.id}`, { key: p.secretKey, body: { data: many } }), 'too_big', limit)
    expect(await contactData(env, p.secretKey, 'b@example.com')).toEqual({ keep: 1 })
  })

  test('size: a contact\'s data cannot grow past the limit through several writes (track on the writer thread too); shrinking always works', async () => {
    const p = await env.project()
    const half = 'x'.repeat(40_000)
    const c = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'a@example.com', data: { a: half } } })
    expect(c.status).toBe(201)
    const grow = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'grow', data: { b: half } } })
    expectLimitError(grow, 'too_big', `${MAX_DATA_BYTES} bytes`)
    expect(grow.body.error.message).toContain('contact')
    expectLimitError(await env.request('PATCH', `/contacts/${c.body.id}`, { key: p.secretKey, body: { data: { b: half } } }), 'too_big', `${MAX_DATA_BYTES} bytes`)
    expect((await env.request('GET', '/events?name=grow', { key: p.secretKey })).body.total).toBe(0)
    expect(await contactData(env, p.secretKey, 'a@example.com')).toEqual({ a: half })
    // Replacing the big field fits; so does a transient value that is not stored.
    expect((await env.request('PATCH', `/contacts/${c.body.id}`, { key: p.secretKey, body: { data: { a: null, b: half } } })).status).toBe(200)
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'grow', data: { t: { value: 'x'.repeat(20_000), persistent: false } } } })).status).toBe(200)
    expect(await contactData(env, p.secretKey, 'a@example.com')).toEqual({ b: half })
    // Data already over the limit (stored before the limits) may still shrink.
    const big = { a: half, b: half, c: half }
    await env.store.tx((db) => env.store.exec(sql`UPDATE contacts SET data = ${env.kind === 'pg' ? sql`${JSON.stringify(big)}::jsonb` : JSON.stringify(big)} WHERE id = ${c.body.id}`, db))
    expect((await env.request('PATCH', `/contacts/${c.body.id}`, { key: p.secretKey, body: { data: { a: null } } })).status).toBe(200)
    expectLimitError(await env.request('PATCH', `/contacts/${c.body.id}`, { key: p.secretKey, body: { data: { d: 1 } } }), 'too_big', `${MAX_DATA_BYTES} bytes`)
    expectLimitError(await env.request('PATCH', `/contacts/${c.body.id}`, { key: p.secretKey, body: { data: { b: null, d: half, e: half } } }), 'too_big', `${MAX_DATA_BYTES} bytes`)
  })

  test('a NUL character in a string or key of data answers 422 invalid_text (PostgreSQL cannot store it)', async () => {
    const p = await env.project()
    for (const data of [{ s: 'a\u0000b' }, { 'k\u0000': 1 }, { list: [{ s: '\u0000' }] }]) {
      const r = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'a@example.com', event: 'e', data } })
      expect(r.status).toBe(422)
      // Refused by the check of every request's text before any query (src/http/text.ts), naming the field.
      expect(r.body.error.errors[0].code).toBe('invalid_text')
      expect(r.body.error.errors[0].field).toStartWith('data')
      expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'a@example.com', data } })).status).toBe(422)
    }
    expect((await lookup(env, p.secretKey, 'a@example.com')).exists).toBe(false)
  })

  test('/v1/send: data too deep or too big answers 422 before anything is written', async () => {
    const p = await env.project()
    const base = { to: 'r@example.com', from: 'a@nowhere.test', subject: 's', body: 'b' }
    expectLimitError(await env.request('POST', '/v1/send', { key: p.secretKey, body: { ...base, data: nest(MAX_DATA_DEPTH + 1) } }), 'too_deep', '10 levels')
    expectLimitError(await env.request('POST', '/v1/send', { key: p.secretKey, body: { ...base, data: { s: 'x'.repeat(MAX_DATA_BYTES) } }, headers: { 'idempotency-key': 'big' } }), 'too_big', `${MAX_DATA_BYTES} bytes`)
    expect((await lookup(env, p.secretKey, 'r@example.com')).exists).toBe(false)
  })

  test('CSV import: a JSON cell nested too deep or too big fails its row only', async () => {
    const p = await env.project()
    const csv = [
      'email,plan,meta',
      'a@example.com,pro,"[1,2]"',
      `b@example.com,pro,"${nestText(MAX_DATA_DEPTH + 1).replaceAll('"', '""')}"`,
      `c@example.com,pro,"[""${'x'.repeat(MAX_DATA_BYTES)}""]"`,
      'd@example.com,free,',
    ].join('\n')
    const f = new FormData()
    f.append('file', new Blob([csv], { type: 'text/csv' }), 'c.csv')
    const r = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: f })
    expect(r.status).toBe(202)
    await new Worker(env.deps, contactJobs).drain()
    const done = await env.request('GET', `/contacts/import/${r.body.jobId}`, { key: p.secretKey })
    expect(done.body.status).toBe('completed')
    expect(done.body.result).toMatchObject({ created: 2, failed: 2 })
    expect(done.body.result.errors.map((e: { row: number }) => e.row)).toEqual([3, 4])
    expect(done.body.result.errors[0].message).toContain('10 levels')
    expect(done.body.result.errors[1].message).toContain(`${MAX_DATA_BYTES} bytes`)
    expect((await lookup(env, p.secretKey, 'b@example.com')).exists).toBe(false)
    expect(await contactData(env, p.secretKey, 'a@example.com')).toEqual({ plan: 'pro', meta: [1, 2] })
  })

  test('CSV import: a row that would grow a stored contact past the limit fails that row only', async () => {
    const p = await env.project()
    const half = 'x'.repeat(40_000)
    expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'a@example.com', data: { a: half } } })).status).toBe(201)
    const f = new FormData()
    f.append('file', new Blob([`email,b\na@example.com,${half}\nb@example.com,${half}\n`], { type: 'text/csv' }), 'c.csv')
    const r = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: f })
    await new Worker(env.deps, contactJobs).drain()
    const done = await env.request('GET', `/contacts/import/${r.body.jobId}`, { key: p.secretKey })
    expect(done.body.result).toMatchObject({ created: 1, updated: 0, failed: 1, errors: [{ row: 2 }] })
    expect(done.body.result.errors[0].message).toContain(`${MAX_DATA_BYTES} bytes`)
    expect(await contactData(env, p.secretKey, 'a@example.com')).toEqual({ a: half })
  })

  test('POST and PATCH /segments: a failure while counting the members leaves nothing behind', async () => {
    const p = await env.project()
    const cond = (plan: string) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: plan }] }] })
    const body = { name: 'Broken', condition: cond('pro') }
    /** A real failure of the counting query: the contacts table is away for a moment. */
    async function withoutContacts(fn: () => Promise<Res>): Promise<Res> {
      await env.store.tx((db) => env.store.exec(sql`ALTER TABLE contacts RENAME TO contacts_away`, db))
      try { return await fn() } finally {
        await env.store.tx((db) => env.store.exec(sql`ALTER TABLE contacts_away RENAME TO contacts`, db))
      }
    }
    expect((await withoutContacts(() => env.request('POST', '/segments', { key: p.secretKey, body }))).status).toBe(500)
    expect((await env.request('GET', '/segments', { key: p.secretKey })).body).toEqual([])
    const created = await env.request('POST', '/segments', { key: p.secretKey, body })
    expect(created.status).toBe(201)
    const patch = { name: 'Renamed', condition: cond('free') }
    expect((await withoutContacts(() => env.request('PATCH', `/segments/${created.body.id}`, { key: p.secretKey, body: patch }))).status).toBe(500)
    expect((await env.request('GET', `/segments/${created.body.id}`, { key: p.secretKey })).body).toMatchObject({ name: 'Broken', condition: cond('pro') })
  })

  test('data stored before the limits that the database cannot read is repaired by migrate, keeping the readable fields', async () => {
    const p = await env.project()
    const k = p.secretKey
    const a = await env.request('POST', '/contacts', { key: k, body: { email: 'a@example.com', data: { plan: 'pro' } } })
    const b = await env.request('POST', '/contacts', { key: k, body: { email: 'b@example.com', data: { plan: 'free' } } })
    // As the track of issue 18 stored it before the fix: 1,000 levels under `x`, next to readable fields.
    const text = `{"plan":"pro","n":2,"x":${nestText(1000)},"y":${nestText(20)}}`
    await env.store.tx((db) => env.store.exec(sql`UPDATE contacts SET data = ${env.kind === 'pg' ? sql`${text}::jsonb` : text} WHERE id = ${a.body.id}`, db))
    if (env.kind === 'sqlite') {
      // The defect: SQLite's JSON functions give up on the whole project.
      expect((await env.request('GET', '/contacts/fields', { key: k })).status).toBe(500)
      await env.store.tx((db) => env.store.exec(sql`DELETE FROM schema_migrations WHERE name LIKE '%unreadable_contact_data'`, db))
      expect(await migrate(env.store)).toEqual(['0012_unreadable_contact_data'])
      expect(await contactData(env, k, 'a@example.com')).toEqual({ plan: 'pro', n: 2, y: nest(20) })
    }
    const seg = await env.request('POST', '/segments', { key: k, body: { name: 'Pro', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } } })
    expect(seg.status).toBe(201)
    expect(seg.body.memberCount).toBe(1)
    const members = await env.request('GET', `/segments/${seg.body.id}/contacts`, { key: k })
    expect(members.status).toBe(200)
    expect(members.body.data.map((c: { id: string }) => c.id)).toEqual([a.body.id])
    expect((await env.request('POST', `/segments/${seg.body.id}/refresh`, { key: k })).status).toBeLessThan(300)
    expect((await env.request('GET', '/contacts/fields', { key: k })).status).toBe(200)
    expect((await env.request('GET', '/contacts/fields/plan/values', { key: k })).body.values).toContainEqual({ value: 'free', count: 1 })
    expect((await env.request('GET', '/contacts/fields/plan/values', { key: k })).body.distinct).toBe(2)
    const del = await env.request('DELETE', '/contacts/fields/n', { key: k })
    expect(del.status).toBe(200)
    expect(del.body.contactsUpdated).toBe(1)
    expect(await contactData(env, k, 'b@example.com')).toEqual({ plan: 'free' })
    void b
  })
})
