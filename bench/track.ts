/**
 * POST /v1/track over real HTTP on SQLite, new and existing contacts mixed, 64 keep-alive connections.
 * Target: >= 10,000 requests/s sustained with p99 < 25 ms, durable: an answered event survives
 * kill -9 of the server.
 *
 *   node_modules/.bin/bun bench/track.ts
 *   (BENCH_SECONDS=10 BENCH_WARMUP_SECONDS=15 BENCH_CONNECTIONS=64 BENCH_SYNC=FULL,NORMAL BENCH_LOG_LEVEL=info BENCH_NEW_RATIO=0.5
 *    BENCH_DRAIN=1: the server also runs the events' outbox drainer, as a node with every role does;
 *    BENCH_CONSUMED=1: the project has an enabled workflow, so its events go to the outbox (without one,
 *    a project's events write no outbox row: src/modules/events/interest.ts);
 *    BENCH_BUN_ARGS="--cpu-prof": extra bun arguments for the server child, e.g. a CPU profile written at SIGTERM;
 *    BENCH_DATABASE_URL=pg: on a fresh PostgreSQL database each run instead of SQLite, see below)
 *
 * On PostgreSQL (BENCH_DATABASE_URL=pg) there is one run of mailctl, then, under the same load, the ceiling:
 * a bare Elysia + postgres.js server doing one durable INSERT per request (bench/_pg-ceiling-server.ts),
 * and mailctl's ratio to it. CPU per request counts the server's process and the PostgreSQL backends of
 * its database (from /proc). Target: >= 0.6 of the ceiling, p99 < 50 ms, no errors.
 *
 * For each synchronous mode: the server (a child process, request log lines written to /dev/null as in
 * production unless BENCH_LOG_LEVEL=warn) starts with 10,000 existing contacts; a warm-up, then the
 * measured run. Half the requests name a new contact, half one of the existing ones (with data that
 * sometimes changes). Then the durability check: a fresh server under the same load is killed with
 * SIGKILL mid-run, and every event whose 200 answer arrived before the kill is looked up in the database
 * file. Prints figures; asserts nothing.
 *
 * Server CPU is printed per request in all and per thread (Linux /proc): on a file-backed database the
 * track writes run on the track writer thread ("Worker", src/modules/events/writer.ts) and a second
 * "Worker" checkpoints the WAL; "main" serves HTTP. Other benchmarks on the machine change the wall-clock
 * figures far more than the CPU ones.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { backendCpu, cpuMs, fmt, runLoad, startChild, threadCpuLine, threadCpuMs, type LoadResult, type Req } from './_load'
import { freshPgDatabase } from '../test/helpers/env'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
/**
 * Load before each measured run, the same for mailctl and the ceiling: the steady state of a server that
 * has compiled its hot code. Measured on PostgreSQL (2 cores): mailctl's JIT threads spent 63, 45, 15 and
 * 10 µs per request in its first four 5-s windows of load and its main thread 233, 178, 175, 158; after
 * the 2 s this bench used to wait, its figure was mostly the compiler's.
 */
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 15)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const MODES = (process.env.BENCH_SYNC ?? 'FULL,NORMAL').split(',').map((s) => s.trim().toUpperCase())
const NEW_RATIO = Number(process.env.BENCH_NEW_RATIO ?? 0.5)
const SEED = 10_000
const SERVER = join(import.meta.dir, '_track-server.ts')
const CEILING_SERVER = join(import.meta.dir, '_pg-ceiling-server.ts')
const PG = process.env.BENCH_DATABASE_URL === 'pg'

interface Info { port: number; publicKey: string; synchronous: string }

function requests(publicKey: string, tag: string) {
  const plans = ['free', 'pro', 'team']
  return (conn: number, i: number): Req => {
    const existing = Math.random() >= NEW_RATIO
    const email = existing ? `seed${Math.floor(Math.random() * SEED)}@example.com` : `new-${tag}-${conn}-${i}@example.com`
    const body = JSON.stringify({ email, event: i % 5 ? 'page.viewed' : 'order.placed', data: { plan: plans[i % 3], source: { value: 'bench', persistent: false } } })
    return { method: 'POST', path: '/v1/track', headers: { authorization: `Bearer ${publicKey}`, 'content-type': 'application/json' }, body }
  }
}

async function throughput(mode: string, databaseUrl?: string) {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-track-'))
  const { proc, info, stderrTail } = await startChild<Info>(SERVER, [dir, String(SEED)], databaseUrl ? { BENCH_DB_URL: databaseUrl } : { MAILCTL_SQLITE_SYNCHRONOUS: mode })
  try {
    let bad = ''
    const next = requests(info.publicKey, 'w')
    await runLoad({ port: info.port, connections: CONNECTIONS, seconds: WARMUP, next, onAnswer: (a) => { if (a.status !== 200 && !bad) bad = `${a.status} ${a.body}` } })
    if (bad) throw new Error(`track answered ${bad}\n${stderrTail()}`)
    const cpu0 = cpuMs(proc.pid)
    const threads0 = threadCpuMs(proc.pid)
    const backends = databaseUrl ? await backendCpu(databaseUrl) : null
    const self0 = process.cpuUsage()
    const r = await runLoad({ port: info.port, connections: CONNECTIONS, seconds: SECONDS, next: requests(info.publicKey, 'm') })
    const serverCpu = cpuMs(proc.pid) - cpu0
    const threads = threadCpuLine(proc.pid, threads0, threadCpuMs(proc.pid), r.requests)
    const self = process.cpuUsage(self0)
    const backendMs = backends ? await backends() : 0
    console.log(fmt(databaseUrl ? 'mailctl, PostgreSQL' : `synchronous=${info.synchronous}`, r))
    const pgPart = backends ? `, PostgreSQL backends ${((backendMs / r.requests) * 1000).toFixed(0)} µs/request (server + backends ${(((serverCpu + backendMs) / r.requests) * 1000).toFixed(0)})` : ''
    console.log(`  server CPU ${((serverCpu / r.requests) * 1000).toFixed(0)} µs/request (${(serverCpu / 1000 / r.seconds * 100).toFixed(0)}% of a core)${pgPart}; load generator ${(((self.user + self.system) / 1000) / r.requests * 1000).toFixed(0)} µs/request`)
    console.log(`  server threads, µs/request: ${threads}`)
    return r
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
    await Bun.sleep(50)
    const stats = /\{"groupCommit".*\}/.exec(stderrTail())
    if (stats) console.log(`  ${stats[0]}`)
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The ceiling on PostgreSQL: a bare Elysia + postgres.js server, one INSERT per request, the same load. */
async function pgCeiling(databaseUrl: string): Promise<LoadResult> {
  const { proc, info } = await startChild<{ port: number }>(CEILING_SERVER, [databaseUrl])
  try {
    const next = requests('none', 'c')
    await runLoad({ port: info.port, connections: CONNECTIONS, seconds: WARMUP, next })
    const cpu0 = cpuMs(proc.pid)
    const backends = await backendCpu(databaseUrl)
    const r = await runLoad({ port: info.port, connections: CONNECTIONS, seconds: SECONDS, next: requests('none', 'd') })
    const serverCpu = cpuMs(proc.pid) - cpu0
    const backendMs = await backends()
    console.log(fmt('ceiling: Elysia + postgres.js, 1 INSERT', r))
    console.log(`  server CPU ${((serverCpu / r.requests) * 1000).toFixed(0)} µs/request, PostgreSQL backends ${((backendMs / r.requests) * 1000).toFixed(0)} µs/request`)
    return r
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
}

/** kill -9 of a PostgreSQL node mid-load: every event answered 200 before the kill must be in the database. */
async function pgDurability(): Promise<number> {
  const db = await freshPgDatabase()
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-kill-'))
  const { proc, info } = await startChild<Info>(SERVER, [dir, String(SEED)], { BENCH_DB_URL: db.url })
  const sql = postgres(db.url, { max: 1, onnotice: () => {} })
  try {
    const answered: string[] = []
    let killed = false
    const killAfterMs = 1500 + Math.random() * 1000
    setTimeout(() => { killed = true; proc.kill('SIGKILL') }, killAfterMs)
    await runLoad({
      port: info.port, connections: CONNECTIONS, seconds: 10, next: requests(info.publicKey, 'k'), stopWhen: () => killed,
      onAnswer: (a) => { if (a.status === 200 && !killed) answered.push((JSON.parse(a.body) as { data: { event: string } }).data.event) },
    })
    await proc.exited
    const found = new Set<string>()
    for (let i = 0; i < answered.length; i += 5000) {
      for (const r of await sql<Array<{ id: string }>>`SELECT id FROM events WHERE id = ANY(${answered.slice(i, i + 5000)}::text[])`) found.add(r.id)
    }
    const missing = answered.length - found.size
    console.log(`kill -9 after ${(killAfterMs / 1000).toFixed(1)} s, PostgreSQL: ${answered.length} events answered 200, ${missing} of them missing`)
    return missing
  } finally {
    if (!proc.killed) proc.kill('SIGKILL')
    await sql.end()
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function durability(mode: string) {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-kill-'))
  const { proc, info } = await startChild<Info>(SERVER, [dir, String(SEED)], { MAILCTL_SQLITE_SYNCHRONOUS: mode })
  try {
    const answered: string[] = []
    let killed = false
    const killAfterMs = 1500 + Math.random() * 1000
    setTimeout(() => { killed = true; proc.kill('SIGKILL') }, killAfterMs)
    await runLoad({
      port: info.port, connections: CONNECTIONS, seconds: 10, next: requests(info.publicKey, 'k'),
      stopWhen: () => killed,
      onAnswer: (a) => {
        if (a.status === 200 && !killed) answered.push((JSON.parse(a.body) as { data: { event: string } }).data.event)
      },
    })
    await proc.exited
    const db = new Database(join(dir, 'mailctl.db'), { readonly: true })
    const has = db.query('SELECT 1 FROM events WHERE id = ?')
    let missing = 0
    for (const id of answered) if (!has.get(id)) missing++
    const stored = (db.query("SELECT count(*) AS n FROM events WHERE name IN ('page.viewed', 'order.placed')").get() as { n: number }).n
    db.close()
    console.log(`kill -9 after ${(killAfterMs / 1000).toFixed(1)} s, synchronous=${info.synchronous}: ${answered.length} events answered 200, ${missing} of them missing after restart (${stored} stored in all)`)
    return missing
  } finally {
    if (!proc.killed) proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
}

if (PG) {
  console.log(`POST /v1/track, PostgreSQL, ${CONNECTIONS} connections, ${SECONDS} s measured after ${WARMUP} s warm-up, ${Math.round(NEW_RATIO * 100)}% new contacts, ${SEED} existing; request logs ${process.env.BENCH_LOG_LEVEL ?? 'info'} -> /dev/null; load average ${loadavg().map((v) => v.toFixed(2)).join(' ')}`)
  const mine = await freshPgDatabase()
  let r: LoadResult
  try { r = await throughput('pg', mine.url) } finally { await mine.drop() }
  const bare = await freshPgDatabase()
  let c: LoadResult
  try { c = await pgCeiling(bare.url) } finally { await bare.drop() }
  const ratio = r.rps / c.rps
  const ok = ratio >= 0.6 && r.p99 < 50 && r.errors === 0
  console.log(`  mailctl / ceiling ${ratio.toFixed(2)}; target >= 0.6 of the ceiling, p99 < 50 ms, 0 errors: ${ok ? 'met' : 'NOT met'}; load average ${loadavg().map((v) => v.toFixed(2)).join(' ')}`)
  await pgDurability()
  process.exit(0)
}
console.log(`POST /v1/track, SQLite, ${CONNECTIONS} connections, ${SECONDS} s measured after ${WARMUP} s warm-up, ${Math.round(NEW_RATIO * 100)}% new contacts, ${SEED} existing; request logs ${process.env.BENCH_LOG_LEVEL ?? 'info'} -> /dev/null`)
for (const mode of MODES) {
  const r = await throughput(mode)
  const ok = r.rps >= 10_000 && r.p99 < 25
  console.log(`  target >= 10,000 req/s with p99 < 25 ms: ${ok ? 'met' : 'NOT met'}`)
}
for (const mode of MODES) await durability(mode)
