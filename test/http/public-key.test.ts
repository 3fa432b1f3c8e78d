import { expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { buildApp } from '../../src/http/app'

/** Issue 35, items 2 and 3: the public key in web pages (docs/decisions.md, Public key in the browser). */

const LIMIT = 3
const track = { email: 'page@example.com', event: 'page.view' }

forEachStore('the public key in the browser', (env) => {
  test('public-key traffic spends a budget of its own: a page at its limit never stops the server calls', async () => {
    const p = await env.project()
    for (let i = 0; i < LIMIT; i++) expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: track })).status).toBe(200)
    const over = await env.request('POST', '/v1/track', { key: p.publicKey, body: track })
    expect(over.status).toBe(429)
    expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED')
    // The secret key still has its whole budget, /v1/send and /v1/track included.
    const first = await env.request('GET', '/contacts?limit=1', { key: p.secretKey })
    expect(first.status).toBe(200)
    expect(first.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1))
    expect((await env.request('POST', '/v1/track', { key: p.secretKey, body: track })).status).toBe(200)
    // ... and spending it does not give the page more.
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: track })).status).toBe(429)
  })

  test('a secret key at its limit leaves the public key its budget', async () => {
    const p = await env.project()
    for (let i = 0; i < LIMIT; i++) expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(200)
    expect((await env.request('GET', '/contacts?limit=1', { key: p.secretKey })).status).toBe(429)
    expect((await env.request('POST', '/v1/track', { key: p.publicKey, body: track })).status).toBe(200)
  })

  test('CORS: /v1/track answers the preflight and the public-key request from any origin', async () => {
    const p = await env.project()
    const pre = await env.request('OPTIONS', '/v1/track', { headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('*')
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST')
    for (const h of ['authorization', 'content-type', 'idempotency-key']) expect(pre.headers.get('access-control-allow-headers')).toContain(h)
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull()
    const res = await env.request('POST', '/v1/track', { key: p.publicKey, body: track, headers: { origin: 'https://shop.example' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-expose-headers')).toContain('x-request-id')
    // A page can read its errors too: a bad body, a wrong key.
    const bad = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'x' }, headers: { origin: 'https://shop.example' } })
    expect(bad.status).toBe(422)
    expect(bad.headers.get('access-control-allow-origin')).toBe('*')
    const wrong = await env.request('POST', '/v1/track', { key: `pk_${'0'.repeat(64)}`, body: track, headers: { origin: 'https://shop.example' } })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('access-control-allow-origin')).toBe('*')
  })

  test('CORS: no other route, and no secret key or session on /v1/track, gets CORS headers', async () => {
    const p = await env.project()
    for (const path of ['/v1/send', '/contacts', '/events/track', '/v1/verify', '/auth/login']) {
      const pre = await env.request('OPTIONS', path, { headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } })
      expect({ path, acao: pre.headers.get('access-control-allow-origin') }).toEqual({ path, acao: null })
      expect(pre.status).toBe(404)
    }
    const post = await env.request('POST', '/v1/send', { key: p.publicKey, body: {}, headers: { origin: 'https://shop.example' } })
    expect(post.headers.get('access-control-allow-origin')).toBeNull()
    const secret = await env.request('POST', '/v1/track', { key: p.secretKey, body: track, headers: { origin: 'https://shop.example' } })
    expect(secret.status).toBe(200)
    expect(secret.headers.get('access-control-allow-origin')).toBeNull()
    const cookie = await env.request('POST', '/v1/track', { cookie: 'mailctl_session=x', body: track, headers: { origin: 'https://shop.example', 'x-project-id': p.id } })
    expect(cookie.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('CORS on a real socket: the preflight and the request', async () => {
    const p = await env.project()
    const server = buildApp(env.deps).listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const base = `http://127.0.0.1:${server.server?.port}`
      const pre = await fetch(`${base}/v1/track`, { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } })
      expect(pre.status).toBe(204)
      expect(pre.headers.get('access-control-allow-origin')).toBe('*')
      const res = await fetch(`${base}/v1/track`, { method: 'POST', headers: { origin: 'https://shop.example', authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' }, body: JSON.stringify(track) })
      expect(res.status).toBe(200)
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect((await fetch(`${base}/contacts`, { method: 'OPTIONS', headers: { origin: 'https://shop.example' } })).headers.get('access-control-allow-origin')).toBeNull()
    } finally {
      await server.stop()
    }
  })
}, { rateLimitPerMinute: LIMIT })
