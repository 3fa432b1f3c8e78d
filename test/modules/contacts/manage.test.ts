import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { contactJobs } from '../../../src/modules/contacts/jobs'
import { convertValue } from '../../../src/modules/contacts/fields'
import { fieldNameOf, suggestMapping } from '../../../src/modules/contacts/import'
import { globPattern, regexPattern } from '../../../src/modules/contacts/repo/query'

/** Issue 37: the contacts page's filtered list, bulk actions and export; import mapping; field rename and retype. */

async function seed(env: TestEnv, key: string, rows: Array<{ email: string; subscribed?: boolean; data?: Record<string, unknown> }>) {
  const ids: string[] = []
  for (const r of rows) {
    const res = await env.request('POST', '/contacts', { key, body: r })
    expect(res.status).toBe(201)
    ids.push(res.body.id)
  }
  return ids
}

const drain = (env: TestEnv) => new Worker(env.deps, contactJobs).drain()

function form(csv: string, mapping?: unknown) {
  const f = new FormData()
  f.append('file', new Blob([csv], { type: 'text/csv' }), 'c.csv')
  if (mapping !== undefined) f.append('mapping', typeof mapping === 'string' ? mapping : JSON.stringify(mapping))
  return f
}

const planIs = (value: string) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value }] }] })

test('search patterns fold case and accents', () => {
  expect(globPattern('mül')).toContain('[')
  const re = new RegExp(regexPattern('muller'))
  expect(re.test('Herr Müller')).toBe(true)
  expect(re.test('MÜLLER')).toBe(true)
  expect(re.test('Mueller')).toBe(false)
  expect(new RegExp(regexPattern('a.b')).test('axb')).toBe(false)
  expect(new RegExp(regexPattern('a.b')).test('A.B')).toBe(true)
})

test('import mapping names and retype conversions', () => {
  expect(fieldNameOf('Signup Date')).toBe('signup_date')
  expect(fieldNameOf('Name')).toBe('name')
  expect(fieldNameOf('firstName')).toBe('firstName')
  const m = suggestMapping(['Email Address', 'Plan', 'Signup Date', 'Subscribed', 'createdAt'], [{ name: 'plan', type: 'string' }])
  expect(m).toEqual([
    { column: 'Email Address', to: 'email' },
    { column: 'Plan', to: 'field', field: 'plan', type: 'string' },
    { column: 'Signup Date', to: 'field', field: 'signup_date', type: 'auto' },
    { column: 'Subscribed', to: 'subscribed' },
    { column: 'createdAt', to: 'ignore' },
  ])
  expect(convertValue('42', 'number')).toBe(42)
  expect(convertValue('abc', 'number')).toBeUndefined()
  expect(convertValue('yes', 'boolean')).toBe(true)
  expect(convertValue(7, 'string')).toBe('7')
  expect(convertValue('2024-05-01', 'date')).toBe('2024-05-01')
  expect(convertValue('soon', 'date')).toBeUndefined()
})

forEachStore('contacts page API (issue 37)', (env) => {
  test('POST /contacts/query: search over email and text fields (case, accents), condition, state, pages', async () => {
    const p = await env.project()
    await seed(env, p.secretKey, [
      { email: 'anna@example.com', data: { name: 'Müller', plan: 'pro' } },
      { email: 'bob@mueller.example', data: { name: 'Bob', plan: 'free' } },
      { email: 'carl@example.com', subscribed: false, data: { name: 'Carl MÜLLER', plan: 'pro', age: 40 } },
      { email: 'dora@example.com', data: { plan: 'pro', note: 'nothing "ÜBER" here', greeting: 'ΣΟΦΊΑ' } },
    ])
    const emails = (r: { body: { data: Array<{ email: string }> } }) => r.body.data.map((c) => c.email).sort()
    const s = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'Müller' } })
    expect(s.status).toBe(200)
    expect(emails(s)).toEqual(['anna@example.com', 'carl@example.com'])
    expect(s.body.total).toBe(2)
    expect(emails(await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'muller' } }))).toEqual(['anna@example.com', 'carl@example.com'])
    expect(emails(await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'MUELLER' } }))).toEqual(['bob@mueller.example'])
    // A term JSON escapes (a quote) is matched on the values, not on the stored text.
    expect(emails(await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: '"uber"' } }))).toEqual(['dora@example.com'])
    // Other scripts fold their case (not their accents).
    expect(emails(await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'σοφ' } }))).toEqual(['dora@example.com'])
    // Numbers are not text: 40 does not match "40" in a text search, the email does not contain it either.
    expect((await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: '40' } })).body.total).toBe(0)
    const f = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { condition: planIs('pro'), subscribed: true } })
    expect(emails(f)).toEqual(['anna@example.com', 'dora@example.com'])
    // Pages: 1 row at a time, in email order, every row once.
    const seen: string[] = []
    let cursor: string | undefined
    for (let i = 0; i < 5; i++) {
      const r = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { condition: planIs('pro'), limit: 1, sort: 'email', dir: 'asc', ...(cursor ? { cursor } : {}) } })
      seen.push(...r.body.data.map((c: { email: string }) => c.email))
      if (!r.body.cursor) break
      cursor = r.body.cursor
    }
    expect(seen).toEqual(['anna@example.com', 'carl@example.com', 'dora@example.com'])
    expect((await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { search: 'müller', subscribed: false } })).body).toEqual({ total: 1, estimated: false })
    // Errors: a bad condition names its path; a bad cursor 400; limit out of range 422.
    const bad = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { condition: { groups: [{ filters: [{ field: 'data.plan', operator: 'isAbout', value: 1 }] }] } } })
    expect(bad.status).toBe(422)
    expect(bad.body.error.errors[0].field).toBe('condition.groups.0.filters.0.operator')
    expect((await env.request('POST', '/contacts/query', { key: p.secretKey, body: { cursor: 'nope' } })).status).toBe(400)
    expect((await env.request('POST', '/contacts/query', { key: p.secretKey, body: { limit: 1000 } })).status).toBe(422)
  })

  test('POST /contacts/export: CSV of the filtered list only', async () => {
    const p = await env.project()
    await seed(env, p.secretKey, [{ email: 'x1@example.com', data: { plan: 'pro' } }, { email: 'x2@example.com', data: { plan: 'free' } }])
    const r = await env.request('POST', '/contacts/export', { key: p.secretKey, body: { condition: planIs('pro') } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('text/csv')
    const lines = r.text.trim().split('\n')
    expect(lines[0]).toBe('id,email,subscribed,createdAt,updatedAt,plan')
    expect(lines.length).toBe(2)
    expect(lines[1]).toContain('x1@example.com')
  })

  test('POST /contacts/bulk: every match of a filter, a selection, segments and set field', async () => {
    const p = await env.project()
    const ids = await seed(env, p.secretKey, [
      { email: 'm1@example.com', data: { plan: 'pro' } }, { email: 'm2@example.com', data: { plan: 'pro' } }, { email: 'm3@example.com', data: { plan: 'free' } },
    ])
    const un = await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'unsubscribe', filter: { condition: planIs('pro') } } })
    expect(un.status).toBe(202)
    expect(un.body).toMatchObject({ status: 'queued', total: 2 })
    await drain(env)
    const job = await env.request('GET', `/contacts/bulk/${un.body.jobId}`, { key: p.secretKey })
    expect(job.body).toMatchObject({ type: 'bulk-unsubscribe', status: 'completed', progress: 100, result: { updated: 2, skipped: 0, failed: 0 } })
    expect((await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { subscribed: false } })).body.total).toBe(2)

    const seg = await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'Picked', type: 'STATIC' } })
    const add = await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'addToSegment', segmentId: seg.body.id, contactIds: [ids[0], ids[2]] } })
    expect(add.status).toBe(202)
    await drain(env)
    expect((await env.request('GET', `/segments/${seg.body.id}`, { key: p.secretKey })).body.memberCount).toBe(2)
    await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'removeFromSegment', segmentId: seg.body.id, filter: { search: 'm3@' } } })
    await drain(env)
    expect((await env.request('GET', `/segments/${seg.body.id}`, { key: p.secretKey })).body.memberCount).toBe(1)

    const set = await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'setField', field: 'tier', value: 'gold', filter: {} } })
    expect(set.body.total).toBe(3)
    await drain(env)
    expect((await env.request('GET', `/contacts/${ids[1]}`, { key: p.secretKey })).body.data).toEqual({ plan: 'pro', tier: 'gold' })
    await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'setField', field: 'tier', value: null, contactIds: [ids[1]] } })
    await drain(env)
    expect((await env.request('GET', `/contacts/${ids[1]}`, { key: p.secretKey })).body.data).toEqual({ plan: 'pro' })

    const del = await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'delete', filter: { condition: planIs('free') } } })
    await drain(env)
    expect((await env.request('GET', `/contacts/bulk/${del.body.jobId}`, { key: p.secretKey })).body.result.updated).toBe(1)
    expect((await env.request('GET', `/contacts/${ids[2]}`, { key: p.secretKey })).status).toBe(404)
  })

  test('POST /contacts/bulk errors: both or neither target, missing arguments, DYNAMIC segment, reserved field', async () => {
    const p = await env.project()
    const [id] = await seed(env, p.secretKey, [{ email: 'e1@example.com' }])
    const req = (body: unknown) => env.request('POST', '/contacts/bulk', { key: p.secretKey, body })
    expect((await req({ action: 'subscribe' })).status).toBe(422)
    expect((await req({ action: 'subscribe', contactIds: [id], filter: {} })).status).toBe(422)
    expect((await req({ action: 'explode', contactIds: [id] })).status).toBe(422)
    const noSeg = await req({ action: 'addToSegment', contactIds: [id] })
    expect(noSeg.status).toBe(422)
    expect(noSeg.body.error.errors[0].field).toBe('segmentId')
    const dyn = await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'Dyn', condition: planIs('x') } })
    expect((await req({ action: 'addToSegment', segmentId: dyn.body.id, contactIds: [id] })).status).toBe(400)
    expect((await req({ action: 'setField', field: 'email', value: 'x', contactIds: [id] })).status).toBe(422)
    expect((await req({ action: 'setField', field: 'plan', contactIds: [id] })).status).toBe(422)
    const badFilter = await req({ action: 'delete', filter: { condition: { groups: [{ filters: [{ field: 'nope', operator: 'equals', value: 1 }] }] } } })
    expect(badFilter.status).toBe(422)
    expect(badFilter.body.error.errors[0].field).toStartWith('filter.condition.groups.0')
  })

  test('security: no key 401, public key 401, another project\'s segment and jobs 404, another project\'s contacts untouched', async () => {
    const p = await env.project()
    const q = await env.project()
    const [mine] = await seed(env, p.secretKey, [{ email: 's1@example.com', data: { name: 'Müller' } }])
    const [theirs] = await seed(env, q.secretKey, [{ email: 's2@example.com', data: { name: 'Müller' } }])
    const routes: Array<[string, string, unknown]> = [
      ['POST', '/contacts/query', {}], ['POST', '/contacts/query/count', {}], ['POST', '/contacts/export', {}],
      ['POST', '/contacts/bulk', { action: 'subscribe', contactIds: [mine] }],
      ['POST', '/contacts/fields/name/rename', { to: 'fullName' }], ['POST', '/contacts/fields/name/retype', { type: 'string' }],
    ]
    for (const [method, path, body] of routes) {
      expect((await env.request(method, path, { body })).status).toBe(401)
      const pub = await env.request(method, path, { key: p.publicKey, body })
      expect(pub.status).toBe(401)
      expect(pub.body.error.code).toBe('INVALID_API_KEY')
    }
    expect((await env.request('POST', '/contacts/import/preview', { raw: form('email\na@example.com\n') })).status).toBe(401)
    expect((await env.request('POST', '/contacts/import/preview', { key: p.publicKey, raw: form('email\na@example.com\n') })).status).toBe(401)
    // Search and filters see only the project's contacts.
    const s = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'müller' } })
    expect(s.body.data.map((c: { id: string }) => c.id)).toEqual([mine])
    const segQ = await env.request('POST', '/segments', { key: q.secretKey, body: { name: 'Theirs', type: 'STATIC' } })
    expect((await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'addToSegment', segmentId: segQ.body.id, contactIds: [mine] } })).status).toBe(404)
    const del = await env.request('POST', '/contacts/bulk', { key: p.secretKey, body: { action: 'delete', contactIds: [theirs] } })
    await drain(env)
    expect((await env.request('GET', `/contacts/bulk/${del.body.jobId}`, { key: p.secretKey })).body.result).toMatchObject({ updated: 0, failed: 1 })
    expect((await env.request('GET', `/contacts/bulk/${del.body.jobId}`, { key: q.secretKey })).status).toBe(404)
    expect((await env.request('GET', `/contacts/${theirs}`, { key: q.secretKey })).status).toBe(200)
    // Rename and retype act on the project's contacts only.
    expect((await env.request('POST', '/contacts/fields/name/rename', { key: p.secretKey, body: { to: 'fullName' } })).status).toBe(200)
    expect((await env.request('GET', `/contacts/${theirs}`, { key: q.secretKey })).body.data).toEqual({ name: 'Müller' })
  })

  test('fields: rename moves values (409 onto a used name), retype counts misfits first and converts the rest', async () => {
    const p = await env.project()
    const ids = await seed(env, p.secretKey, [
      { email: 'f1@example.com', data: { Plan: 'pro', score: '12' } },
      { email: 'f2@example.com', data: { Plan: 'free', score: 'high' } },
      { email: 'f3@example.com', data: { plan: 'old', score: 7 } },
    ])
    const clash = await env.request('POST', '/contacts/fields/Plan/rename', { key: p.secretKey, body: { to: 'plan' } })
    expect(clash.status).toBe(409)
    await env.request('DELETE', '/contacts/fields/plan', { key: p.secretKey })
    const r = await env.request('POST', '/contacts/fields/Plan/rename', { key: p.secretKey, body: { to: 'plan' } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ field: 'plan', contacts: 2, jobId: null, changed: 2 })
    expect((await env.request('GET', `/contacts/${ids[0]}`, { key: p.secretKey })).body.data).toEqual({ plan: 'pro', score: '12' })
    expect((await env.request('POST', '/contacts/fields/Plan/rename', { key: p.secretKey, body: { to: 'x' } })).status).toBe(404)
    expect((await env.request('POST', '/contacts/fields/plan/rename', { key: p.secretKey, body: { to: 'email' } })).status).toBe(422)
    expect((await env.request('POST', '/contacts/fields/plan/rename', { key: p.secretKey, body: { to: 'plan' } })).status).toBe(422)
    expect((await env.request('POST', '/contacts/fields/plan/rename', { key: p.secretKey, body: {} })).status).toBe(422)

    const dry = await env.request('POST', '/contacts/fields/score/retype', { key: p.secretKey, body: { type: 'number', dryRun: true } })
    expect(dry.status).toBe(200)
    expect(dry.body).toMatchObject({ field: 'score', type: 'number', contacts: 3, fit: 2, misfit: 1, examples: ['high'], dryRun: true, changed: 0 })
    expect((await env.request('GET', `/contacts/${ids[0]}`, { key: p.secretKey })).body.data.score).toBe('12')
    const done = await env.request('POST', '/contacts/fields/score/retype', { key: p.secretKey, body: { type: 'number' } })
    expect(done.body).toMatchObject({ fit: 2, misfit: 1, changed: 1, jobId: null })
    expect((await env.request('GET', `/contacts/${ids[0]}`, { key: p.secretKey })).body.data.score).toBe(12)
    expect((await env.request('GET', `/contacts/${ids[1]}`, { key: p.secretKey })).body.data.score).toBe('high')
    expect((await env.request('POST', '/contacts/fields/score/retype', { key: p.secretKey, body: { type: 'float' } })).status).toBe(422)
    expect((await env.request('POST', '/contacts/fields/nothing/retype', { key: p.secretKey, body: { type: 'number' } })).status).toBe(404)
  })

  test('import: preview with the automatic mapping, a mapping with types, per-row errors', async () => {
    const p = await env.project()
    await seed(env, p.secretKey, [{ email: 'old@example.com', data: { plan: 'free' } }])
    const csv = 'Email Address,Plan,Signup Date,Age,Notes\nann@example.com,Pro,2024-01-02,41,hi\nbad-email,Pro,2024-01-03,x,\nbo@example.com,Free,someday,33,skip me\n'
    const pre = await env.request('POST', '/contacts/import/preview', { key: p.secretKey, raw: form(csv) })
    expect(pre.status).toBe(200)
    expect(pre.body.columns).toEqual([
      { column: 'Email Address', to: 'email', existing: false, misfit: 0 },
      { column: 'Plan', to: 'field', field: 'plan', type: 'string', existing: true, misfit: 0 },
      { column: 'Signup Date', to: 'field', field: 'signup_date', type: 'auto', existing: false, misfit: 0 },
      { column: 'Age', to: 'field', field: 'age', type: 'auto', existing: false, misfit: 0 },
      { column: 'Notes', to: 'field', field: 'notes', type: 'auto', existing: false, misfit: 0 },
    ])
    expect(pre.body.rows.length).toBe(3)
    expect(pre.body).toMatchObject({ totalRows: 3, failing: 1, errors: [{ row: 3, message: 'Invalid email "bad-email"' }] })
    const mapping = [
      { column: 'Signup Date', to: 'field', field: 'signedUp', type: 'date' },
      { column: 'Age', to: 'field', field: 'age', type: 'number' },
      { column: 'Notes', to: 'ignore' },
    ]
    const typed = await env.request('POST', '/contacts/import/preview', { key: p.secretKey, raw: form(csv, mapping) })
    expect(typed.body.columns[2]).toMatchObject({ field: 'signedUp', type: 'date', misfit: 1 })
    expect(typed.body.columns[3]).toMatchObject({ field: 'age', type: 'number', misfit: 1 })
    expect(typed.body.failing).toBe(2)
    const q = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form(csv, mapping) })
    expect(q.status).toBe(202)
    await drain(env)
    const job = await env.request('GET', `/contacts/import/${q.body.jobId}`, { key: p.secretKey })
    expect(job.body.result).toMatchObject({ created: 1, failed: 2 })
    expect(job.body.result.errors).toEqual([
      { row: 3, message: 'Invalid email "bad-email"' },
      { row: 4, message: 'Column signedUp: "someday" is not a date' },
    ])
    const ann = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { search: 'ann@' } })
    expect(ann.body.data[0].data).toEqual({ plan: 'Pro', signedUp: '2024-01-02', age: 41 })
  })

  test('import mapping errors: unknown column, no email, bad JSON, reserved field', async () => {
    const p = await env.project()
    const csv = 'mail,x\na@example.com,1\n'
    const unknown = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form(csv, [{ column: 'nope', to: 'ignore' }]) })
    expect(unknown.status).toBe(422)
    expect(unknown.body.error.errors[0]).toMatchObject({ field: 'mapping.0.column', code: 'unknown_column' })
    const noEmail = await env.request('POST', '/contacts/import/preview', { key: p.secretKey, raw: form(csv, [{ column: 'mail', to: 'ignore' }]) })
    expect(noEmail.status).toBe(422)
    expect(noEmail.body.error.errors[0]).toMatchObject({ field: 'file', code: 'missing_email_column' })
    expect((await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form(csv, '{') })).body.error.errors[0].field).toBe('mapping')
    const badTo = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form(csv, [{ column: 'x', to: 'somewhere' }]) })
    expect(badTo.status).toBe(422)
    expect(badTo.body.error.errors[0].field).toBe('mapping.0.to')
    const reserved = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form(csv, [{ column: 'x', to: 'field', field: 'email' }]) })
    expect(reserved.body.error.errors[0]).toMatchObject({ field: 'mapping.0.field', code: 'reserved_field' })
  })
})
