/**
 * A campaign to a large audience: from POST /campaigns/:id/send until a loopback
 * SMTP sink has received every message, DKIM (RSA-2048) on, direct MX delivery through a loopback DNS
 * server.
 *
 *   node_modules/.bin/bun bench/campaign.ts
 *     BENCH_RECIPIENTS=100000  subscribed contacts in the audience (the two runs: 100000 and 1000000)
 *     BENCH_DATABASE_URL=pg    a fresh PostgreSQL database (default: a fresh SQLite file, the embedded store)
 *     BENCH_ALTERNATE=2        2 runs on SQLite and 2 on PostgreSQL, alternated, then PostgreSQL's rate against SQLite's (bench/_alternate.ts)
 *     BENCH_SQLITE_SYNCHRONOUS=NORMAL   default FULL (fsync per commit)
 *     BENCH_SIGN_SECONDS=3     length of each signing-ceiling measurement
 *     BENCH_SERVER_ENV="K=V ..."   more environment for the server (e.g. BUN_JSC_* or MIMALLOC_* options)
 *     BENCH_BODY=design        the body the visual editor makes (bench/fixtures/design-body.txt: the product-update
 *                              and newsletter starters, tables, inline styles, a fallback) instead of the hand-written one
 *     BENCH_MAX_SECONDS=10800  stop waiting for the sink after this long (a busy shared machine): the figures
 *                              are then those of the messages received so far (`received` < `recipients`)
 *
 * Processes: the server (`mailctl serve --role api --role worker`, signer threads on every core), the sink
 * (bench/_sink.ts, a minimal SMTP receiver standing in for the remote MX), and this script (load: one
 * request; it also serves the DNS zone). The contacts are bulk-loaded before the server starts.
 *
 * Printed (asserts nothing):
 * - deliveredPerSecond: messages received by the sink / seconds from the send call to the last message;
 * - signatureCeilingPerSecond: RSA-2048 signatures alone, one process per core at once (bench/_sign-rate.ts),
 *   measured before and after the campaign in this same run (the machine is shared: both are shown), and
 *   ratioToCeiling = deliveredPerSecond / the mean of the two;
 * - firstMessageMs: from the send call to the first message at the sink;
 * - serverPeakRssMB: the server's VmHWM (peak resident set) from /proc at the end of the run; the RSS parts at
 *   the sampled maximum, and the largest JS heap figures of the main thread its /metrics showed;
 * - dbBytesPerRecipient: growth of the store (SQLite: the database file after a WAL checkpoint; PostgreSQL:
 *   pg_database_size) from before the send to after it, divided by the recipients;
 * - CPU per message by process and by server thread, and the load average;
 * - coresBusy: the server's, the sink's and this script's CPU from the send call to the last message, over
 *   that time times the cores (1: every core busy all along).
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { loadConfig } from '../src/config'
import { sqlitePath } from '../src/db/client'
import { ctxFor } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { createCampaign } from '../src/modules/campaigns/service'
import { createProject } from '../src/modules/projects/service'
import { freshPgDatabase } from '../test/helpers/env'
import { startTestDns } from '../test/helpers/dns'
import { freePort, lines, verifiedBenchDomain } from './_proc'
import { alternateStores } from './_alternate'

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 100_000)
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn'
const ROOT = join(import.meta.dir, '..')

/** BENCH_SERVER_ENV="K=V K2=V2": more environment for the server (experiments: BUN_JSC_*, MIMALLOC_*). */
function serverEnv(): Record<string, string> {
  return Object.fromEntries((process.env.BENCH_SERVER_ENV ?? '').split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
}

function procStat(path: string): string[] | null {
  try {
    const stat = require('node:fs').readFileSync(path, 'utf8') as string
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/** CPU seconds (user + system, all threads) of a process, from /proc (Linux). */
function cpuSeconds(pid: number): number | null {
  const f = procStat(`/proc/${pid}/stat`)
  return f ? (Number(f[11]) + Number(f[12])) / 100 : null
}

/** CPU seconds per thread name of a process. */
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

/** A /proc/<pid>/status field in kB (VmHWM: peak RSS, VmRSS: current). */
function statusKb(pid: number, field: string): number | null {
  try {
    const text = require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8') as string
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)
    return m ? Number(m[1]) : null
  } catch {
    return null
  }
}



/** RSA-2048 signatures per second with one signing process per core, all at once. */
async function signatureCeiling(): Promise<number> {
  const procs = Array.from({ length: availableParallelism() }, () => Bun.spawn([process.execPath, join(ROOT, 'bench/_sign-rate.ts')], { stdout: 'pipe', stderr: 'inherit' }))
  let total = 0
  for (const p of procs) {
    const out = JSON.parse(await new Response(p.stdout).text()) as { signatures: number; seconds: number }
    total += out.signatures / out.seconds
  }
  return Math.round(total)
}

if (await alternateStores(import.meta.path, 'deliveredPerSecond', ['firstMessageMs', 'received', 'endToEndSeconds', 'cpuMsPerMessage'])) process.exit(0)

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-campaign-'))
const pg = process.env.BENCH_DATABASE_URL === 'pg' ? await freshPgDatabase() : null
const databaseUrl = pg?.url ?? process.env.BENCH_DATABASE_URL ?? `sqlite://${join(dir, 'mailctl.db')}`
// BENCH_KEEP=1 keeps the data dir (and prints it) to look at the store afterwards.
const cleanups: Array<() => Promise<void> | void> = [() => (process.env.BENCH_KEEP ? void process.stderr.write(`bench: kept ${dir}\n`) : rmSync(dir, { recursive: true, force: true }))]
if (pg) cleanups.unshift(() => pg.drop())

/** The store's size in bytes (SQLite: the main file after folding the WAL into it). */
async function storeBytes(): Promise<number> {
  if (databaseUrl.startsWith('sqlite')) {
    const path = sqlitePath(databaseUrl)
    const db = new Database(path)
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    db.close()
    return statSync(path).size
  }
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const [row] = await client`SELECT pg_database_size(current_database())::bigint AS n`
  await client.end()
  return Number(row.n)
}

try {
  process.stderr.write(`bench: measuring the signing ceiling (${availableParallelism()} processes)\n`)
  const ceilingBefore = await signatureCeiling()

  const dns = await startTestDns()
  cleanups.unshift(() => dns.close())
  let sinkPort = 0
  let received = 0
  let firstAt = 0
  const sink = Bun.spawn([process.execPath, join(ROOT, 'bench/_sink.ts')], { env: { ...process.env, SINK_PORT: '0' }, stdout: 'pipe', stderr: 'inherit' })
  cleanups.unshift(() => { sink.kill() })
  void lines(sink.stdout, (rec) => {
    if (typeof rec.port === 'number') sinkPort = rec.port
    if (typeof rec.received === 'number') received = Math.max(received, rec.received)
    if (typeof rec.firstAt === 'number') firstAt = rec.firstAt
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
    MAILCTL_PUBLIC_URL: 'https://mail.bench-sender.test',
    MAILCTL_OUTBOUND: 'direct',
    MAILCTL_MX_PORT: String(sinkPort),
    MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8',
    MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000',
    // GET /metrics is served on the API port only with a token (README, Metrics).
    MAILCTL_METRICS_TOKEN: 'bench-metrics-token',
    MAILCTL_SMTP_INBOUND_PORT: '0',
    MAILCTL_SMTP_RELAY_PORT: '0',
    MAILCTL_LOG_LEVEL: LOG_LEVEL,
    MAILCTL_SQLITE_SYNCHRONOUS: process.env.BENCH_SQLITE_SYNCHRONOUS ?? 'FULL',
  }

  // The project, its verified domain, the audience and the campaign, written before the server starts.
  const config = loadConfig({ env })
  const deps = await createDeps(config, { log: createLogger('warn') })
  const project = await createProject(deps.store, { name: 'bench' })
  const ctx = ctxFor(deps, project.id, { kind: 'cli' })
  await verifiedBenchDomain(ctx, dns)
  const t0Load = performance.now()
  // Contact ids sort in the order of i (the fan-out walks them by id).
  const idOf = (expr: string) => deps.store.dialect === 'pg'
    ? `lpad(to_hex(${expr}), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(${expr}), 12, '0')`
    : `printf('%08x-0000-7000-8000-%012x', ${expr}, ${expr})`
  const now = Date.now()
  if (deps.store.dialect === 'pg') {
    await deps.store.exec(sql.raw(`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${idOf('i')}, '${project.id}', 'user' || i || '@sink.test', true, jsonb_build_object('firstName', 'User ' || i, 'plan', 'pro'),
        to_timestamp(${now} / 1000.0), to_timestamp(${now} / 1000.0) FROM generate_series(0, ${RECIPIENTS - 1}) AS i`))
    await deps.store.script('ANALYZE contacts')
  } else {
    await deps.store.tx((db) => deps.store.exec(sql.raw(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RECIPIENTS - 1})
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${idOf('i')}, '${project.id}', 'user' || i || '@sink.test', 1, json_object('firstName', 'User ' || i, 'plan', 'pro'), ${now}, ${now} FROM n`), db))
  }
  const loadSeconds = (performance.now() - t0Load) / 1000
  process.stderr.write(`bench: ${RECIPIENTS} contacts loaded in ${loadSeconds.toFixed(1)} s\n`)
  // BENCH_BODY=design: the body the dashboard's visual editor makes (tables, inline styles, a
  // Liquid-style fallback), from bench/fixtures/design-body.txt; otherwise the hand-written one.
  const body = process.env.BENCH_BODY === 'design'
    ? await Bun.file(join(import.meta.dir, 'fixtures', 'design-body.txt')).text()
    : `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`
  const campaign = await createCampaign(ctx, {
    name: 'Bench', subject: 'News for {{firstName}}', body, from: 'hello@bench-sender.test', fromName: 'Bench', audienceType: 'ALL', type: 'MARKETING',
  })
  await closeDeps(deps)
  const bytesBefore = await storeBytes()

  const bunArgs = (process.env.BENCH_BUN_ARGS ?? '').split(' ').filter(Boolean)
  const server = Bun.spawn([process.execPath, ...bunArgs, join(ROOT, 'cli/mailctl.ts'), 'serve', '--role', 'api', '--role', 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...env, ...serverEnv() }, stdout: 'ignore', stderr: 'pipe',
  })
  // Every role is up (the signer threads, the pipeline, the job worker) once the start line is written.
  let ready = false
  void (async () => {
    const dec = new TextDecoder()
    const reader = server.stderr.getReader()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      const text = dec.decode(value, { stream: true })
      if (text.includes('is running')) ready = true
      process.stderr.write(text)
    }
  })()
  let serverExited = false
  cleanups.unshift(async () => { if (!serverExited) { server.kill('SIGTERM'); await server.exited } })
  const base = `http://127.0.0.1:${httpPort}`
  for (let i = 0; ; i++) {
    try { if (ready && (await fetch(`${base}/health`)).ok) break } catch { /* not yet */ }
    if (i > 6000) throw new Error('server did not start')
    await Bun.sleep(50)
  }
  const headers = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }
  const rssAtStartKb = statusKb(server.pid, 'VmRSS')

  const cpu0 = { server: cpuSeconds(server.pid), sink: cpuSeconds(sink.pid), bench: process.cpuUsage(), threads: threadSeconds(server.pid) }
  process.stderr.write(`bench: sending the campaign to ${RECIPIENTS} recipients\n`)
  const sendAt = Date.now()
  const start = performance.now()
  const res = await fetch(`${base}/campaigns/${campaign.id}/send`, { method: 'POST', headers, body: '{}' })
  const sendAnswerMs = performance.now() - start
  if (res.status !== 200) throw new Error(`send answered ${res.status}: ${await res.text()}`)
  let shown = Date.now()
  let maxRssKb = 0
  // At the sampled maximum: anonymous memory (heaps), file-backed pages (the executable, mapped files), shared memory (SQLite's WAL index).
  let rssParts: Record<string, number | null> = {}
  const deadline = Date.now() + Number(process.env.BENCH_MAX_SECONDS ?? 3 * 3600) * 1000
  // The main thread's JavaScript memory from the server's own /metrics (prom-client's process metrics), the
  // largest value of each seen (every 2 s): how much of the RSS is the JS heap and what it holds outside.
  const heapMaxMB: Record<string, number> = {}
  let heapAt = 0
  while (received < RECIPIENTS && Date.now() < deadline) {
    await Bun.sleep(20)
    if (Date.now() - heapAt > 2000) {
      heapAt = Date.now()
      const text = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer bench-metrics-token' } }).then((r) => r.text(), () => '')
      for (const m of text.matchAll(/^mailctl_(nodejs_heap_size_used_bytes|nodejs_heap_size_total_bytes|nodejs_external_memory_bytes) ([0-9.e+]+)$/gm)) {
        heapMaxMB[m[1]] = Math.max(heapMaxMB[m[1]] ?? 0, Math.round(Number(m[2]) / 104857.6) / 10)
      }
    }
    const rss = statusKb(server.pid, 'VmRSS') ?? 0
    if (rss > maxRssKb) {
      maxRssKb = rss
      rssParts = { anon: statusKb(server.pid, 'RssAnon'), file: statusKb(server.pid, 'RssFile'), shmem: statusKb(server.pid, 'RssShmem') }
    }
    if (Date.now() - shown > 10_000) { shown = Date.now(); process.stderr.write(`bench: ${received} of ${RECIPIENTS} received (${Math.round(received / ((performance.now() - start) / 1000))}/s)\n`) }
  }
  const end = performance.now()
  const benchCpu = process.cpuUsage(cpu0.bench)
  // CPU seconds each process spent from the send call to the last message (null: not readable).
  const spent = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b)
  const serverCpu = spent(cpuSeconds(server.pid), cpu0.server)
  const sinkCpu = spent(cpuSeconds(sink.pid), cpu0.sink)
  const benchCpuSeconds = (benchCpu.user + benchCpu.system) / 1e6
  const perMessage = (s: number | null) => (s === null || !received ? null : Math.round((s * 1000 / received) * 1000) / 1000)
  const cpu = { server: perMessage(serverCpu), sink: perMessage(sinkCpu), benchProcess: perMessage(benchCpuSeconds) }
  // How busy the machine's cores were meanwhile: those three over the elapsed time times the cores (what is
  // left is idle, or other processes').
  const coresBusy = serverCpu === null || sinkCpu === null ? null
    : Math.round(((serverCpu + sinkCpu + benchCpuSeconds) / (((end - start) / 1000) * availableParallelism())) * 1000) / 1000
  const threads1 = threadSeconds(server.pid)
  const serverThreads = Object.fromEntries(Object.entries(threads1)
    .map(([k, v]) => [k, Math.round(((v - (cpu0.threads[k] ?? 0)) * 1000 / Math.max(1, received)) * 1000) / 1000] as const)
    .filter(([, v]) => v > 0.005))
  const peakRssKb = statusKb(server.pid, 'VmHWM')
  // Every outcome recorded: the campaign's counters say so.
  let stats: Record<string, unknown> = {}
  for (let i = 0; i < (received < RECIPIENTS ? 1 : 600); i++) {
    stats = await (await fetch(`${base}/campaigns/${campaign.id}/stats`, { headers })).json() as Record<string, unknown>
    if (stats.status === 'SENT' && stats.pending === 0) break
    await Bun.sleep(100)
  }
  server.kill('SIGTERM')
  await server.exited
  serverExited = true
  const bytesAfter = await storeBytes()
  // The run's writes reach the disk first: the kernel's write-back of a large database (3.4 GB at a million
  // recipients) took CPU from the measurement (its ceiling came out 1,713/s against 2,850 before the run).
  Bun.spawnSync(['sync'])
  process.stderr.write('bench: measuring the signing ceiling again\n')
  const ceilingAfter = await signatureCeiling()

  const seconds = (end - start) / 1000
  const rate = received / seconds
  const ceiling = (ceilingBefore + ceilingAfter) / 2
  console.log(JSON.stringify({
    store: databaseUrl.startsWith('sqlite') ? `sqlite (synchronous=${env.MAILCTL_SQLITE_SYNCHRONOUS})` : 'pg',
    recipients: RECIPIENTS, received, body: process.env.BENCH_BODY === 'design' ? 'design' : 'hand-written',
    sendAnswerMs: Math.round(sendAnswerMs),
    firstMessageMs: firstAt ? firstAt - sendAt : null,
    endToEndSeconds: Math.round(seconds * 100) / 100,
    deliveredPerSecond: Math.round(rate),
    signatureCeilingPerSecond: { before: ceilingBefore, after: ceilingAfter },
    ratioToCeiling: Math.round((rate / ceiling) * 1000) / 1000,
    serverPeakRssMB: peakRssKb === null ? null : Math.round(peakRssKb / 102.4) / 10,
    serverRssMB: {
      atStart: rssAtStartKb === null ? null : Math.round(rssAtStartKb / 102.4) / 10, sampledMax: Math.round(maxRssKb / 102.4) / 10, mainThreadJsMaxMB: heapMaxMB,
      atSampledMax: Object.fromEntries(Object.entries(rssParts).map(([k, v]) => [k, v === null ? null : Math.round(v / 102.4) / 10])),
    },
    // Per recipient queued so far (all of them once the fan-out is done).
    dbBytesPerRecipient: Math.round((bytesAfter - bytesBefore) / Math.max(1, Number(stats.queued ?? RECIPIENTS))),
    dbBytes: { before: bytesBefore, after: bytesAfter },
    stats,
    cpuMsPerMessage: cpu,
    coresBusy,
    serverCpuMsPerMessageByThread: serverThreads,
    loadAverage: loadavg().map((v) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  for (const c of cleanups) {
    try { await c() } catch { /* best effort */ }
  }
}
