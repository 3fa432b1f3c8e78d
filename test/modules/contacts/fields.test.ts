import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { registerUsageProvider } from '../../../src/modules/contacts/usage'

async function post(env: TestEnv, key: string, email: string, data: Record<string, unknown>, subscribed = true) {
  const r = await env.request('POST', '/contacts', { key, body: { email, data, subscribed } })
  expect(r.status).toBeLessThan(300)
  return r.body
}

forEachStore('custom fields', (env) => {
  test('GET /contacts/fields: standard fields, inferred types and coverage', async () => {
    const p = await env.project()
    await post(env, p.secretKey, 'a@example.com', { plan: 'pro', seats: 3, vip: true, joined: '2024-01-02', meta: { a: 1 }, tags: ['x'] })
    await post(env, p.secretKey, 'b@example.com', { plan: 'free', seats: 1.5, joined: '2024-01-02T10:00:00.000Z' })
    await post(env, p.secretKey, 'c@example.com', { plan: 'free', seats: 'many' })
    await post(env, p.secretKey, 'd@example.com', {})
    const r = await env.request('GET', '/contacts/fields', { key: p.secretKey })
    expect(r.status).toBe(200)
    expect(r.body.totalContacts).toBe(4)
    const byName = Object.fromEntries(r.body.fields.map((f: { name: string }) => [f.name, f]))
    expect(r.body.fields.slice(0, 4).map((f: { name: string }) => f.name)).toEqual(['email', 'subscribed', 'createdAt', 'updatedAt'])
    expect(byName.email).toMatchObject({ standard: true, type: 'string', coverage: 100, count: 4 })
    expect(byName.plan).toMatchObject({ standard: false, type: 'string', count: 3, coverage: 75 })
    expect(byName.seats).toMatchObject({ type: 'mixed', types: { number: 2, string: 1 }, coverage: 75 })
    expect(byName.vip).toMatchObject({ type: 'boolean', coverage: 25 })
    expect(byName.joined).toMatchObject({ type: 'date', count: 2, coverage: 50 })
    expect(byName.meta.type).toBe('object')
    expect(byName.tags.type).toBe('array')
    const empty = await env.project()
    const e = await env.request('GET', '/contacts/fields', { key: empty.secretKey })
    expect(e.body.totalContacts).toBe(0)
    expect(e.body.fields.length).toBe(4)
    expect(e.body.fields[0].coverage).toBe(0)
  })

  test('GET /contacts/fields/:field/values: distinct values, typed, most frequent first; search; 404 unknown', async () => {
    const p = await env.project()
    await post(env, p.secretKey, 'a@example.com', { plan: 'pro', n: 1, flag: true })
    await post(env, p.secretKey, 'b@example.com', { plan: 'free', n: 1, flag: false }, false)
    await post(env, p.secretKey, 'c@example.com', { plan: 'free', n: 2, flag: true })
    const r = await env.request('GET', '/contacts/fields/plan/values', { key: p.secretKey })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ field: 'plan', values: [{ value: 'free', count: 2 }, { value: 'pro', count: 1 }], distinct: 2 })
    expect((await env.request('GET', '/contacts/fields/n/values', { key: p.secretKey })).body.values).toEqual([{ value: 1, count: 2 }, { value: 2, count: 1 }])
    expect((await env.request('GET', '/contacts/fields/flag/values', { key: p.secretKey })).body.values).toEqual([{ value: true, count: 2 }, { value: false, count: 1 }])
    expect((await env.request('GET', '/contacts/fields/plan/values?search=PR', { key: p.secretKey })).body.values).toEqual([{ value: 'pro', count: 1 }])
    expect((await env.request('GET', '/contacts/fields/plan/values?limit=1', { key: p.secretKey })).body).toMatchObject({ values: [{ value: 'free', count: 2 }], distinct: 2 })
    expect((await env.request('GET', '/contacts/fields/subscribed/values', { key: p.secretKey })).body.values).toEqual([{ value: true, count: 2 }, { value: false, count: 1 }])
    const unknown = await env.request('GET', '/contacts/fields/nothing/values', { key: p.secretKey })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe('NOT_FOUND')
    expect((await env.request('GET', '/contacts/fields/email/values', { key: p.secretKey })).status).toBe(422)
    const q = await env.project()
    expect((await env.request('GET', '/contacts/fields/plan/values', { key: q.secretKey })).status).toBe(404)
  })

  test('GET /contacts/fields/:field/usage: empty without providers, filled by registered providers, 404 unknown', async () => {
    const p = await env.project()
    await post(env, p.secretKey, 'a@example.com', { plan: 'pro' })
    const u = await env.request('GET', '/contacts/fields/plan/usage', { key: p.secretKey })
    expect(u.status).toBe(200)
    expect(u.body).toEqual({ field: 'plan', inUse: false, segments: [], campaigns: [], workflows: [] })
    const off = registerUsageProvider({ kind: 'segments', async fieldUsage(ctx, field) { return ctx.projectId === p.id && field === 'plan' ? [{ id: 's1', name: 'Pro users', where: 'condition' }] : [] } })
    try {
      const u2 = await env.request('GET', '/contacts/fields/plan/usage', { key: p.secretKey })
      expect(u2.body).toMatchObject({ inUse: true, segments: [{ id: 's1', name: 'Pro users', where: 'condition' }] })
    } finally { off() }
    const unknown = await env.request('GET', '/contacts/fields/nothing/usage', { key: p.secretKey })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe('NOT_FOUND')
    const standard = await env.request('GET', '/contacts/fields/email/usage', { key: p.secretKey })
    expect(standard.status).toBe(200)
    expect(standard.body).toEqual({ field: 'email', inUse: false, segments: [], campaigns: [], workflows: [] })
  })

  test('DELETE /contacts/fields/:field removes it from every contact of the project only', async () => {
    const p = await env.project()
    const q = await env.project()
    const a = await post(env, p.secretKey, 'a@example.com', { plan: 'pro', keep: 1 })
    await post(env, p.secretKey, 'b@example.com', { plan: 'free' })
    await post(env, p.secretKey, 'c@example.com', { other: 1 })
    await post(env, q.secretKey, 'a@example.com', { plan: 'pro' })
    const d = await env.request('DELETE', '/contacts/fields/plan', { key: p.secretKey })
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ field: 'plan', deleted: true, contactsUpdated: 2 })
    expect((await env.request('GET', `/contacts/${a.id}`, { key: p.secretKey })).body.data).toEqual({ keep: 1 })
    expect((await env.request('GET', '/contacts/fields/plan/values', { key: q.secretKey })).body.values).toEqual([{ value: 'pro', count: 1 }])
    expect((await env.request('DELETE', '/contacts/fields/plan', { key: p.secretKey })).status).toBe(404)
    const std = await env.request('DELETE', '/contacts/fields/email', { key: p.secretKey })
    expect(std.status).toBe(422)
    // keys with characters that need quoting in a JSON path
    await post(env, p.secretKey, 'd@example.com', { 'odd."key': 1, 'dot.key': 2, 'x': 3 })
    expect((await env.request('DELETE', `/contacts/fields/${encodeURIComponent('odd."key')}`, { key: p.secretKey })).body.contactsUpdated).toBe(1)
    expect((await env.request('DELETE', '/contacts/fields/dot.key', { key: p.secretKey })).body.contactsUpdated).toBe(1)
    const dd = await env.request('POST', '/contacts/lookup', { key: p.secretKey, body: { emails: ['d@example.com'] } })
    expect((await env.request('GET', `/contacts/${dd.body.results[0].id}`, { key: p.secretKey })).body.data).toEqual({ x: 3 })
  })
})
