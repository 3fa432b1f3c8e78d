import { afterAll, beforeAll, expect, test } from 'bun:test'
import { TestEnv } from '../helpers/env'
import { loadDashboard } from '../helpers/dashboard'
import { brotliDecompressSync } from 'node:zlib'
import { areaOf, DASHBOARD_CSP } from '../../src/http/dashboard'
import { bundleWeb, firstLoad } from '../../src/http/web-build'

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
    // One stylesheet; the entry script and the chunks it imports at once (the bundle is split by page).
    const types = page.assets.map((a) => a.type?.split(';')[0])
    expect(types.filter((t) => t === 'text/css')).toEqual(['text/css'])
    expect(types.filter((t) => t === 'text/javascript').length).toBeGreaterThanOrEqual(1)
    expect(types.filter((t) => t !== 'text/css' && t !== 'text/javascript')).toEqual([])
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

test('the chunks are served compressed by Accept-Encoding and cached for good; the HTML is never cached (issue 37)', async () => {
  const page = await loadDashboard(base, '/app/')
  const script = page.assets.find((a) => a.type?.startsWith('text/javascript'))
  if (!script) throw new Error('the page names no script')
  const plain = await fetch(script.url, { headers: { 'accept-encoding': 'identity' } })
  const raw = new Uint8Array(await plain.arrayBuffer())
  expect(plain.headers.get('content-encoding')).toBeNull()
  expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  expect(plain.headers.get('vary')).toBe('accept-encoding')
  for (const [accept, want] of [['gzip, deflate, br', 'br'], ['gzip', 'gzip'], ['br;q=0, gzip', 'gzip'], ['deflate', null]] as const) {
    // decompress: false keeps the bytes as sent, to check them against the plain answer.
    const res = await fetch(script.url, { headers: { 'accept-encoding': accept }, decompress: false })
    expect({ accept, encoding: res.headers.get('content-encoding') }).toEqual({ accept, encoding: want })
    const body = new Uint8Array(await res.arrayBuffer())
    const decoded = want === 'br' ? new Uint8Array(brotliDecompressSync(body)) : want === 'gzip' ? Bun.gunzipSync(body) : body
    expect(decoded).toEqual(raw)
    if (want) expect(body.byteLength).toBeLessThan(raw.byteLength / 2)
  }
  const html = await fetch(`${base}/app/`, { headers: { 'accept-encoding': 'br' }, decompress: false })
  expect(html.headers.get('content-encoding')).toBe('br')
  expect(html.headers.get('cache-control')).toBe('no-cache')
  const missing = await fetch(`${base}/app-assets/nothing-here.js`)
  expect(missing.status).toBe(404)
  expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND')
})

test('the first load is the shell; each page is a chunk loaded later (issue 37)', async () => {
  const { shell, chunks } = await bundleWeb()
  const first = firstLoad(shell, chunks)
  const later = [...chunks.keys()].filter((n) => n.endsWith('.js') && !first.includes(n))
  expect(first.some((n) => n.endsWith('.js'))).toBe(true)
  expect(later.length).toBeGreaterThanOrEqual(10)
  const firstCode = first.filter((n) => n.endsWith('.js')).map((n) => new TextDecoder().decode(chunks.get(n))).join('\n')
  const laterCode = later.map((n) => new TextDecoder().decode(chunks.get(n))).join('\n')
  // The workflow page's graph library is in a later chunk, not in the first load.
  expect(laterCode).toContain('react-flow__')
  expect(firstCode).not.toContain('react-flow__')
})

test('the page names the chunks of the page opened as module preloads, fetched with the entry script', async () => {
  const { areas, chunks } = await bundleWeb()
  // Every area the router loads has its chunk, and the area's chunks are all in the bundle.
  for (const area of ['auth', 'contacts', 'segments', 'campaigns', 'workflows', 'projects', 'analytics', 'mail', 'webhooks', 'tools', 'domains', 'templates', 'invitations']) {
    const names = areas.get(area) ?? []
    expect({ area, some: names.length > 0 }).toEqual({ area, some: true })
    for (const n of names) expect({ area, n, known: chunks.has(n) }).toEqual({ area, n, known: true })
  }
  const preloads = (html: string) => [...html.matchAll(/<link rel="modulepreload" crossorigin href="\/app-assets\/([^"]+)">/g)].map((m) => m[1])
  const cookie = { cookie: 'theme=dark; mailctl_session=not-checked-here' }
  const contacts = await (await fetch(`${base}/app/p/abc/contacts`, { headers: cookie })).text()
  for (const n of areas.get('contacts') ?? []) expect(preloads(contacts)).toContain(n)
  expect(preloads(contacts)).not.toContain((areas.get('workflows') ?? [])[0])
  const workflow = await (await fetch(`${base}/app/p/abc/workflows/xyz`, { headers: cookie })).text()
  expect(preloads(workflow)).toContain((areas.get('workflows') ?? [])[0])
  // Without a session cookie the sign-in page is what loads.
  const signedOut = await (await fetch(`${base}/app/p/abc/contacts`)).text()
  expect(preloads(signedOut)).toContain((areas.get('auth') ?? [])[0])
  expect(preloads(signedOut)).not.toContain((areas.get('contacts') ?? [])[0])
  // A cookie whose name only ends in the session cookie's name is not one.
  const other = await (await fetch(`${base}/app/p/abc/contacts`, { headers: { cookie: 'xmailctl_session=1' } })).text()
  expect(preloads(other)).toContain((areas.get('auth') ?? [])[0])
  // Every page served names each file once, and every file it names is served.
  for (const html of [contacts, workflow, signedOut]) {
    const names = preloads(html)
    expect(new Set(names).size).toBe(names.length)
    for (const n of names) expect({ n, status: (await fetch(`${base}/app-assets/${n}`)).status }).toEqual({ n, status: 200 })
  }
})

test('areaOf follows the router: a project section, the pages outside a project, /app/ itself', () => {
  expect(areaOf('/app/p/x/contacts', true)).toBe('contacts')
  expect(areaOf('/app/p/x/contacts/fields', true)).toBe('contacts')
  expect(areaOf('/app/p/x', true)).toBe('projects')
  expect(areaOf('/app/p/x/', true)).toBe('projects')
  expect(areaOf('/app/p/x/usage', true)).toBe('analytics')
  expect(areaOf('/app/p/x/emails/e1', true)).toBe('mail')
  expect(areaOf('/app/p/x/nothing', true)).toBeNull()
  expect(areaOf('/app/invitations', true)).toBe('invitations')
  expect(areaOf('/app/projects/new', true)).toBe('projects')
  expect(areaOf('/app/', true)).toBeNull()
  expect(areaOf('/app/p/x/contacts', false)).toBe('auth')
})
