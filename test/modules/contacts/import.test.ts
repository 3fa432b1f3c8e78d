import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { contactJobs } from '../../../src/modules/contacts/jobs'
import { typedValue } from '../../../src/modules/contacts/import'
import { buildApp } from '../../../src/http/app'

function form(csv: string | Uint8Array, name = 'contacts.csv') {
  const f = new FormData()
  f.append('file', new Blob([csv as BlobPart], { type: 'text/csv' }), name)
  return f
}

async function importFile(env: TestEnv, key: string, csv: string | Uint8Array) {
  const r = await env.request('POST', '/contacts/import', { key, raw: form(csv) })
  expect(r.status).toBe(202)
  expect(r.body.status).toBe('queued')
  const queued = await env.request('GET', `/contacts/import/${r.body.jobId}`, { key })
  expect(queued.body).toMatchObject({ id: r.body.jobId, type: 'import', status: 'queued', progress: 0, result: null, finishedAt: null })
  await new Worker(env.deps, contactJobs).drain()
  const done = await env.request('GET', `/contacts/import/${r.body.jobId}`, { key })
  expect(done.status).toBe(200)
  return done.body
}

async function contactByEmail(env: TestEnv, key: string, email: string) {
  const l = await env.request('POST', '/contacts/lookup', { key, body: { emails: [email] } })
  return (await env.request('GET', `/contacts/${l.body.results[0].id}`, { key })).body
}

test('typed CSV values', () => {
  expect(typedValue('42')).toBe(42)
  expect(typedValue('-3.25')).toBe(-3.25)
  expect(typedValue('007')).toBe('007')
  expect(typedValue('12345678901234567890')).toBe('12345678901234567890')
  expect(typedValue('TRUE')).toBe(true)
  expect(typedValue('false')).toBe(false)
  expect(typedValue('2024-03-01')).toBe('2024-03-01')
  expect(typedValue('2024-03-01 10:00:00+02:00')).toBe('2024-03-01T08:00:00.000Z')
  expect(typedValue('+15551234567')).toBe('+15551234567')
  expect(typedValue(' hello ')).toBe('hello')
  expect(typedValue('')).toBe('')
  expect(typedValue('{"a":[1,2]}')).toEqual({ a: [1, 2] })
  expect(typedValue('[1,"x"]')).toEqual([1, 'x'])
  expect(typedValue('{not json}')).toBe('{not json}')
})

forEachStore('CSV import', (env) => {
  test('imports typed values, reports bad rows by row number, and re-importing changes nothing', async () => {
    const p = await env.project()
    const csv = `${[
      'Email,First Name,age,vip,joined,subscribed,score,id',
      'ann@example.com,Ann,34,true,2024-01-15,true,1.5,x1',
      'not-an-email,Bad,1,false,,true,,',
      'BOB@example.com ,Bob,,false,2024-02-01T10:00:00Z,no,,',
      ',Nobody,,,,,,',
      'carl@example.com,"Carl, Jr.",007,,,maybe,,',
      '',
      'dora@example.com,Dora,41,,,,,',
      'ann@example.com,Ann B.,35,,,,,',
    ].join('\n')}\n`
    const job = await importFile(env, p.secretKey, csv)
    expect(job).toMatchObject({ status: 'completed', progress: 100, total: 7, processed: 7 })
    expect(job.result).toEqual({
      created: 3, updated: 1, skipped: 0, failed: 3,
      errors: [
        { row: 3, message: 'Invalid email "not-an-email"' },
        { row: 5, message: 'Missing email' },
        { row: 6, message: 'Invalid subscribed value "maybe": use true or false' },
      ],
    })
    expect(typeof job.finishedAt).toBe('string')
    const ann = await contactByEmail(env, p.secretKey, 'ann@example.com')
    expect(ann.data).toEqual({ first_name: 'Ann B.', age: 35, vip: true, joined: '2024-01-15', score: 1.5 })
    expect(ann.subscribed).toBe(true)
    const bob = await contactByEmail(env, p.secretKey, 'bob@example.com')
    expect(bob.subscribed).toBe(false)
    expect(bob.data).toEqual({ first_name: 'Bob', vip: false, joined: '2024-02-01T10:00:00.000Z' })
    expect((await contactByEmail(env, p.secretKey, 'dora@example.com')).subscribed).toBe(true)

    const before = await env.store.rows<{ id: string; updated_at: unknown; data: unknown }>(sql`SELECT id, updated_at, data FROM contacts WHERE project_id = ${p.id} ORDER BY id`)
    const eventsBefore = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id}`)
    const again = await importFile(env, p.secretKey, csv)
    expect(again.result).toMatchObject({ created: 0, updated: 0, skipped: 4, failed: 3 })
    // Nothing was written: same rows, same data, same updated_at (Ann's two rows apply as one upsert).
    const after = await env.store.rows<{ id: string; updated_at: unknown; data: unknown }>(sql`SELECT id, updated_at, data FROM contacts WHERE project_id = ${p.id} ORDER BY id`)
    expect(after).toEqual(before)
    const eventsAfter = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE project_id = ${p.id}`)
    expect(Number(eventsAfter[0].n)).toBe(Number(eventsBefore[0].n))
  }, 60_000)

  test('a file without duplicate rows re-imports with every row skipped', async () => {
    const p = await env.project()
    const csv = 'email,plan\na@example.com,pro\nb@example.com,free\n'
    expect((await importFile(env, p.secretKey, csv)).result).toMatchObject({ created: 2, updated: 0, skipped: 0, failed: 0 })
    expect((await importFile(env, p.secretKey, csv)).result).toMatchObject({ created: 0, updated: 0, skipped: 2, failed: 0 })
  })

  test('subscription changes by import emit events once; new contacts default to subscribed', async () => {
    const p = await env.project()
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'x@example.com' } })
    await importFile(env, p.secretKey, 'email,subscribed\nx@example.com,false\ny@example.com,\n')
    await importFile(env, p.secretKey, 'email,subscribed\nx@example.com,false\n')
    const rows = await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${p.id}`)
    expect(rows.map((r) => r.name)).toEqual(['contact.unsubscribed'])
    expect((await contactByEmail(env, p.secretKey, 'y@example.com')).subscribed).toBe(true)
  })

  test('a ~5 MB CSV with bad rows mixed in imports every good row; the report names the bad ones', async () => {
    const p = await env.project()
    const lines = ['email,first_name,last_name,company,plan,seats,active,signup_date,city,notes']
    const bad: number[] = []
    let good = 0
    let size = lines[0].length
    const add = (line: string) => { lines.push(line); size += line.length + 1 }
    for (let i = 0; size < 4_900_000; i++) {
      const row = i + 2
      if (i % 997 === 13) { add(`broken-${i}-at-example.com,X,Y,Z,pro,1,true,2024-01-01,Town,bad`); bad.push(row); continue }
      add(`user${i}@example${i % 50}.com,First${i},Last${i},Company ${i % 300},${i % 2 ? 'pro' : 'free'},${i % 40},${i % 3 ? 'true' : 'false'},2023-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')},City ${i % 77},"some notes, with a comma ${i}"`)
      good++
    }
    const csv = lines.join('\n')
    expect(csv.length).toBeGreaterThan(4_800_000)
    expect(csv.length).toBeLessThanOrEqual(5 * 1024 * 1024)
    const job = await importFile(env, p.secretKey, csv)
    expect(job.status).toBe('completed')
    expect(job.result.created).toBe(good)
    expect(job.result.failed).toBe(bad.length)
    expect(job.result.errors.map((e: { row: number }) => e.row)).toEqual(bad)
    expect(job.result.errors[0].message).toContain('Invalid email')
    const [n] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts WHERE project_id = ${p.id}`)
    expect(Number(n.n)).toBe(good)
    const sample = await contactByEmail(env, p.secretKey, 'user1001@example1.com')
    expect(sample.data).toMatchObject({ first_name: 'First1001', seats: 1001 % 40, active: true, plan: 'pro', notes: 'some notes, with a comma 1001' })
    // the upload is removed once imported
    const [u] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contact_imports WHERE project_id = ${p.id}`)
    expect(Number(u.n)).toBe(0)
  }, 180_000)

  test('errors: over 5 MB is 413, no email column or empty file is 422, no file is 422', async () => {
    const p = await env.project()
    const big = new Uint8Array(5 * 1024 * 1024 + 10).fill(97)
    big.set(new TextEncoder().encode('email\n'))
    const r = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form(big) })
    expect(r.status).toBe(413)
    expect(r.body.error.code).toBe('PAYLOAD_TOO_LARGE')
    const noEmail = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form('name,plan\nann,pro\n') })
    expect(noEmail.status).toBe(422)
    expect(noEmail.body.error.errors[0]).toMatchObject({ field: 'file', code: 'missing_email_column' })
    const empty = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form('') })
    expect(empty.status).toBe(422)
    const nofile = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: new FormData() })
    expect(nofile.status).toBe(422)
    const [u] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contact_imports WHERE project_id = ${p.id}`)
    expect(Number(u.n)).toBe(0)
  })

  test('over a real listener, a CSV well over 5 MB is refused unread with 413, not 400', async () => {
    const p = await env.project()
    const server = buildApp(env.deps).listen({ port: 0, hostname: '127.0.0.1' })
    env.onStop(async () => { await server.stop(true) })
    const big = new Uint8Array(6 * 1024 * 1024).fill(97)
    big.set(new TextEncoder().encode('email\n'))
    const r = await fetch(`http://127.0.0.1:${server.server?.port}/contacts/import`, { method: 'POST', body: form(big), headers: { authorization: `Bearer ${p.secretKey}` } })
    expect(r.status).toBe(413)
    const body = await r.json() as { error: { code: string; message: string } }
    expect(body.error.code).toBe('PAYLOAD_TOO_LARGE')
    expect(body.error.message).toContain('5 MB')
  })

  test('GET /contacts/import/:jobId: 404 for unknown, foreign or non-import jobs', async () => {
    const p = await env.project()
    const q = await env.project()
    const r = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: form('email\na@example.com\n') })
    expect((await env.request('GET', `/contacts/import/${r.body.jobId}`, { key: q.secretKey })).status).toBe(404)
    expect((await env.request('GET', '/contacts/import/nope', { key: p.secretKey })).status).toBe(404)
    const b = await env.request('POST', '/contacts/bulk-delete', { key: p.secretKey, body: { contactIds: ['x'] } })
    expect((await env.request('GET', `/contacts/import/${b.body.jobId}`, { key: p.secretKey })).status).toBe(404)
    await new Worker(env.deps, contactJobs).drain()
  })
})
