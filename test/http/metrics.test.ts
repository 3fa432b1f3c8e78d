import { expect, test } from 'bun:test'
import v8 from 'node:v8'
import { forEachStore, TestEnv } from '../helpers/env'
import { projectWithDomain, startTestDns, pipelineFor } from '../modules/emails/fixture'
import { domainLabel, onScrape, gauge } from '../../src/metrics'
import { metricsAuthorized, startMetricsListener } from '../../src/http/metrics'

/** GET /metrics (issue 14, Observability): Prometheus text, guarded by MAILCTL_METRICS_TOKEN. */

const TOKEN = 'metrics-token-0123456789'
const dns = await startTestDns()

/** The value of one sample line (`name{labels} value`), or null. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    const ok = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))
    if (ok) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return null
}

forEachStore('GET /metrics', (env) => {
  test('security: no token, a wrong token, a project key are 401 in the error envelope', async () => {
    const p = await env.project()
    for (const key of [null, 'wrong-token', p.secretKey, p.publicKey]) {
      const res = await env.request('GET', '/metrics', { key })
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe('UNAUTHORIZED')
      expect(res.text).not.toContain('mailctl_')
    }
  })

  test('happy: HTTP by route pattern and status, queue depth and age, deliveries by outcome and domain, the node', async () => {
    const p = await projectWithDomain(env, dns, `metrics-${Math.random().toString(36).slice(2, 8)}.test`)
    const before = await env.request('GET', '/metrics', { key: TOKEN })
    expect(before.status).toBe(200)
    expect(before.headers.get('content-type')).toContain('text/plain')
    const sent = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: ['a@metrics-dest.test', 'b@metrics-dest.test'], from: p.from, subject: 's', body: 'b' } })
    expect(sent.status).toBe(200)
    await env.request('GET', `/contacts/${crypto.randomUUID()}`, { key: p.secretKey })

    // Requests are counted after their answer is sent (onAfterResponse, a later turn of the event loop):
    // scrape until the send and the 404 show, letting the loop run in between.
    let queued = ''
    const counted = () => sample(queued, 'mailctl_http_requests_total', { method: 'GET', route: '/contacts/:id', status: '404' }) !== null
      && sample(queued, 'mailctl_http_requests_total', { method: 'POST', route: '/v1/send', status: '200' }) !== null
    do queued = (await env.request('GET', '/metrics', { key: TOKEN })).text
    while (!counted() && (await Bun.sleep(5)) === undefined)
    expect(sample(queued, 'mailctl_queue_depth', { queue: 'outbound' })).toBeGreaterThanOrEqual(2)
    expect(sample(queued, 'mailctl_queue_oldest_age_seconds', { queue: 'outbound' })).toBeGreaterThanOrEqual(0)
    expect(sample(queued, 'mailctl_queue_depth', { queue: 'jobs' })).not.toBeNull()
    // The route's pattern, not the path with its id.
    expect(sample(queued, 'mailctl_http_requests_total', { method: 'POST', route: '/v1/send', status: '200' })).toBeGreaterThanOrEqual(1)
    expect(sample(queued, 'mailctl_http_requests_total', { method: 'GET', route: '/contacts/:id', status: '404' })).toBeGreaterThanOrEqual(1)
    expect(queued).not.toContain('route="/contacts/0')
    expect(sample(queued, 'mailctl_http_request_duration_seconds_count', { method: 'POST', route: '/v1/send' })).toBeGreaterThanOrEqual(1)
    expect(sample(queued, 'mailctl_node_info', { node: env.deps.runtime.node.id })).toBe(1)
    expect(queued).toContain('mailctl_process_cpu_seconds_total')
    // The send was group-committed: one batch at least, with at least as many writes.
    const batches = sample(queued, 'mailctl_group_commit', { count: 'batches' }) ?? 0
    expect(batches).toBeGreaterThanOrEqual(1)
    expect(sample(queued, 'mailctl_group_commit', { count: 'writes' }) ?? 0).toBeGreaterThanOrEqual(batches)
    expect(sample(queued, 'mailctl_group_commit', { count: 'conflicts' })).not.toBeNull()

    // A tenant's recipient domain is never a label (issue 35, item 10): it counts as "other".
    const before2 = sample(queued, 'mailctl_delivery_attempts_total', { outcome: 'captured', domain: 'other' }) ?? 0
    await pipelineFor(env).drain()
    const after = (await env.request('GET', '/metrics', { key: TOKEN })).text
    expect(sample(after, 'mailctl_delivery_attempts_total', { outcome: 'captured', domain: 'other' })).toBeGreaterThanOrEqual(before2 + 2)
    expect(after).not.toContain('metrics-dest.test')
    expect(after).not.toContain(p.from.split('@')[1])
    expect(after).not.toContain(p.id)
  })

  test('a module registers its own gauge, read at scrape time', async () => {
    const g = gauge('mailctl_test_registered', 'a gauge a module adds')
    let n = 0
    const off = onScrape(() => { g.set(++n) })
    try {
      expect(sample((await env.request('GET', '/metrics', { key: TOKEN })).text, 'mailctl_test_registered')).toBe(1)
      expect(sample((await env.request('GET', '/metrics', { key: TOKEN })).text, 'mailctl_test_registered')).toBe(2)
    } finally {
      off()
    }
  })
}, { metricsToken: TOKEN, outbound: 'capture', dnsServers: [dns.server] })

test('without MAILCTL_METRICS_TOKEN the API port does not serve /metrics; the separate listener does', async () => {
  const env = new TestEnv('sqlite')
  await env.start()
  const listener = startMetricsListener(env.deps, 0)
  try {
    const res = await env.request('GET', '/metrics')
    expect(res.status).toBe(404)
    expect(res.body.error.code).toBe('NOT_FOUND')
    expect(res.text).not.toContain('mailctl_')
    const scraped = await fetch(`http://127.0.0.1:${listener.port}/metrics`)
    expect(scraped.status).toBe(200)
    expect(await scraped.text()).toContain('mailctl_node_info')
    // That listener serves nothing else.
    expect((await fetch(`http://127.0.0.1:${listener.port}/contacts`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${listener.port}/health`)).status).toBe(404)
  } finally {
    await listener.stop()
    await env.stop()
  }
})

test('the separate listener asks for the token too when one is set', async () => {
  const env = new TestEnv('sqlite', { metricsToken: TOKEN })
  await env.start()
  const listener = startMetricsListener(env.deps, 0)
  try {
    expect((await fetch(`http://127.0.0.1:${listener.port}/metrics`)).status).toBe(401)
    expect((await fetch(`http://127.0.0.1:${listener.port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200)
  } finally {
    await listener.stop()
    await env.stop()
  }
})

test('a scrape does not walk the JavaScript heap; the heap size and use are still given', async () => {
  // v8.getHeapSpaceStatistics walks the whole heap on Bun (tens of ms with the event loop blocked); prom-client's
  // per-space gauges are the only default metric that calls it.
  const original = v8.getHeapSpaceStatistics
  let walks = 0
  v8.getHeapSpaceStatistics = () => { walks++; return original() }
  const env = new TestEnv('sqlite', { metricsToken: TOKEN })
  await env.start()
  try {
    const text = (await env.request('GET', '/metrics', { key: TOKEN })).text
    expect(text).not.toContain('nodejs_heap_space_size')
    expect(walks).toBe(0)
    expect(sample(text, 'mailctl_nodejs_heap_size_used_bytes')).toBeGreaterThan(0)
    expect(sample(text, 'mailctl_nodejs_heap_size_total_bytes')).toBeGreaterThan(0)
  } finally {
    v8.getHeapSpaceStatistics = original
    await env.stop()
  }
})

test('units: the token check; domain labels are public mailbox providers or "other", never a tenant\'s domain', () => {
  expect(metricsAuthorized(null, null)).toBe(true)
  expect(metricsAuthorized('Bearer abc', 'abc')).toBe(true)
  expect(metricsAuthorized('bearer  abc ', 'abc')).toBe(true)
  expect(metricsAuthorized('Bearer abd', 'abc')).toBe(false)
  expect(metricsAuthorized('abc', 'abc')).toBe(false)
  expect(metricsAuthorized(null, 'abc')).toBe(false)
  expect(domainLabel('GMAIL.com')).toBe('gmail.com')
  expect(domainLabel('outlook.com')).toBe('outlook.com')
  // The first recipient domains seen used to get labels of their own: a customer's company, shown to every scraper.
  expect(domainLabel('acme-corp.example')).toBe('other')
  const seen = new Set<string>()
  for (let i = 0; i < 100; i++) seen.add(domainLabel(`d${i}.label-test`))
  expect([...seen]).toEqual(['other'])
})
