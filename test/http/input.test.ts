import { expect, test } from 'bun:test'
import Plunk from '@plunk/node'
import { forEachStore } from '../helpers/env'
import { ownedProject, verifiedUser } from '../helpers/accounts'
import { buildApp } from '../../src/http/app'

/** Input shapes found by probing every route: query ranges, non-object bodies, the SDK's error message. */
forEachStore('HTTP input checks', (env) => {
  test('limit below 1, negative, fractional, exponent or non-numeric: 400 naming the parameter, on every list', async () => {
    const p = await env.project()
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'f@x.test', data: { plan: 'pro' } } })
    const lists = ['/contacts', '/events', '/activity', '/suppressions', '/contacts/fields/plan/values']
    for (const path of lists) {
      for (const bad of ['0', '-1', '2.5', '1e999', 'abc']) {
        const r = await env.request('GET', `${path}?limit=${bad}`, { key: p.secretKey })
        expect([path, bad, r.status]).toEqual([path, bad, 400])
        expect(r.body.error.code).toBe('BAD_REQUEST')
        expect(r.body.error.errors[0].field).toBe('limit')
        expect(r.body.error.message).toContain('limit: must be a whole number')
      }
      const ok = await env.request('GET', `${path}?limit=1000`, { key: p.secretKey })
      expect([path, ok.status]).toEqual([path, 200])
    }
    const seg = (await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'S', type: 'STATIC' } })).body
    for (const [path, param] of [[`/segments/${seg.id}/contacts?page=0`, 'page'], ['/templates?pageSize=-5', 'pageSize'], ['/activity/stats?days=0', 'days']]) {
      const r = await env.request('GET', path, { key: p.secretKey })
      expect([path, r.status, r.body.error.errors[0].field]).toEqual([path, 400, param])
    }
  })

  test('PATCH with a JSON array, a scalar, null or a text/plain body: 400, and nothing changes (one hook for every JSON route)', async () => {
    const p = await env.project()
    const c = (await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'patch@x.test', data: { a: 1 } } })).body
    const user = await verifiedUser(env)
    const owned = await ownedProject(env, user)
    const seg = (await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'S', type: 'STATIC' } })).body
    const bodies: Array<[string, string]> = [
      ['[{"subscribed":false}]', 'application/json'], ['"x"', 'application/json'], ['null', 'application/json'], ['7', 'application/json'],
      ['{"subscribed":false,"name":"changed"}', 'text/plain'], ['hello', 'text/plain;charset=UTF-8'],
    ]
    const targets: Array<[string, { key?: string; cookie?: string }]> = [
      [`/contacts/${c.id}`, { key: p.secretKey }], [`/segments/${seg.id}`, { key: p.secretKey }], [`/users/@me/projects/${owned.id}`, { cookie: user.cookie }],
    ]
    for (const [path, auth] of targets) {
      for (const [raw, type] of bodies) {
        const r = await env.request('PATCH', path, { ...auth, raw, headers: { 'content-type': type } })
        expect([path, raw, r.status]).toEqual([path, raw, 400])
        expect(r.body.error.message).toContain('JSON object')
      }
    }
    const after = (await env.request('GET', `/contacts/${c.id}`, { key: p.secretKey })).body
    expect(after.subscribed).toBe(true)
    expect(after.data).toEqual({ a: 1 })
    expect((await env.request('GET', `/segments/${seg.id}`, { key: p.secretKey })).body.name).toBe('S')
    const mine = (await env.request('GET', '/users/@me/projects', { cookie: user.cookie })).body as Array<{ id: string; name: string }>
    expect(mine.find((x) => x.id === owned.id)?.name).toBe(owned.name)
    // A JSON object with the right type still works.
    const ok = await env.request('PATCH', `/contacts/${c.id}`, { key: p.secretKey, body: { subscribed: false } })
    expect(ok.status).toBe(200)
    expect(ok.body.subscribed).toBe(false)
  })

  test('a route that takes no body ignores one, as before (an empty text/plain POST is not a 400)', async () => {
    const p = await env.project()
    const seg = (await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'Refresh me', condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@' }] }] } } })).body
    expect(seg.id).toBeString()
    const plain = await env.request('POST', `/segments/${seg.id}/refresh`, { key: p.secretKey })
    expect(plain.status).toBe(200)
    for (const [raw, type] of [['', 'text/plain;charset=UTF-8'], ['hello', 'text/plain'], ['[1]', 'application/json']]) {
      const r = await env.request('POST', `/segments/${seg.id}/refresh`, { key: p.secretKey, raw, headers: { 'content-type': type } })
      expect([raw, r.status]).toEqual([raw, 200])
    }
  })

  test('errors carry a top-level message, which the official SDK shows instead of "Unknown API Error"', async () => {
    const p = await env.project()
    const r = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'not-an-email' } })
    expect(r.status).toBe(422)
    expect(r.body.message).toBe(r.body.error.message)
    const server = buildApp(env.deps).listen({ port: 0, hostname: '127.0.0.1' })
    env.onStop(async () => { await server.stop(true) })
    const plunk = new Plunk(p.secretKey, { baseUrl: `http://127.0.0.1:${server.server?.port}/v1/` })
    const err = await plunk.emails.send({ to: 'someone@dest.test', subject: 's', body: 'b', from: 'nobody@unverified.test' }).then(() => null, (e: Error) => e)
    expect(err?.message).toContain('unverified.test')
    expect(err?.message).not.toContain('Unknown API Error')
  })
})

forEachStore('OpenAPI paths', (env) => {
  test('no path ends with a slash; /segments, /templates and /domains are reached with and without it', async () => {
    const paths = Object.keys((await env.request('GET', '/openapi.json')).body.paths as Record<string, unknown>)
    expect(paths.filter((p) => p.length > 1 && p.endsWith('/'))).toEqual([])
    for (const p of ['/segments', '/templates', '/domains']) expect(paths).toContain(p)
    const key = (await env.project()).secretKey
    for (const p of ['/segments', '/segments/', '/templates', '/templates/']) {
      expect([p, (await env.request('GET', p, { key })).status]).toEqual([p, 200])
    }
    for (const p of ['/domains', '/domains/']) expect([p, (await env.request('POST', p, { key, body: {} })).status]).toEqual([p, 422])
  })
})
