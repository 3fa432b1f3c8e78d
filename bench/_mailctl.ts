import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { ctxFor, type Ctx } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { createProject } from '../src/modules/projects/service'
import { freshPgDatabase } from '../test/helpers/env'
import type { TestDns } from '../test/helpers/dns'
import { freePort, verifiedBenchDomain } from './_proc'

/**
 * What the benches that run `mailctl serve` as a child share (head-of-line, adaptive-throttle, recovery):
 * a fresh store (BENCH_DATABASE_URL=pg: a fresh PostgreSQL database; else a SQLite file), the server's
 * settings (direct MX delivery through the loopback DNS server, loopback allowed), a project with the
 * verified sending domain `bench-sender.test`, and starting the server.
 */

const ROOT = join(import.meta.dir, '..')

export interface BenchStore {
  dir: string
  databaseUrl: string
  kind: 'sqlite' | 'pg'
  /** Run last to first by `runCleanups`. */
  cleanups: Array<() => Promise<void> | void>
}

export async function benchStore(name: string): Promise<BenchStore> {
  const dir = mkdtempSync(join(tmpdir(), `mailctl-bench-${name}-`))
  const pg = process.env.BENCH_DATABASE_URL === 'pg' ? await freshPgDatabase() : null
  const databaseUrl = pg?.url ?? process.env.BENCH_DATABASE_URL ?? `sqlite://${join(dir, 'mailctl.db')}`
  const cleanups: BenchStore['cleanups'] = [() => rmSync(dir, { recursive: true, force: true })]
  if (pg) cleanups.unshift(() => pg.drop())
  return { dir, databaseUrl, kind: databaseUrl.startsWith('sqlite') ? 'sqlite' : 'pg', cleanups }
}

export async function runCleanups(store: BenchStore): Promise<void> {
  for (const c of store.cleanups) {
    try { await c() } catch { /* best effort */ }
  }
}

/** The server's settings: its HTTP port, direct delivery on `mxPort` through `dns`, no limits in the way. */
export async function serverEnv(store: BenchStore, dns: TestDns, mxPort: number, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    DATABASE_URL: store.databaseUrl,
    MAILCTL_DATA_DIR: store.dir,
    MAILCTL_JWT_SECRET: 'bench-secret',
    MAILCTL_SECRET: 'bench-secret-shared-by-every-node',
    MAILCTL_HOSTNAME: 'mx.bench.test',
    MAILCTL_HTTP_PORT: String(freePort()),
    MAILCTL_HTTP_HOST: '127.0.0.1',
    MAILCTL_OUTBOUND: 'direct',
    MAILCTL_MX_PORT: String(mxPort),
    MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8',
    MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000',
    MAILCTL_SMTP_INBOUND_PORT: '0',
    MAILCTL_SMTP_RELAY_PORT: '0',
    MAILCTL_LOG_LEVEL: 'warn',
    ...extra,
  }
}

/** A project with the verified sending domain, written before the server starts; `fill` adds more (contacts, a campaign). */
export async function benchProject<T = void>(env: Record<string, string>, dns: TestDns, fill?: (ctx: Ctx) => Promise<T>): Promise<{ secretKey: string; extra: T }> {
  const deps = await createDeps(loadConfig({ env }), { log: createLogger('warn') })
  try {
    const project = await createProject(deps.store, { name: 'bench' })
    const ctx = ctxFor(deps, project.id, { kind: 'cli' })
    await verifiedBenchDomain(ctx, dns)
    return { secretKey: project.secretKey, extra: (fill ? await fill(ctx) : undefined) as T }
  } finally {
    await closeDeps(deps)
  }
}

/** Starts `mailctl serve` (api and worker) and waits for /health; `ms` is the time that took. */
export async function startServer(env: Record<string, string>): Promise<{ proc: ReturnType<typeof Bun.spawn>; base: string; ms: number }> {
  const t0 = performance.now()
  const proc = Bun.spawn([process.execPath, join(ROOT, 'cli/mailctl.ts'), 'serve', '--role', 'api', '--role', 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'ignore', stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${env.MAILCTL_HTTP_PORT}`
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${base}/health`)).ok) break } catch { /* not yet */ }
    if (i > 6000) throw new Error('server did not start')
    await Bun.sleep(10)
  }
  return { proc, base, ms: performance.now() - t0 }
}
