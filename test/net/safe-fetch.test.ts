import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { safeFetch, SafeFetchError, type SafeFetchOptions } from '../../src/net/safe-fetch'
import { startTestDns, type TestDns } from '../helpers/dns'
import { rawServer, type RawRequest } from '../helpers/raw-http'

/**
 * Real requests, to loopback only: servers on 127.0.0.1 count what reaches them, and the loopback DNS
 * server answers the names. Every refusal is also checked to have reached no server. DNS answers here are
 * loopback addresses only, so that a guard with a bug could reach nothing else; the choice among mixed
 * public and private answers is unit-tested in address-guard.test.ts.
 */

interface Hit { method: string; path: string; host: string | null; body: string; auth: string | null }

function receiver(handler: (req: Request, url: URL) => Response | Promise<Response> = () => new Response('ok'), tls?: { cert: string; key: string }) {
  const hits: Hit[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    tls,
    async fetch(req) {
      const url = new URL(req.url)
      hits.push({ method: req.method, path: url.pathname + url.search, host: req.headers.get('host'), body: await req.text(), auth: req.headers.get('authorization') })
      return handler(req, url)
    },
  })
  return { server, hits, port: server.port as number }
}

async function refusal(p: Promise<unknown>): Promise<SafeFetchError> {
  try {
    await p
  } catch (err) {
    if (err instanceof SafeFetchError) return err
    throw err
  }
  throw new Error('expected a SafeFetchError, got an answer')
}

let dns: TestDns
let plain: ReturnType<typeof receiver>
let other: ReturnType<typeof receiver>
const dir = mkdtempSync(join(tmpdir(), 'mailctl-safe-fetch-'))
let cert = ''
let secure: ReturnType<typeof receiver>

beforeAll(async () => {
  dns = await startTestDns()
  plain = receiver((req, url) => {
    if (url.pathname === '/redirect-away') return new Response(null, { status: 302, headers: { location: `http://localhost:${other.port}/stolen` } })
    if (url.pathname === '/redirect-ip') return new Response(null, { status: 307, headers: { location: `http://127.0.0.2:${plain.port}/x` } })
    if (url.pathname === '/redirect-port') return new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${other.port}/internal` } })
    if (url.pathname === '/redirect-name-port') return new Response(null, { status: 302, headers: { location: `http://hooks.test:${other.port}/allowed` } })
    if (url.pathname === '/redirect-same') return new Response(null, { status: 303, headers: { location: '/landed?q=1' } })
    if (url.pathname === '/redirect-loop') return new Response(null, { status: 302, headers: { location: '/redirect-loop' } })
    if (url.pathname === '/big') return new Response('x'.repeat(1024 * 1024))
    if (url.pathname === '/slow') return new Promise<Response>(() => {})
    if (url.pathname === '/echo') return new Response(`${req.method} ${req.headers.get('content-type')}`, { status: 201, headers: { 'x-one': 'a' } })
    return new Response('ok')
  })
  other = receiver()
  const keyPath = join(dir, 'key.pem')
  const certPath = join(dir, 'cert.pem')
  const r = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyPath, '-out', certPath,
    '-days', '2', '-subj', '/CN=hooks.test', '-addext', 'subjectAltName=DNS:hooks.test'], { stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`)
  cert = readFileSync(certPath, 'utf8')
  secure = receiver(() => new Response('secure ok'), { cert, key: readFileSync(keyPath, 'utf8') })
})

afterAll(async () => {
  plain.server.stop(true)
  other.server.stop(true)
  secure.server.stop(true)
  await dns.close()
  rmSync(dir, { recursive: true, force: true })
})

beforeEach(() => {
  dns.clear()
  plain.hits.length = 0
  other.hits.length = 0
  secure.hits.length = 0
})

const opts = (extra: SafeFetchOptions = {}): SafeFetchOptions => ({ dnsServers: [dns.server], ...extra })

describe('refused before connecting', () => {
  for (const host of ['127.0.0.1', 'localhost', '[::1]', '127.1', '2130706433', '0x7f.0.0.1', '[::ffff:127.0.0.1]', 'sub.localhost']) {
    test(`http://${host}`, async () => {
      const err = await refusal(safeFetch(`http://${host}:${plain.port}/`, {}, opts()))
      expect(err.code).toBe('blocked')
      expect(err.message).toContain('MAILCTL_WEBHOOK_ALLOW_HOSTS')
      expect(plain.hits).toHaveLength(0)
    })
  }

  test('a name that the DNS server resolves to 127.0.0.1', async () => {
    dns.set('rebind.example', [{ type: 'A', address: '127.0.0.1' }])
    const err = await refusal(safeFetch(`http://rebind.example:${plain.port}/`, {}, opts()))
    expect(err.code).toBe('blocked')
    expect(err.message).toContain('loopback')
    expect(plain.hits).toHaveLength(0)
  })

  test('every answer is checked, not only the first', async () => {
    dns.set('two.example', [{ type: 'A', address: '127.0.0.1' }, { type: 'A', address: '127.0.0.2' }])
    expect((await refusal(safeFetch(`http://two.example:${plain.port}/`, {}, opts()))).code).toBe('blocked')
    dns.set('v6.example', [{ type: 'AAAA', address: '::ffff:127.0.0.1' }])
    expect((await refusal(safeFetch(`http://v6.example:${plain.port}/`, {}, opts()))).code).toBe('blocked')
    expect(plain.hits).toHaveLength(0)
  })

  test('a name allow-listed elsewhere does not allow a look-alike', async () => {
    dns.set('hooks.test.evil', [{ type: 'A', address: '127.0.0.1' }])
    const err = await refusal(safeFetch(`http://hooks.test.evil:${plain.port}/`, {}, opts({ allowHosts: ['hooks.test'] })))
    expect(err.code).toBe('blocked')
  })

  test('schemes other than http and https', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://127.0.0.1/', 'gopher://127.0.0.1:70/', 'data:text/plain,hi', 'not a url']) {
      expect((await refusal(safeFetch(url, {}, opts()))).code).toBe('invalid_url')
    }
  })

  test('a name that does not resolve', async () => {
    expect((await refusal(safeFetch('http://nowhere.example/', {}, opts()))).code).toBe('dns')
  })
})

describe('allowed hosts', () => {
  test('an allow-listed loopback address', async () => {
    const res = await safeFetch(`http://127.0.0.1:${plain.port}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', host: 'evil' }, body: '{"a":1}' }, opts({ allowHosts: ['127.0.0.1'] }))
    expect(res.status).toBe(201)
    expect(res.body).toBe('POST application/json')
    expect(res.headers['x-one']).toBe('a')
    expect(res.address).toBe('127.0.0.1')
    expect(plain.hits).toEqual([{ method: 'POST', path: '/echo', host: `127.0.0.1:${plain.port}`, body: '{"a":1}', auth: null }])
  })

  test('an allow-listed name that resolves to loopback, with its Host header', async () => {
    dns.set('hooks.test', [{ type: 'A', address: '127.0.0.1' }])
    const res = await safeFetch(`http://u%40x:p%3Aw@hooks.test:${plain.port}/path?x=1`, {}, opts({ allowHosts: ['hooks.test'] }))
    expect(res.status).toBe(200)
    expect(plain.hits[0].host).toBe(`hooks.test:${plain.port}`)
    expect(plain.hits[0].path).toBe('/path?x=1')
    expect(plain.hits[0].auth).toBe(`Basic ${Buffer.from('u@x:p:w').toString('base64')}`)
  })

  test('https: the certificate is checked against the name while the socket goes to the checked address', async () => {
    dns.set('hooks.test', [{ type: 'A', address: '127.0.0.1' }])
    const res = await safeFetch(`https://hooks.test:${secure.port}/`, {}, opts({ allowHosts: ['hooks.test'], ca: cert }))
    expect(res.body).toBe('secure ok')
    expect(secure.hits[0].host).toBe(`hooks.test:${secure.port}`)
    // Another name for the same address does not match the certificate.
    dns.set('other.test', [{ type: 'A', address: '127.0.0.1' }])
    const err = await refusal(safeFetch(`https://other.test:${secure.port}/`, {}, opts({ allowHosts: ['other.test'], ca: cert })))
    expect(err.code).toBe('connect')
    expect(secure.hits).toHaveLength(1)
  })
})

describe('allow-list entries with a port (issue 35, item 13)', () => {
  test('host:port allows that port only', async () => {
    dns.set('hooks.test', [{ type: 'A', address: '127.0.0.1' }])
    expect((await safeFetch(`http://hooks.test:${plain.port}/`, {}, opts({ allowHosts: [`hooks.test:${plain.port}`] }))).status).toBe(200)
    expect((await safeFetch(`http://127.0.0.1:${plain.port}/`, {}, opts({ allowHosts: [`127.0.0.1:${plain.port}`] }))).status).toBe(200)
    const err = await refusal(safeFetch(`http://hooks.test:${other.port}/`, {}, opts({ allowHosts: [`hooks.test:${plain.port}`] })))
    expect(err.code).toBe('blocked')
    expect(err.message).toContain(`port ${other.port}`)
    expect((await refusal(safeFetch(`http://127.0.0.1:${other.port}/`, {}, opts({ allowHosts: [`127.0.0.1:${plain.port}`] })))).code).toBe('blocked')
    expect(plain.hits).toHaveLength(2)
    expect(other.hits).toHaveLength(0)
  })
})

describe('redirects', () => {
  const allow = () => opts({ allowHosts: ['127.0.0.1', '127.0.0.2', 'localhost'] })

  test('to another host: refused, and the other host is never asked', async () => {
    const err = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/redirect-away`, {}, allow()))
    expect(err.code).toBe('redirect')
    expect(other.hits).toHaveLength(0)
    const err2 = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/redirect-ip`, {}, allow()))
    expect(err2.code).toBe('redirect')
    expect(plain.hits).toHaveLength(2)
  })

  test('to the same host on another port: refused, and that port is never asked (issue 35, item 13)', async () => {
    const err = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/redirect-port`, {}, allow()))
    expect(err.code).toBe('redirect')
    expect(err.message).toContain('another port')
    expect(other.hits).toHaveLength(0)
  })

  test('to another host:port the allow-list names: still refused; the same host on a port it does not name: refused', async () => {
    dns.set('hooks.test', [{ type: 'A', address: '127.0.0.1' }])
    const listed = opts({ allowHosts: [`127.0.0.1:${plain.port}`, `hooks.test:${other.port}`] })
    expect((await refusal(safeFetch(`http://127.0.0.1:${plain.port}/redirect-name-port`, {}, listed))).code).toBe('redirect')
    // 127.0.0.1 is allowed on plain's port only: its other port is not followed (nor reachable directly).
    const err = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/redirect-port`, {}, opts({ allowHosts: [`127.0.0.1:${plain.port}`] })))
    expect(err.code).toBe('redirect')
    expect(err.message).toContain('another port')
    expect((await refusal(safeFetch(`http://127.0.0.1:${other.port}/internal`, {}, opts({ allowHosts: [`127.0.0.1:${plain.port}`] })))).code).toBe('blocked')
    expect(other.hits).toHaveLength(0)
    expect(plain.hits.map((h) => h.path)).toEqual(['/redirect-name-port', '/redirect-port'])
  })

  test('to the same host: followed, a 303 as a GET without the body', async () => {
    const res = await safeFetch(`http://127.0.0.1:${plain.port}/redirect-same`, { method: 'POST', body: 'payload' }, allow())
    expect(res.status).toBe(200)
    expect(res.url).toBe(`http://127.0.0.1:${plain.port}/landed?q=1`)
    expect(plain.hits.map((h) => [h.method, h.path, h.body])).toEqual([['POST', '/redirect-same', 'payload'], ['GET', '/landed?q=1', '']])
  })

  test('a loop stops after maxRedirects', async () => {
    const err = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/redirect-loop`, {}, { ...allow(), maxRedirects: 3 }))
    expect(err.code).toBe('redirect')
    expect(plain.hits).toHaveLength(4)
  })
})

describe('limits', () => {
  const allow = (extra: SafeFetchOptions = {}) => opts({ allowHosts: ['127.0.0.1'], ...extra })

  test('the response body is cut at maxBodyBytes', async () => {
    const res = await safeFetch(`http://127.0.0.1:${plain.port}/big`, {}, allow({ maxBodyBytes: 1000 }))
    expect(res.body).toBe('x'.repeat(1000))
    expect(res.truncated).toBe(true)
    const small = await safeFetch(`http://127.0.0.1:${plain.port}/`, {}, allow({ maxBodyBytes: 1000 }))
    expect(small.truncated).toBe(false)
  })

  test('an answer that never comes times out', async () => {
    const err = await refusal(safeFetch(`http://127.0.0.1:${plain.port}/slow`, {}, allow({ timeoutMs: 150 })))
    expect(err.code).toBe('timeout')
  })

  test('a DNS server that never answers times out too', async () => {
    dns.fail('silent.test', 'TIMEOUT')
    const err = await refusal(safeFetch('http://silent.test/', {}, opts({ timeoutMs: 150 })))
    expect(err.code).toBe('timeout')
  })

  test('a closed port is a connection failure', async () => {
    const gone = receiver()
    const port = gone.port
    gone.server.stop(true)
    const err = await refusal(safeFetch(`http://127.0.0.1:${port}/`, {}, allow()))
    expect(err.code).toBe('connect')
  })

  test('a caller signal cancels', async () => {
    const ctl = new AbortController()
    const p = safeFetch(`http://127.0.0.1:${plain.port}/slow`, {}, allow({ signal: ctl.signal }))
    ctl.abort()
    expect((await refusal(p)).code).toBe('aborted')
  })
})

describe('framing and connections (issue 35, item 12)', () => {
  let raw: ReturnType<typeof rawServer>
  beforeAll(() => { raw = rawServer() })
  afterAll(() => {
    for (const s of raw.sockets) s.destroy()
    raw.server.close()
  })
  beforeEach(() => { raw.requests.length = 0 })
  const allowed = (pool?: string): SafeFetchOptions => opts({ allowHosts: ['127.0.0.1'], pool })
  const framing = (r: RawRequest) => r.headers.filter(([k]) => k === 'content-length' || k === 'transfer-encoding')

  test('exactly one framing header whatever framing headers the caller passes', async () => {
    const url = `http://127.0.0.1:${raw.port()}/hook`
    const hostile = { 'Transfer-Encoding': 'chunked', 'Content-Length': '3', Connection: 'Upgrade', Upgrade: 'h2c', 'x-kept': 'yes' }
    await safeFetch(url, { method: 'POST', headers: hostile, body: '{"a":1}' }, allowed('p1'))
    await safeFetch(url, { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: '' }, allowed('p1'))
    await safeFetch(url, { method: 'GET', headers: { 'content-length': '10' } }, allowed('p1'))
    expect(raw.requests).toHaveLength(3)
    const [post, empty, get] = raw.requests
    expect(framing(post)).toEqual([['content-length', '7']])
    expect(post.body).toBe('{"a":1}')
    expect(post.headers.find(([k]) => k === 'x-kept')?.[1]).toBe('yes')
    expect(post.headers.some(([k]) => k === 'upgrade')).toBe(false)
    expect(post.headers.filter(([k]) => k === 'connection').map(([, v]) => v.toLowerCase())).toEqual(['keep-alive'])
    expect(framing(empty)).toEqual([['content-length', '0']])
    expect(framing(get).length).toBeLessThanOrEqual(1)
    expect(framing(get).every(([k, v]) => k === 'content-length' && v === '0')).toBe(true)
  })

  test('keep-alive connections are never shared between pools (tenants); without a pool, none is kept', async () => {
    const url = `http://127.0.0.1:${raw.port()}/x`
    for (const pool of ['tenant-a', 'tenant-b', 'tenant-a', 'tenant-b', 'tenant-a']) {
      await safeFetch(`${url}?${pool}`, { method: 'POST', body: pool }, allowed(pool))
    }
    const socketsOf = (pool: string) => new Set(raw.requests.filter((r) => r.body === pool).map((r) => r.socket))
    const a = socketsOf('tenant-a')
    const b = socketsOf('tenant-b')
    expect(raw.requests).toHaveLength(5)
    expect([...a].filter((s) => b.has(s))).toEqual([])
    // Within one tenant the connection is reused (so the pools are real, not just no keep-alive).
    expect(a.size).toBe(1)
    expect(b.size).toBe(1)
    raw.requests.length = 0
    await safeFetch(url, { method: 'POST', body: 'none' }, allowed())
    await safeFetch(url, { method: 'POST', body: 'none' }, allowed())
    const [one, two] = raw.requests
    expect(one.socket).not.toBe(two.socket)
    expect(one.headers.find(([k]) => k === 'connection')?.[1]).toBe('close')
    expect([one.socket, two.socket].some((s) => a.has(s) || b.has(s))).toBe(false)
  })
})
