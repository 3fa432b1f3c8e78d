/**
 * A PostgreSQL outage under load: two `mailctl serve` nodes on a private PostgreSQL
 * server (test/helpers/private-pg.ts; the shared server is never touched), clients writing contacts
 * through both, and the database stopped at once (`pg_ctl -m immediate`, as a crash) for a while, then
 * started again.
 *
 *   node_modules/.bin/bun bench/outage.ts
 *     BENCH_CLIENTS=16        concurrent clients (half on each node)
 *     BENCH_OUTAGE_MS=10000   how long the database is down
 *     BENCH_MODE=stop         or freeze: the server's processes are stopped (SIGSTOP), a database that
 *                             does not answer, instead of one that refuses connections
 *
 * Prints (asserts nothing): requests by status before, during and after the outage; the slowest answer in
 * each phase and how many took over 5 s (the figure: none); requests still open at the end; and for each
 * node the time from the database answering again to its /ready answering 200 (the figure: < 2 s). The
 * ceiling of the latency is the phase before the outage, measured in the same run.
 */
import { join } from 'node:path'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import postgres from 'postgres'
import { loadConfig } from '../src/config'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { createProject } from '../src/modules/projects/service'
import { startPrivatePg } from '../test/helpers/private-pg'
import { freePort } from './_proc'

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16)
const OUTAGE_MS = Number(process.env.BENCH_OUTAGE_MS ?? 10_000)
const MODE = process.env.BENCH_MODE === 'freeze' ? 'freeze' : 'stop'
const ROOT = join(import.meta.dir, '..')

const pg = await startPrivatePg()
const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-outage-'))
const nodes: Array<ReturnType<typeof Bun.spawn>> = []
try {
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} })
  await admin.unsafe('CREATE DATABASE bench')
  await admin.end()
  const databaseUrl = pg.url.replace(/\/postgres$/, '/bench')
  const env = (port: number): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    DATABASE_URL: databaseUrl, MAILCTL_DATA_DIR: dir, MAILCTL_SECRET: 'bench-secret-shared-by-every-node',
    MAILCTL_HOSTNAME: 'mx.bench.test', MAILCTL_HTTP_PORT: String(port), MAILCTL_HTTP_HOST: '127.0.0.1',
    MAILCTL_OUTBOUND: 'capture', MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000', MAILCTL_SMTP_INBOUND_PORT: '0',
    MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_LOG_LEVEL: 'error', MAILCTL_HTTP_REUSE_PORT: 'false',
  })
  const ports = [freePort(), freePort()]
  const deps = await createDeps(loadConfig({ env: env(ports[0]) }), { log: createLogger('error') })
  const project = await createProject(deps.store, { name: 'bench' })
  await closeDeps(deps)
  for (const port of ports) {
    nodes.push(Bun.spawn([process.execPath, join(ROOT, 'cli/mailctl.ts'), 'serve', '--role', 'api', '--role', 'worker'], { env: env(port), stdout: 'ignore', stderr: 'ignore' }))
  }
  const bases = ports.map((p) => `http://127.0.0.1:${p}`)
  for (const base of bases) {
    for (let i = 0; ; i++) {
      try { if ((await fetch(`${base}/ready`)).ok) break } catch { /* not yet */ }
      if (i > 3000) throw new Error(`${base} did not become ready`)
      await Bun.sleep(20)
    }
  }

  type Phase = 'before' | 'during' | 'after'
  let phase: Phase = 'before'
  const stats: Record<Phase, { n: number; byStatus: Record<string, number>; maxMs: number; over5s: number; sumMs: number }> = {
    before: { n: 0, byStatus: {}, maxMs: 0, over5s: 0, sumMs: 0 },
    during: { n: 0, byStatus: {}, maxMs: 0, over5s: 0, sumMs: 0 },
    after: { n: 0, byStatus: {}, maxMs: 0, over5s: 0, sumMs: 0 },
  }
  let open = 0
  let running = true
  const headers = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }
  const client = async (k: number) => {
    const base = bases[k % bases.length]
    for (let i = 0; running; i++) {
      const started: Phase = phase
      const t0 = performance.now()
      open++
      let status = 'error'
      try {
        const res = await fetch(`${base}/contacts`, { method: 'POST', headers, body: JSON.stringify({ email: `c${k}.${i}@bench.test`, data: { n: i } }) })
        status = String(res.status)
        await res.arrayBuffer()
      } catch { /* connection error */ }
      open--
      const ms = performance.now() - t0
      const s = stats[started]
      s.n++
      s.sumMs += ms
      s.byStatus[status] = (s.byStatus[status] ?? 0) + 1
      s.maxMs = Math.max(s.maxMs, ms)
      if (ms > 5000) s.over5s++
      if (status !== '201' && status !== '200') await Bun.sleep(50)
    }
  }
  const clients = Array.from({ length: CLIENTS }, (_, k) => client(k))
  await Bun.sleep(5_000)
  phase = 'during'
  if (MODE === 'stop') await pg.stop()
  else await pg.freeze(true)
  await Bun.sleep(OUTAGE_MS)
  if (MODE === 'stop') await pg.start()
  else await pg.freeze(false)
  const back = performance.now()
  phase = 'after'
  /** Per node, the last /ready answer that was not 200 (what kept it unready), with its time since `back`. */
  const lastNotReady: Array<string | null> = bases.map(() => null)
  const readyAgainMs = await Promise.all(bases.map(async (base, k) => {
    for (;;) {
      try {
        const res = await fetch(`${base}/ready`)
        if (res.ok) return Math.round(performance.now() - back)
        lastNotReady[k] = `${Math.round(performance.now() - back)} ms: ${res.status} ${await res.text()}`
      } catch (err) { lastNotReady[k] = `${Math.round(performance.now() - back)} ms: ${(err as Error).message}` }
      if (performance.now() - back > 60_000) return null
      await Bun.sleep(20)
    }
  }))
  await Bun.sleep(10_000)
  running = false
  const stillOpen = open
  await Promise.race([Promise.all(clients), Bun.sleep(30_000)])
  const round = (s: (typeof stats)[Phase]) => ({ ...s, maxMs: Math.round(s.maxMs), meanMs: s.n ? Math.round(s.sumMs / s.n) : null, sumMs: undefined })
  console.log(JSON.stringify({
    mode: MODE, clients: CLIENTS, outageMs: OUTAGE_MS,
    before: round(stats.before), during: round(stats.during), after: round(stats.after),
    openWhenLoadStopped: stillOpen, openAfter30s: open, readyAgainMs, lastNotReady,
    note: 'shared 2-core machine; "before" is the same-run ceiling of latency',
  }, null, 1))
} finally {
  for (const n of nodes) { n.kill('SIGTERM'); await n.exited }
  await pg.destroy()
  rmSync(dir, { recursive: true, force: true })
}
