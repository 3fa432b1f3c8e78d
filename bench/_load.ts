/**
 * A light HTTP/1.1 load generator for the benchmarks: N keep-alive TCP connections (Bun.connect), each
 * sending its next request as soon as the previous answer is complete. Cheaper than fetch, so more of
 * the shared CPU is left to the server under test. Responses must carry Content-Length (Bun's do).
 */
import postgres from 'postgres'

export interface Req { method: string; path: string; headers?: Record<string, string>; body?: string }
export interface Answer { status: number; body: string; ms: number }
export interface LoadResult { requests: number; errors: number; seconds: number; rps: number; p50: number; p90: number; p99: number; max: number }

export interface LoadOptions {
  port: number
  connections: number
  seconds: number
  /** Builds request number `i` of connection `conn`. */
  next(conn: number, i: number): Req
  /** Told about every complete answer (collect ids, check statuses). */
  onAnswer?(a: Answer, req: Req): void
  /** Stop early (e.g. after the server was killed). */
  stopWhen?(): boolean
}

const enc = new TextEncoder()
const CRLF2 = Buffer.from('\r\n\r\n')
const dec = new TextDecoder()

function encode(r: Req): Uint8Array {
  const body = r.body ?? ''
  const bodyBytes = enc.encode(body)
  let head = `${r.method} ${r.path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: keep-alive\r\n`
  for (const [k, v] of Object.entries(r.headers ?? {})) head += `${k}: ${v}\r\n`
  if (body) head += `content-length: ${bodyBytes.length}\r\n`
  head += '\r\n'
  const h = enc.encode(head)
  const out = new Uint8Array(h.length + bodyBytes.length)
  out.set(h)
  out.set(bodyBytes, h.length)
  return out
}

function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = []
  let errors = 0
  const start = performance.now()
  const until = start + o.seconds * 1000
  await Promise.all(Array.from({ length: o.connections }, (_, conn) => new Promise<void>((resolveConn) => {
    let i = 0
    let buf: Buffer = Buffer.alloc(0)
    let sentAt = 0
    let current: Req | null = null
    let finished = false
    const finish = (sock?: { end(): void }) => { if (finished) return; finished = true; try { sock?.end() } catch { /* closed */ } resolveConn() }
    const send = (sock: { write(b: Uint8Array): number }) => {
      if (performance.now() >= until || o.stopWhen?.()) return false
      current = o.next(conn, i++)
      sentAt = performance.now()
      sock.write(encode(current))
      return true
    }
    Bun.connect({
      hostname: '127.0.0.1',
      port: o.port,
      socket: {
        open(sock) { if (!send(sock)) finish(sock) },
        data(sock, chunk) {
          buf = buf.length ? Buffer.concat([buf, chunk]) : Buffer.from(chunk)
          for (;;) {
            const end = buf.indexOf(CRLF2)
            if (end < 0) return
            const head = buf.toString('latin1', 0, end)
            const m = /content-length:\s*(\d+)/i.exec(head)
            if (!m) { errors++; finish(sock); return }
            const len = Number(m[1])
            if (buf.length < end + 4 + len) return
            const status = Number(head.slice(9, 12))
            const body = o.onAnswer ? buf.toString('utf8', end + 4, end + 4 + len) : ''
            buf = buf.subarray(end + 4 + len)
            const ms = performance.now() - sentAt
            latencies.push(ms)
            if (status >= 400) errors++
            if (o.onAnswer && current) o.onAnswer({ status, body, ms }, current)
            if (!send(sock)) { finish(sock); return }
          }
        },
        close() { finish() },
        error() { errors++; finish() },
        connectError() { errors++; finish() },
      },
    }).catch(() => { errors++; finish() })
  })))
  const seconds = (performance.now() - start) / 1000
  const sorted = Float64Array.from(latencies).sort()
  return {
    requests: latencies.length, errors, seconds, rps: latencies.length / seconds,
    p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] ?? 0,
  }
}

/** Starts a bench child process and waits for its first JSON line on stderr. */
export async function startChild<T>(script: string, args: string[], env: Record<string, string | undefined> = {}): Promise<{ proc: ReturnType<typeof Bun.spawn>; info: T; stderrTail(): string }> {
  const bunArgs = (process.env.BENCH_BUN_ARGS ?? '').split(' ').filter(Boolean)
  const proc = Bun.spawn([process.execPath, ...bunArgs, script, ...args], { env: { ...process.env, ...env }, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`bench child exited: ${text}`)
    text += dec.decode(value)
  }
  // Keep draining stderr so that the child never blocks on a full pipe; keep the tail for diagnostics.
  const tail = { text: text.slice(text.indexOf('\n') + 1) }
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
      if (done) return
      tail.text = (tail.text + dec.decode(value)).slice(-4000)
    }
  })()
  return { proc, info: JSON.parse(text.slice(0, text.indexOf('\n'))) as T, stderrTail: () => tail.text }
}

export function fmt(name: string, r: LoadResult): string {
  return `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p90 ${r.p90.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  max ${r.max.toFixed(1)} ms  errors ${r.errors}  (${r.requests} in ${r.seconds.toFixed(1)} s)`
}

/** CPU time (user + system, ms) used so far by process `pid` (Linux /proc). */
export function cpuMs(pid: number): number {
  try {
    const stat = require('node:fs').readFileSync(`/proc/${pid}/stat`, 'utf8') as string
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    return (ticks * 1000) / 100
  } catch {
    return NaN
  }
}

/** CPU time (user + system, ms) used so far by each thread of process `pid`, by thread id (Linux /proc). */
export function threadCpuMs(pid: number): Map<string, { name: string; ms: number; sysMs: number }> {
  const out = new Map<string, { name: string; ms: number; sysMs: number }>()
  const fs = require('node:fs') as typeof import('node:fs')
  let tids: string[] = []
  try { tids = fs.readdirSync(`/proc/${pid}/task`) } catch { return out }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(tid, { name, ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100, sysMs: (Number(fields[12]) * 1000) / 100 })
    } catch { /* thread ended */ }
  }
  return out
}

/** Per-thread CPU between two `threadCpuMs` snapshots, busiest first: "main 61 (sys 9), Worker 40 (sys 12)" (µs per request). */
export function threadCpuLine(pid: number, before: ReturnType<typeof threadCpuMs>, after: ReturnType<typeof threadCpuMs>, requests: number): string {
  const rows: Array<[string, number, number]> = []
  for (const [tid, a] of after) {
    const b = before.get(tid)
    const us = ((a.ms - (b?.ms ?? 0)) / requests) * 1000
    const sys = ((a.sysMs - (b?.sysMs ?? 0)) / requests) * 1000
    if (us >= 1) rows.push([tid === String(pid) ? 'main' : a.name, us, sys])
  }
  return rows.sort((x, y) => y[1] - x[1]).map(([n, us, sys]) => `${n} ${us.toFixed(0)}${sys >= 1 ? ` (sys ${sys.toFixed(0)})` : ''}`).join(', ')
}

/**
 * The PostgreSQL backends serving clients of database `url` (their pids), read with a connection of its
 * own: not autovacuum's workers, whose coming and going would be counted whole or lost.
 */
async function backendPids(url: string): Promise<number[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<Array<{ pid: number }>>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type IN ('client backend', 'parallel worker') AND pid <> pg_backend_pid()`
    return rows.map((r) => r.pid)
  } finally { await sql.end() }
}

/** CPU ms of the backends of `url`, from /proc, at two times: call the result again to get the difference. */
export async function backendCpu(url: string): Promise<() => Promise<number>> {
  const before = new Map((await backendPids(url)).map((pid) => [pid, cpuMs(pid)]))
  return async () => {
    let ms = 0
    for (const pid of await backendPids(url)) {
      const now = cpuMs(pid)
      if (Number.isFinite(now)) ms += now - (before.get(pid) ?? 0)
    }
    return ms
  }
}
