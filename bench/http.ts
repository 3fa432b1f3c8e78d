/**
 * Authenticated requests/second vs a bare Elysia "hello" route, measured in the same run on loopback.
 *
 *   node_modules/.bin/bun bench/http.ts            (BENCH_SECONDS=5 BENCH_CONNECTIONS=32 BENCH_LOG_LEVEL=info)
 *
 * The servers run in a child process; this process is the load generator (keep-alive fetch, a fixed number
 * of connections each sending back-to-back requests). The project holds 1,000 contacts. The cheap
 * authenticated endpoint of the target is GET /contacts/:id with a secret key: key lookup (SHA-256, cached
 * read), the per-project rate limiter, one indexed SELECT, the response schema. GET /contacts?limit=1 is
 * also measured: a page plus the exact `total` of the first page (a count over the project's contacts).
 * Two diagnostic targets separate costs: GET /health (request id, envelope, log line; no key) and a
 * harness-only route behind the API-key guard with an empty handler. The server's CPU time per request
 * (from /proc) is printed for each target: it is steadier than req/s on a shared machine. Request log lines are written (to /dev/null) as in production unless BENCH_LOG_LEVEL=warn.
 * Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const WARMUP_SECONDS = 1

interface Result { name: string; requests: number; errors: number; seconds: number; p50: number; p99: number; serverCpuMs: number }

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux). */
function cpuMs(pid: number): number {
  const stat = require('node:fs').readFileSync(`/proc/${pid}/stat`, 'utf8') as string
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}
let serverPid = 0

async function load(name: string, url: string, headers: Record<string, string>, seconds: number): Promise<Result> {
  const latencies: number[] = []
  let errors = 0
  const until = performance.now() + seconds * 1000
  const start = performance.now()
  const cpu0 = cpuMs(serverPid)
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (performance.now() < until) {
      const t0 = performance.now()
      try {
        const res = await fetch(url, { headers })
        await res.arrayBuffer()
        if (res.status !== 200) errors++
      } catch {
        errors++
      }
      latencies.push(performance.now() - t0)
    }
  }))
  const elapsed = (performance.now() - start) / 1000
  const serverCpuMs = cpuMs(serverPid) - cpu0
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0
  return { name, requests: latencies.length, errors, seconds: elapsed, p50: pct(0.5), p99: pct(0.99), serverCpuMs }
}

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-'))
const child = Bun.spawn([process.execPath, join(import.meta.dir, '_http-server.ts'), dir], {
  env: { ...process.env }, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe',
})
serverPid = child.pid
try {
  const reader = child.stderr.getReader()
  let buf = ''
  while (!buf.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`bench server exited: ${buf}`)
    buf += new TextDecoder().decode(value)
  }
  const info = JSON.parse(buf.slice(0, buf.indexOf('\n'))) as { hello: number; api: number; secretKey: string; contactId: string; contacts: number }
  const targets: Array<{ name: string; url: string; headers: Record<string, string> }> = [
    { name: 'hello (bare Elysia)', url: `http://127.0.0.1:${info.hello}/`, headers: {} },
    { name: 'GET /contacts/:id (sk_ key)', url: `http://127.0.0.1:${info.api}/contacts/${info.contactId}`, headers: { authorization: `Bearer ${info.secretKey}` } },
    { name: 'GET /contacts?limit=1 (sk_ key)', url: `http://127.0.0.1:${info.api}/contacts?limit=1`, headers: { authorization: `Bearer ${info.secretKey}` } },
    { name: 'GET /health (core, no key)', url: `http://127.0.0.1:${info.api}/health`, headers: {} },
    { name: 'guard only (sk_ key, empty handler)', url: `http://127.0.0.1:${info.api}/bench/guard-only`, headers: { authorization: `Bearer ${info.secretKey}` } },
  ]
  for (const t of targets.slice(1)) {
    const check = await fetch(t.url, { headers: t.headers })
    if (check.status !== 200) throw new Error(`${t.name} answered ${check.status}: ${await check.text()}`)
  }
  const results: Result[] = []
  // Interleaved rounds (hello, api, hello, api) so that background load on a shared machine hits both alike.
  for (let round = 0; round < 2; round++) {
    for (const t of targets) {
      await load(t.name, t.url, t.headers, WARMUP_SECONDS)
      results.push(await load(t.name, t.url, t.headers, SECONDS / 2))
    }
  }
  const merged = targets.map((t) => {
    const rs = results.filter((r) => r.name === t.name)
    const requests = rs.reduce((a, r) => a + r.requests, 0)
    const seconds = rs.reduce((a, r) => a + r.seconds, 0)
    const cpu = rs.reduce((a, r) => a + r.serverCpuMs, 0)
    return { name: t.name, rps: requests / seconds, errors: rs.reduce((a, r) => a + r.errors, 0), p50: Math.max(...rs.map((r) => r.p50)), p99: Math.max(...rs.map((r) => r.p99)), cpuUs: (cpu * 1000) / requests }
  })
  console.log(`loopback, ${CONNECTIONS} connections, ${SECONDS}s per target (two interleaved rounds), ${info.contacts} contacts, request logs: ${process.env.BENCH_LOG_LEVEL ?? 'info'}`)
  for (const m of merged) {
    console.log(`${m.name.padEnd(34)} ${m.rps.toFixed(0).padStart(8)} req/s   p50 ${m.p50.toFixed(2)} ms   p99 ${m.p99.toFixed(2)} ms   server CPU ${m.cpuUs.toFixed(0)} µs/request   errors ${m.errors}`)
  }
  const pct = (i: number) => `${((merged[i].rps / merged[0].rps) * 100).toFixed(1)}%`
  console.log(`ratio GET /contacts/:id / hello: ${pct(1)} (target >= 60%)`)
  console.log(`ratio GET /contacts?limit=1 (page + exact total of ${info.contacts}) / hello: ${pct(2)}`)
  console.log(`ratio /health / hello: ${pct(3)}; guard only / hello: ${pct(4)} (diagnostics: the foundation's own cost)`)
} finally {
  child.kill()
  await child.exited
  rmSync(dir, { recursive: true, force: true })
}
