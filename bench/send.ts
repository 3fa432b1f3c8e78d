/**
 * Messages per second from POST /v1/send to an SMTP sink on loopback, DKIM (RSA-2048) signing on.
 *
 *   node_modules/.bin/bun bench/send.ts
 *     BENCH_MESSAGES=20000     messages in the run
 *     BENCH_CONNECTIONS=64     HTTP connections sending back-to-back requests
 *     BENCH_RECIPIENTS=1       recipients per request (each is its own email)
 *     BENCH_DATABASE_URL=...   default: a fresh SQLite file (the embedded store)
 *     BENCH_LOG_LEVEL=info     the server's log level (info writes one line per request, as in production)
 *     BENCH_SQLITE_SYNCHRONOUS=NORMAL   default FULL (fsync per commit); NORMAL survives kill -9, not power loss
 *     BENCH_SINK=smtp-server   receive with smtp-server (test/helpers/smtp.ts) instead of the minimal sink
 *     BENCH_ALTERNATE=3        3 runs on SQLite and 3 on PostgreSQL, alternated, then PostgreSQL's rate against SQLite's (bench/_alternate.ts)
 *
 * Three processes on this machine: the server (`mailctl serve --role api --role worker`, direct MX
 * delivery through a loopback DNS server, signer threads on every core), the sink (bench/_sink.ts, a
 * minimal SMTP receiver standing in for the remote MX, so that it takes little of the two cores), and
 * this load generator (which also serves the DNS zone). The CPU each process used per message is printed.
 * The figure is end to end: from the first POST until the sink has received every message. Prints
 * figures; asserts nothing. The ceiling for RSA-2048 signatures alone on 2 cores is ~2,800/s (docs/adr/0005-own-dkim-signer.md).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { ctxFor } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { createProject } from '../src/modules/projects/service'
import { freshPgDatabase } from '../test/helpers/env'
import { startTestDns } from '../test/helpers/dns'
import { freePort, lines, verifiedBenchDomain } from './_proc'
import { alternateStores } from './_alternate'

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 1)
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn'
const CEILING = 2800
const ROOT = join(import.meta.dir, '..')

/** CPU seconds (user + system, all threads) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = require('node:fs').readFileSync(`/proc/${pid}/stat`, 'utf8') as string
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

/** CPU seconds per thread name (main "bun", "Worker", "JITWorker", "HeapHelper"...) of a process. */
function threadSeconds(pid: number): Record<string, number> {
  const fs = require('node:fs') as typeof import('node:fs')
  const out: Record<string, number> = {}
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out[name] = (out[name] ?? 0) + (Number(f[11]) + Number(f[12])) / 100
    }
  } catch { /* not Linux */ }
  return out
}

if (await alternateStores(import.meta.path, 'deliveredPerSecond', ['apiAcceptPerSecond', 'errors', 'received', 'cpuMsPerMessage'])) process.exit(0)

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-send-'))
const pg = process.env.BENCH_DATABASE_URL === 'pg' ? await freshPgDatabase() : null
const databaseUrl = pg?.url ?? process.env.BENCH_DATABASE_URL ?? `sqlite://${join(dir, 'mailctl.db')}`
const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dir, { recursive: true, force: true })]
if (pg) cleanups.unshift(() => pg.drop())

try {
  // DNS zone: the sender's DKIM key and the recipients' MX, on loopback.
  const dns = await startTestDns()
  cleanups.unshift(() => dns.close())

  // The sink, in its own process.
  let sinkPort = 0
  let received = 0
  const sinkScript = process.env.BENCH_SINK === 'smtp-server' ? 'test/helpers/smtp.ts' : 'bench/_sink.ts'
  const sink = Bun.spawn([process.execPath, join(ROOT, sinkScript)], { env: { ...process.env, SINK_PORT: '0' }, stdout: 'pipe', stderr: 'inherit' })
  cleanups.unshift(() => { sink.kill() })
  void lines(sink.stdout, (rec) => {
    if (typeof rec.port === 'number') sinkPort = rec.port
    if (typeof rec.received === 'number') received = rec.received
  })
  while (!sinkPort) await Bun.sleep(10)
  dns.set('sink.test', [{ type: 'MX', exchange: 'mx.sink.test', priority: 10 }])
  dns.set('mx.sink.test', [{ type: 'A', address: '127.0.0.1' }])

  const httpPort = freePort()
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    MAILCTL_DATA_DIR: dir,
    MAILCTL_JWT_SECRET: 'bench-secret',
    MAILCTL_SECRET: 'bench-secret-shared-by-every-node',
    MAILCTL_HOSTNAME: 'mx.bench.test',
    MAILCTL_HTTP_PORT: String(httpPort),
    MAILCTL_HTTP_HOST: '127.0.0.1',
    MAILCTL_OUTBOUND: 'direct',
    MAILCTL_MX_PORT: String(sinkPort),
    MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8',
    MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000',
    MAILCTL_SMTP_INBOUND_PORT: '0',
    MAILCTL_SMTP_RELAY_PORT: '0',
    MAILCTL_LOG_LEVEL: LOG_LEVEL,
    MAILCTL_SQLITE_SYNCHRONOUS: process.env.BENCH_SQLITE_SYNCHRONOUS ?? 'FULL',
  }

  // A project and its verified sending domain, written before the server starts.
  const config = loadConfig({ env })
  const deps = await createDeps(config, { log: createLogger('warn') })
  const project = await createProject(deps.store, { name: 'bench' })
  const ctx = ctxFor(deps, project.id, { kind: 'cli' })
  await verifiedBenchDomain(ctx, dns)
  await closeDeps(deps)

  const bunArgs = (process.env.BENCH_BUN_ARGS ?? '').split(' ').filter(Boolean) // e.g. --cpu-prof-md --cpu-prof-dir=/tmp/p
  const server = Bun.spawn([process.execPath, ...bunArgs, join(ROOT, 'cli/mailctl.ts'), 'serve', '--role', 'api', '--role', 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'ignore', stderr: 'inherit',
  })
  cleanups.unshift(async () => { server.kill('SIGTERM'); await server.exited })
  const base = `http://127.0.0.1:${httpPort}`
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${base}/health`)).ok) break } catch { /* not yet */ }
    if (i > 300) throw new Error('server did not start')
    await Bun.sleep(50)
  }

  const html = `<html><body><h1>Hello {{name}}</h1>${'<p>Thanks for your order {{order}}. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>'.repeat(25)}<a href="{{unsubscribeUrl}}">unsubscribe</a></body></html>`
  const headers = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }
  const requests = Math.ceil(MESSAGES / RECIPIENTS)
  let next = 0
  let errors = 0
  let accepted = 0
  const latencies: number[] = []
  const cpu0 = { server: cpuSeconds(server.pid), sink: cpuSeconds(sink.pid), bench: process.cpuUsage(), threads: threadSeconds(server.pid) }
  const start = performance.now()
  process.stderr.write(`bench: sending ${MESSAGES} messages (${RECIPIENTS} per request, ${CONNECTIONS} connections)\n`)
  let apiDone = 0
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    for (;;) {
      const i = next++
      if (i >= requests) return
      const to = Array.from({ length: RECIPIENTS }, (_, k) => `user${i * RECIPIENTS + k}@sink.test`)
      const body = JSON.stringify({ to: RECIPIENTS === 1 ? to[0] : to, from: 'Bench <hello@bench-sender.test>', subject: 'Order {{order}} for {{name}}', body: html, data: { name: `User ${i}`, order: i } })
      const t0 = performance.now()
      try {
        const res = await fetch(`${base}/v1/send`, { method: 'POST', headers, body })
        await res.arrayBuffer()
        if (res.status === 200) accepted += RECIPIENTS
        else errors++
      } catch {
        errors++
      }
      latencies.push(performance.now() - t0)
    }
  }))
  apiDone = performance.now()
  const deadline = Date.now() + 600_000
  let shown = Date.now()
  while (received < accepted && Date.now() < deadline) {
    await Bun.sleep(20)
    if (Date.now() - shown > 5000) { shown = Date.now(); process.stderr.write(`bench: ${received} of ${accepted} received\n`) }
  }
  const end = performance.now()
  const benchCpu = process.cpuUsage(cpu0.bench)
  const perMessage = (a: number | null, b: number | null) => (a === null || b === null || !received ? null : Math.round(((a - b) * 1000 / received) * 1000) / 1000)
  const cpu = {
    server: perMessage(cpuSeconds(server.pid), cpu0.server),
    sink: perMessage(cpuSeconds(sink.pid), cpu0.sink),
    loadGenerator: Math.round(((benchCpu.user + benchCpu.system) / 1000 / Math.max(1, received)) * 1000) / 1000,
  }
  const threads1 = threadSeconds(server.pid)
  const serverThreads = Object.fromEntries(Object.entries(threads1)
    .map(([k, v]) => [k, Math.round(((v - (cpu0.threads[k] ?? 0)) * 1000 / Math.max(1, received)) * 1000) / 1000] as const)
    .filter(([, v]) => v > 0.005))

  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
  const apiSeconds = (apiDone - start) / 1000
  const totalSeconds = (end - start) / 1000
  const rate = received / totalSeconds
  console.log(JSON.stringify({
    sink: sinkScript,
    store: databaseUrl.startsWith('sqlite') ? `sqlite (synchronous=${env.MAILCTL_SQLITE_SYNCHRONOUS})` : 'pg',
    messages: accepted, requests, recipientsPerRequest: RECIPIENTS, connections: CONNECTIONS, errors, received,
    apiAcceptPerSecond: Math.round(accepted / apiSeconds),
    apiLatencyMs: { p50: Math.round(pct(0.5) * 10) / 10, p99: Math.round(pct(0.99) * 10) / 10 },
    endToEndSeconds: Math.round(totalSeconds * 100) / 100,
    deliveredPerSecond: Math.round(rate),
    ratioToSignatureCeiling: Math.round((rate / CEILING) * 1000) / 1000,
    cpuMsPerMessage: cpu,
    serverCpuMsPerMessageByThread: serverThreads,
    loadAverage: require('node:os').loadavg().map((v: number) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  for (const c of cleanups) {
    try { await c() } catch { /* best effort */ }
  }
}
