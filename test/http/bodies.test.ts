import { expect, test } from 'bun:test'
import { forEachStore, type TestEnv } from '../helpers/env'
import { verifiedUser } from '../helpers/accounts'
import { buildApp } from '../../src/http/app'
import { bodyCaps, CONTENT_BODY_CAP, DEFAULT_BODY_CAP, hasOwnParser, NO_BODY_CAP } from '../../src/http/bodies'

/** Issue 35, item 8: the key before the body; every body capped by route, chunked or not (README, Request bodies). */

const MAX = 2 * 1024 * 1024
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

interface Route { method: string; path: string; hooks: Record<string, unknown> }
type Auth = 'key' | 'session' | 'none'

function authOf(r: Route): Auth {
  const security = JSON.stringify((r.hooks.detail as { security?: unknown } | undefined)?.security ?? [])
  if (security.includes('secretKey') || security.includes('publicKey')) return 'key'
  if (security.includes('session')) return 'session'
  return 'none'
}

/** The routes of the table that can carry a body, with a concrete path (every parameter an unknown id). */
function bodyRoutes(env: TestEnv): Array<Route & { url: string; auth: Auth; takes: boolean; cap: number }> {
  const caps = bodyCaps(env.config)
  return (env.app.routes as Route[]).filter((r) => UNSAFE.has(r.method)).map((r) => {
    const takes = !!r.hooks.body || hasOwnParser(r.hooks.parse)
    const cap = Math.min(takes ? (caps[`${r.method} ${r.path}`] ?? DEFAULT_BODY_CAP) : NO_BODY_CAP, MAX)
    return { ...r, url: r.path.replace(/:[^/]+/g, crypto.randomUUID()), auth: authOf(r), takes, cap }
  })
}

/** A body stream of `size` bytes that counts how often it was read from. */
function counted(size: number) {
  const chunk = new Uint8Array(64 * 1024).fill(0x20)
  let sent = 0
  const reads = { n: 0 }
  const stream = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      reads.n++
      if (sent >= size) return ctrl.close()
      const part = chunk.subarray(0, Math.min(chunk.length, size - sent))
      sent += part.length
      ctrl.enqueue(part)
    },
  }, { highWaterMark: 0 })
  return { stream, reads }
}

function call(env: TestEnv, method: string, url: string, body: ReadableStream<Uint8Array> | string, headers: Record<string, string>) {
  return env.app.handle(new Request(`http://localhost${url}`, { method, headers: { 'content-type': 'application/json', ...headers }, body, duplex: 'half' } as RequestInit))
}

forEachStore('request bodies', (env) => {
  test('the table: every route that reads a body has its cap; the larger ones are the README\'s', () => {
    const routes = bodyRoutes(env)
    expect(routes.filter((r) => r.takes).length).toBeGreaterThan(50)
    const caps = bodyCaps(env.config)
    expect(caps['POST /v1/send']).toBe(env.config.maxBodyBytes)
    for (const k of ['POST /templates', 'PATCH /templates/:id', 'POST /campaigns', 'PUT /campaigns/:id']) expect(caps[k]).toBe(CONTENT_BODY_CAP)
    // Every special cap names a route of the table that reads a body.
    for (const k of Object.keys(caps)) expect(routes.some((r) => r.takes && `${r.method} ${r.path}` === k)).toBe(true)
  })

  test('a declared length over the route\'s cap: 413 before anything is read, on every route', async () => {
    for (const r of bodyRoutes(env)) {
      const { stream, reads } = counted(16)
      const res = await call(env, r.method, r.url, stream, { 'content-length': String(r.cap + 1) })
      expect({ route: `${r.method} ${r.path}`, status: res.status, reads: reads.n }).toEqual({ route: `${r.method} ${r.path}`, status: 413, reads: 0 })
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE')
    }
  })

  test('the key (or the session) is checked before the body is read: none, a wrong one, the wrong kind', async () => {
    const p = await env.project()
    const routes = bodyRoutes(env).filter((r) => r.takes && r.auth !== 'none')
    expect(routes.length).toBeGreaterThan(40)
    for (const r of routes) {
      const attempts: Array<Record<string, string>> = r.auth === 'key'
        ? [{}, { authorization: `Bearer sk_${'0'.repeat(64)}` }, ...(r.path === '/v1/track' ? [] : [{ authorization: `Bearer ${p.publicKey}` }])]
        : [{}, { cookie: 'mailctl_session=not-a-session' }]
      for (const headers of attempts) {
        const { stream, reads } = counted(MAX * 4)
        const res = await call(env, r.method, r.url, stream, headers)
        expect({ route: `${r.method} ${r.path}`, headers, status: res.status, reads: reads.n }).toEqual({ route: `${r.method} ${r.path}`, headers, status: 401, reads: 0 })
      }
    }
  })

  test('a chunked body over the route\'s cap: 413, with a valid key or session, on every route that reads one', async () => {
    const p = await env.project()
    const user = await verifiedUser(env, 'bodies')
    for (const r of bodyRoutes(env).filter((x) => x.takes)) {
      const headers: Record<string, string> = r.auth === 'key' ? { authorization: `Bearer ${p.secretKey}` } : r.auth === 'session' ? { cookie: user.cookie } : {}
      if (r.hooks.type === 'multipart/form-data') headers['content-type'] = 'multipart/form-data; boundary=x'
      const { stream, reads } = counted(r.cap + 1)
      const res = await call(env, r.method, r.url, stream, headers)
      const route = `${r.method} ${r.path}`
      // The notification routes read their own capped body and answer their own way (never more than the cap).
      if (route === 'POST /webhooks/notifications' || route.startsWith('POST /webhooks/incoming') || /^POST \/(unsubscribe|subscribe|manage)\//.test(route)) {
        expect({ route, read: reads.n * 64 * 1024 <= r.cap + 128 * 1024 }).toEqual({ route, read: true })
        continue
      }
      expect({ route, status: res.status }).toEqual({ route, status: 413 })
      expect(reads.n * 64 * 1024).toBeLessThanOrEqual(r.cap + 128 * 1024)
    }
  })

  test('a route that takes no body never reads one; an empty JSON body there is not a 400', async () => {
    const p = await env.project()
    const { stream, reads } = counted(NO_BODY_CAP - 1)
    const res = await call(env, 'POST', `/campaigns/${crypto.randomUUID()}/cancel`, stream, { authorization: `Bearer ${p.secretKey}` })
    expect(res.status).toBe(404)
    expect(reads.n).toBe(0)
    const empty = await call(env, 'POST', `/campaigns/${crypto.randomUUID()}/duplicate`, '', { authorization: `Bearer ${p.secretKey}` })
    expect(empty.status).toBe(404)
  })

  test('on a real socket: chunked over the cap is 413; chunked within it works; anonymous chunked is 401', async () => {
    const p = await env.project()
    const server = buildApp(env.deps).listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const base = `http://127.0.0.1:${server.server?.port}`
      const big = counted(DEFAULT_BODY_CAP + 1)
      const over = await fetch(`${base}/contacts`, { method: 'POST', headers: { authorization: `Bearer ${p.secretKey}`, 'content-type': 'application/json' }, body: big.stream, duplex: 'half' } as RequestInit)
      expect(over.status).toBe(413)
      const json = new TextEncoder().encode(JSON.stringify({ email: 'chunked@example.com', event: 'chunked' }))
      const ok = await fetch(`${base}/v1/track`, { method: 'POST', headers: { authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' }, body: new ReadableStream({ pull(c) { c.enqueue(json); c.close() } }), duplex: 'half' } as RequestInit)
      expect(ok.status).toBe(200)
      const anon = counted(MAX * 4)
      const refused = await fetch(`${base}/v1/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: anon.stream, duplex: 'half' } as RequestInit)
      expect(refused.status).toBe(401)
    } finally {
      await server.stop(true)
    }
  })
}, { maxBodyBytes: MAX })
