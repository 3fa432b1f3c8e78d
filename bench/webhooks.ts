/**
 * Customer webhooks: 10,000 events fanned out to 2 endpoints on loopback, delivered by the
 * dispatcher (src/modules/hooks/dispatcher.ts) through the SSRF guard with signatures. Prints deliveries
 * per second and the time from each event to its delivery (p50, p99); then the same with one endpoint
 * answering after 5 s, to show the other one is not held back. Asserts nothing.
 *
 *   node_modules/.bin/bun bench/webhooks.ts [--pg]      (BENCH_EVENTS=10000 BENCH_SLOW_MS=5000)
 *
 * The events are appended in batches of 500 (one transaction each) and handed to the event consumer as
 * the stream does after a commit; the receivers run in this process and note the arrival time of each
 * webhook-id. Event-to-delivery is the arrival time minus the event's own timestamp (in the body).
 */
import { settleEvents } from '../test/helpers/events'
import { appendEvents, notifyEvents } from '../src/modules/events/stream'
import { ctxFor } from '../src/deps'
import { Dispatcher } from '../src/modules/hooks/dispatcher'
import { createEndpoint } from '../src/modules/hooks/service'
import { TestEnv } from '../test/helpers/env'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000)
const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 5000)
const kind = process.argv.includes('--pg') ? 'pg' : 'sqlite'

function receiver(delayMs: number) {
  const latencies: number[] = []
  const ids = new Set<string>()
  let last = 0
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.text()
      const now = Date.now()
      const id = req.headers.get('webhook-id') ?? ''
      if (!ids.has(id)) {
        ids.add(id)
        latencies.push(now - Date.parse((JSON.parse(body) as { timestamp: string }).timestamp))
        last = now
      }
      if (delayMs) await Bun.sleep(delayMs)
      return new Response(null, { status: 204 })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/hook`, latencies, get count() { return ids.size }, get last() { return last }, stop: () => server.stop(true) }
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

async function scenario(title: string, slowMs: number) {
  const env = new TestEnv(kind, { webhookAllowHosts: ['127.0.0.1'], logLevel: 'silent' })
  await env.start()
  const a = receiver(0)
  const b = receiver(slowMs)
  const d = new Dispatcher(env.deps)
  try {
    const p = await env.project()
    const ctx = () => ctxFor(env.deps, p.id, { kind: 'job', name: 'bench' })
    await createEndpoint(ctx(), { url: a.url })
    await createEndpoint(ctx(), { url: b.url })
    await d.start()
    const t0 = Date.now()
    for (let i = 0; i < EVENTS; i += 500) {
      const c = ctx()
      const rows = await env.store.tx((db) => appendEvents(c, db, Array.from({ length: Math.min(500, EVENTS - i) }, (_, k) => ({ contactId: null, name: 'bench.event', data: { n: i + k } }))))
      await notifyEvents(c, rows)
    }
    await settleEvents()
    const queued = Date.now() - t0
    const wantB = slowMs ? 0 : EVENTS
    const deadline = Date.now() + 600_000
    while ((a.count < EVENTS || b.count < wantB) && Date.now() < deadline) await Bun.sleep(20)
    const end = Math.max(a.last, slowMs ? 0 : b.last)
    const secs = (end - t0) / 1000
    const delivered = a.count + (slowMs ? 0 : b.count)
    console.log(`\n${title} [${kind}]: ${EVENTS} events -> 2 endpoints; events appended and fanned out in ${queued} ms`)
    console.log(`  ${slowMs ? 'healthy endpoint' : 'both endpoints'}: ${delivered} deliveries in ${secs.toFixed(2)} s = ${Math.round(delivered / secs)} deliveries/s`)
    console.log(`  event -> delivery: p50 ${pct(a.latencies.concat(slowMs ? [] : b.latencies), 50)} ms, p99 ${pct(a.latencies.concat(slowMs ? [] : b.latencies), 99)} ms`)
    if (slowMs) console.log(`  slow endpoint (answers after ${slowMs} ms, 16 at a time): ${b.count} received meanwhile; its backlog waits without holding the other back`)
  } finally {
    b.stop()
    await d.stop()
    a.stop()
    await env.stop()
  }
}

await scenario('two healthy endpoints', 0)
await scenario('one endpoint answering after 5 s', SLOW_MS)
process.exit(0)
