import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { Worker } from '../../../src/jobs/queue'
import { contactJobs } from '../../../src/modules/contacts/jobs'

async function make(env: TestEnv, key: string, n: number, subscribed = true): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) ids.push((await env.request('POST', '/contacts', { key, body: { email: `b${i}-${Math.random().toString(36).slice(2, 6)}@example.com`, subscribed } })).body.id)
  return ids
}

async function runBulk(env: TestEnv, key: string, action: string, contactIds: string[]) {
  const r = await env.request('POST', `/contacts/bulk-${action}`, { key, body: { contactIds } })
  expect(r.status).toBe(202)
  expect(r.body).toEqual({ jobId: expect.any(String), status: 'queued' })
  const queued = await env.request('GET', `/contacts/bulk/${r.body.jobId}`, { key })
  expect(queued.body).toMatchObject({ type: `bulk-${action}`, status: 'queued', progress: 0, total: new Set(contactIds).size, processed: 0, result: null })
  await new Worker(env.deps, contactJobs).drain()
  const done = await env.request('GET', `/contacts/bulk/${r.body.jobId}`, { key })
  expect(done.status).toBe(200)
  expect(done.body).toMatchObject({ status: 'completed', progress: 100 })
  return done.body
}

forEachStore('bulk operations', (env) => {
  test('bulk-unsubscribe / bulk-subscribe change state once and emit one event per change', async () => {
    const p = await env.project()
    const ids = await make(env, p.secretKey, 4)
    const [already] = await make(env, p.secretKey, 1, false)
    const un = await runBulk(env, p.secretKey, 'unsubscribe', [...ids, already, 'missing-id'])
    expect(un.result).toEqual({ created: 0, updated: 4, skipped: 1, failed: 1, errors: [{ row: 6, message: 'Contact missing-id not found' }] })
    const sub = await runBulk(env, p.secretKey, 'subscribe', [ids[0], ids[0], ids[1]])
    expect(sub.result).toMatchObject({ updated: 2, skipped: 0, failed: 0 })
    const rows = await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE project_id = ${p.id} ORDER BY created_at, id`)
    expect(rows.map((r) => r.name)).toEqual([...Array(4).fill('contact.unsubscribed'), 'contact.subscribed', 'contact.subscribed'])
    expect((await env.request('GET', `/contacts/${ids[0]}`, { key: p.secretKey })).body.subscribed).toBe(true)
    expect((await env.request('GET', `/contacts/${ids[2]}`, { key: p.secretKey })).body.subscribed).toBe(false)
  })

  test('bulk-delete deletes only this project\'s contacts', async () => {
    const p = await env.project()
    const q = await env.project()
    const mine = await make(env, p.secretKey, 3)
    const theirs = await make(env, q.secretKey, 1)
    const d = await runBulk(env, p.secretKey, 'delete', [mine[0], mine[1], theirs[0]])
    expect(d.result).toMatchObject({ updated: 2, failed: 1, errors: [{ row: 3, message: `Contact ${theirs[0]} not found` }] })
    expect((await env.request('GET', `/contacts/${mine[0]}`, { key: p.secretKey })).status).toBe(404)
    expect((await env.request('GET', `/contacts/${mine[2]}`, { key: p.secretKey })).status).toBe(200)
    expect((await env.request('GET', `/contacts/${theirs[0]}`, { key: q.secretKey })).status).toBe(200)
  })

  test('limits and errors: 1..1000 ids (422 otherwise); unknown or foreign job 404', async () => {
    const p = await env.project()
    const q = await env.project()
    const tooMany = await env.request('POST', '/contacts/bulk-delete', { key: p.secretKey, body: { contactIds: Array.from({ length: 1001 }, (_, i) => `id${i}`) } })
    expect(tooMany.status).toBe(422)
    expect(tooMany.body.error.errors[0]).toMatchObject({ field: 'contactIds', code: 'too_big' })
    expect((await env.request('POST', '/contacts/bulk-subscribe', { key: p.secretKey, body: { contactIds: [] } })).status).toBe(422)
    expect((await env.request('POST', '/contacts/bulk-subscribe', { key: p.secretKey, body: {} })).status).toBe(422)
    const ok = await env.request('POST', '/contacts/bulk-unsubscribe', { key: p.secretKey, body: { contactIds: Array.from({ length: 1000 }, (_, i) => `id${i}`) } })
    expect(ok.status).toBe(202)
    expect((await env.request('GET', `/contacts/bulk/${ok.body.jobId}`, { key: q.secretKey })).status).toBe(404)
    expect((await env.request('GET', '/contacts/bulk/nope', { key: p.secretKey })).status).toBe(404)
    const imp = await env.request('POST', '/contacts/import', { key: p.secretKey, raw: (() => { const f = new FormData(); f.append('file', new Blob(['email\na@example.com\n']), 'a.csv'); return f })() })
    expect((await env.request('GET', `/contacts/bulk/${imp.body.jobId}`, { key: p.secretKey })).status).toBe(404)
    await new Worker(env.deps, contactJobs).drain()
    const done = await env.request('GET', `/contacts/bulk/${ok.body.jobId}`, { key: p.secretKey })
    expect(done.body.result).toMatchObject({ failed: 1000 })
    expect(done.body.result.errors.length).toBe(1000)
  })
})
