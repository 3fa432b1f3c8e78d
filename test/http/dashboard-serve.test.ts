import { afterAll, beforeAll, expect, test } from 'bun:test'
import { TestEnv } from '../helpers/env'
import { loadDashboard } from '../helpers/dashboard'
import { DASHBOARD_CSP } from '../../src/http/dashboard'

/** The source tree serves the dashboard too (`npm start`): Bun bundles web/index.html on the first request. */
const env = new TestEnv('sqlite')
let base = ''
beforeAll(async () => {
  await env.start()
  env.app.listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${env.app.server?.port}`
})
afterAll(async () => {
  await env.app.stop()
  await env.stop()
})

test('/app/ and any path under it answer the page; its script and stylesheet load', async () => {
  for (const path of ['/app/', '/app', '/app/p/abc/contacts']) {
    const page = await loadDashboard(base, path)
    expect({ path, status: page.status }).toEqual({ path, status: 200 })
    expect(page.type).toStartWith('text/html')
    expect(page.html).toContain('<div id="root">')
    expect(page.assets.map((a) => a.type?.split(';')[0]).sort()).toEqual(['text/css', 'text/javascript'])
    for (const a of page.assets) expect({ url: a.url, status: a.status, empty: a.bytes === 0 }).toEqual({ url: a.url, status: 200, empty: false })
  }
})

test('the API around it is unchanged on the same port; GET / sends browsers to /app/', async () => {
  expect((await fetch(`${base}/health`)).status).toBe(200)
  expect((await fetch(`${base}/contacts`)).status).toBe(401)
  const root = await fetch(`${base}/`, { headers: { accept: 'text/html' }, redirect: 'manual' })
  expect(root.status).toBe(302)
  expect(root.headers.get('location')).toBe('/app/')
  expect((await fetch(`${base}/appendix`)).status).toBe(404)
})

test('the page carries a CSP that runs no inline script, framing protection and nosniff (issue 35, item 9)', async () => {
  for (const path of ['/app/', '/app', '/app/p/abc/settings']) {
    const res = await fetch(`${base}${path}`)
    expect(res.status).toBe(200)
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toBe(DASHBOARD_CSP)
    const script = /script-src ([^;]+)/.exec(csp)?.[1] ?? ''
    expect(script).toBe("'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).toContain("object-src 'none'")
    expect(csp).toContain("base-uri 'none'")
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    // The page itself holds no inline script for the policy to allow.
    const html = await res.text()
    for (const m of html.matchAll(/<script\b[^>]*>/g)) expect(m[0]).toContain('src=')
  }
})
