/**
 * Head-of-line blocking: a backlog to one stalled destination must not delay mail to the others.
 *
 *   node_modules/.bin/bun bench/head-of-line.ts
 *     BENCH_STALLED=5000       messages queued to the stalled destination first
 *     BENCH_HEALTHY=20         messages to a healthy destination, sent BENCH_GAP_MS later
 *     BENCH_GAP_MS=2000
 *     BENCH_DATABASE_URL=...   default: a fresh SQLite file; `pg` for a fresh PostgreSQL database
 *
 * The server (`mailctl serve`, direct MX delivery through a loopback DNS server), the minimal sink
 * (bench/_sink.ts on 127.0.0.1) for the healthy domain, and a stalled receiver on 127.0.0.7 (same port)
 * that greets, accepts MAIL FROM and never answers RCPT TO. Prints how long after its acceptance each
 * healthy message reached the sink (the figure: every one within 5 s), and, as the ceiling, the same
 * latency with no stalled backlog, measured in the same run before the backlog is queued.
 */
import { join } from 'node:path'
import { startTestDns } from '../test/helpers/dns'
import { lines } from './_proc'
import { benchProject, benchStore, runCleanups, serverEnv, startServer } from './_mailctl'

const STALLED = Number(process.env.BENCH_STALLED ?? 5000)
const HEALTHY = Number(process.env.BENCH_HEALTHY ?? 20)
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 2000)
const ROOT = join(import.meta.dir, '..')

const store = await benchStore('hol')
const cleanups = store.cleanups

try {
  const dns = await startTestDns()
  cleanups.unshift(() => dns.close())

  let sinkPort = 0
  let received = 0
  const sink = Bun.spawn([process.execPath, join(ROOT, 'bench/_sink.ts')], { env: { ...process.env, SINK_PORT: '0' }, stdout: 'pipe', stderr: 'inherit' })
  cleanups.unshift(() => { sink.kill() })
  void lines(sink.stdout, (rec) => {
    if (typeof rec.port === 'number') sinkPort = rec.port
    if (typeof rec.received === 'number') received = rec.received
  })
  while (!sinkPort) await Bun.sleep(10)

  // The stalled receiver: greets, answers EHLO and MAIL FROM, never RCPT TO.
  let stalledRcpts = 0
  const stalled = Bun.listen<{ buf: string }>({
    hostname: '127.0.0.7',
    port: sinkPort,
    socket: {
      open(s) { s.data = { buf: '' }; s.write('220 stalled.bench ESMTP\r\n') },
      data(s, chunk) {
        s.data.buf += chunk.toString('latin1')
        for (let nl = s.data.buf.indexOf('\r\n'); nl >= 0; nl = s.data.buf.indexOf('\r\n')) {
          const line = s.data.buf.slice(0, nl).toUpperCase()
          s.data.buf = s.data.buf.slice(nl + 2)
          if (line.startsWith('EHLO')) s.write('250-stalled.bench\r\n250 PIPELINING\r\n')
          else if (line.startsWith('HELO') || line.startsWith('MAIL') || line.startsWith('RSET') || line.startsWith('NOOP')) s.write('250 OK\r\n')
          else if (line.startsWith('RCPT')) stalledRcpts++
          else if (line.startsWith('QUIT')) { s.write('221 bye\r\n'); s.end() }
        }
      },
    },
  })
  cleanups.unshift(() => stalled.stop(true))
  dns.set('healthy.test', [{ type: 'MX', exchange: 'mx.healthy.test', priority: 10 }])
  dns.set('mx.healthy.test', [{ type: 'A', address: '127.0.0.1' }])
  // The backlog phase's healthy domain is another one, on the same sink: its route is not known yet.
  dns.set('other.test', [{ type: 'MX', exchange: 'mx.other.test', priority: 10 }])
  dns.set('mx.other.test', [{ type: 'A', address: '127.0.0.1' }])
  dns.set('stalled.test', [{ type: 'MX', exchange: 'mx.stalled.test', priority: 10 }])
  dns.set('mx.stalled.test', [{ type: 'A', address: '127.0.0.7' }])

  const env = await serverEnv(store, dns, sinkPort)
  const { secretKey } = await benchProject(env, dns)
  const server = await startServer(env)
  cleanups.unshift(async () => { server.proc.kill('SIGTERM'); await server.proc.exited })
  const base = server.base
  const headers = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' }
  async function send(to: string[]): Promise<void> {
    for (let i = 0; i < to.length; i += 1000) {
      const res = await fetch(`${base}/v1/send`, { method: 'POST', headers, body: JSON.stringify({ from: 'hello@bench-sender.test', subject: 'Hello', body: '<p>Hello</p>', to: to.slice(i, i + 1000) }) })
      if (res.status !== 200) throw new Error(`send: ${res.status} ${await res.text()}`)
    }
  }
  /** Sends `n` healthy messages one request each, at once; the milliseconds until the sink had them all, per message. */
  async function healthyLatencies(domain: string, n: number, timeoutMs: number): Promise<{ ms: number[]; delivered: number }> {
    const before = received
    const accepted: number[] = []
    await Promise.all(Array.from({ length: n }, async (_, i) => {
      await send([`h${i}.${Math.random().toString(36).slice(2, 8)}@${domain}`])
      accepted.push(performance.now())
    }))
    const ms: number[] = []
    const deadline = performance.now() + timeoutMs
    accepted.sort((a, b) => a - b)
    let seen = before
    while (received - before < n && performance.now() < deadline) {
      await Bun.sleep(5)
      while (seen < received && ms.length < n) { ms.push(performance.now() - accepted[ms.length]); seen++ }
    }
    while (seen < received && ms.length < n) { ms.push(performance.now() - accepted[ms.length]); seen++ }
    return { ms, delivered: received - before }
  }
  const summary = (ms: number[]) => {
    const s = [...ms].sort((a, b) => a - b)
    return { max: Math.round(s[s.length - 1] ?? Number.NaN), p50: Math.round(s[Math.floor(s.length / 2)] ?? Number.NaN) }
  }

  // Ceiling: the same healthy messages with nothing stalled.
  const ceiling = await healthyLatencies('healthy.test', HEALTHY, 30_000)
  const t0 = performance.now()
  // The backlog arrives as it would from an application: one recipient a request, 16 requests at a time;
  // the healthy messages follow BENCH_GAP_MS after the first, while the backlog may still be arriving.
  let next = 0
  const backlog = Promise.all(Array.from({ length: 16 }, async () => {
    for (let i = next++; i < STALLED; i = next++) await send([`s${i}@stalled.test`])
  }))
  await Bun.sleep(GAP_MS)
  const withBacklog = await healthyLatencies('other.test', HEALTHY, 90_000)
  await backlog
  const queuedSeconds = (performance.now() - t0) / 1000
  console.log(JSON.stringify({
    store: store.kind,
    stalledQueued: STALLED, stalledQueueSeconds: Math.round(queuedSeconds * 100) / 100, stalledRcptsOpen: stalledRcpts,
    healthy: HEALTHY,
    ceilingNoBacklog: { delivered: ceiling.delivered, latencyMs: summary(ceiling.ms) },
    withStalledBacklog: { delivered: withBacklog.delivered, latencyMs: summary(withBacklog.ms) },
    target: 'every healthy message delivered within 5,000 ms of its acceptance',
    met: withBacklog.delivered === HEALTHY && summary(withBacklog.ms).max < 5000,
  }, null, 2))
} finally {
  await runCleanups(store)
}
