/**
 * Recovery after a fault mid-campaign (issue 40): the rate at which the rest of a campaign drains after the
 * server is killed (kill -9, or SIGTERM) and started again, against the rate before the fault.
 *
 *   node_modules/.bin/bun bench/recovery.ts
 *     BENCH_RECIPIENTS=20000   subscribed contacts in the audience
 *     BENCH_KILL_AT=0.4        the fault comes once the sink has this share of the messages
 *     BENCH_SIGNAL=SIGKILL     or SIGTERM
 *     BENCH_DATABASE_URL=pg    a fresh PostgreSQL database (default: a fresh SQLite file)
 *
 * Processes: the server (`mailctl serve`, direct MX delivery through a loopback DNS server, DKIM on), the
 * minimal sink (bench/_sink.ts) and this script. Prints (asserts nothing):
 * - ratePerSecondBefore: messages received from the send call to the fault, per second;
 * - ratePerSecondAfter: messages received from the first one after the restart to the last, per second,
 *   and ratioAfterToBefore (the figure: >= 0.8);
 * - firstDeliveryAfterRestartMs: from starting the new process to the next message at the sink
 *   (the figure on SQLite: < 3 s), and the process's own start time to /health for comparison.
 * The sink counts messages, so a message delivered twice (in flight at the kill) counts twice: `received`
 * may exceed the recipients by what was in flight.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { ctxFor } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { createCampaign } from '../src/modules/campaigns/service'
import { createProject } from '../src/modules/projects/service'
import { freshPgDatabase } from '../test/helpers/env'
import { startTestDns } from '../test/helpers/dns'
import { freePort, lines, verifiedBenchDomain } from './_proc'

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 20_000)
const KILL_AT = Number(process.env.BENCH_KILL_AT ?? 0.4)
const SIGNAL = (process.env.BENCH_SIGNAL ?? 'SIGKILL') as 'SIGKILL' | 'SIGTERM'
const ROOT = join(import.meta.dir, '..')

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-recovery-'))
const pg = process.env.BENCH_DATABASE_URL === 'pg' ? await freshPgDatabase() : null
const databaseUrl = pg?.url ?? process.env.BENCH_DATABASE_URL ?? `sqlite://${join(dir, 'mailctl.db')}`
const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dir, { recursive: true, force: true })]
if (pg) cleanups.unshift(() => pg.drop())

try {
  const dns = await startTestDns()
  cleanups.unshift(() => dns.close())
  let sinkPort = 0
  let received = 0
  const sink = Bun.spawn([process.execPath, join(ROOT, 'bench/_sink.ts')], { env: { ...process.env, SINK_PORT: '0' }, stdout: 'pipe', stderr: 'inherit' })
  cleanups.unshift(() => { sink.kill() })
  void lines(sink.stdout, (rec) => {
    if (typeof rec.port === 'number') sinkPort = rec.port
    if (typeof rec.received === 'number') received = Math.max(received, rec.received)
  })
  while (!sinkPort) await Bun.sleep(10)
  dns.set('sink.test', [{ type: 'MX', exchange: 'mx.sink.test', priority: 10 }])
  dns.set('mx.sink.test', [{ type: 'A', address: '127.0.0.1' }])

  const httpPort = await freePort()
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
    MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8',
    MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000',
    MAILCTL_SMTP_INBOUND_PORT: '0',
    MAILCTL_SMTP_RELAY_PORT: '0',
    MAILCTL_LOG_LEVEL: 'warn',
  }

  const config = loadConfig({ env })
  const deps = await createDeps(config, { log: createLogger('warn') })
  const project = await createProject(deps.store, { name: 'bench' })
  const ctx = ctxFor(deps, project.id, { kind: 'cli' })
  await verifiedBenchDomain(ctx, dns)
  const now = Date.now()
  const idOf = (expr: string) => deps.store.dialect === 'pg'
    ? `lpad(to_hex(${expr}), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(${expr}), 12, '0')`
    : `printf('%08x-0000-7000-8000-%012x', ${expr}, ${expr})`
  if (deps.store.dialect === 'pg') {
    await deps.store.exec(sql.raw(`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${idOf('i')}, '${project.id}', 'user' || i || '@sink.test', true, jsonb_build_object('firstName', 'User ' || i),
        to_timestamp(${now} / 1000.0), to_timestamp(${now} / 1000.0) FROM generate_series(0, ${RECIPIENTS - 1}) AS i`))
  } else {
    await deps.store.tx((db) => deps.store.exec(sql.raw(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RECIPIENTS - 1})
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT ${idOf('i')}, '${project.id}', 'user' || i || '@sink.test', 1, json_object('firstName', 'User ' || i), ${now}, ${now} FROM n`), db))
  }
  const body = `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`
  const campaign = await createCampaign(ctx, {
    name: 'Bench', subject: 'News for {{firstName}}', body, from: 'hello@bench-sender.test', fromName: 'Bench', audienceType: 'ALL', type: 'MARKETING',
  })
  await closeDeps(deps)

  const base = `http://127.0.0.1:${httpPort}`
  let current: ReturnType<typeof Bun.spawn> | null = null
  cleanups.unshift(async () => { if (current) { current.kill('SIGTERM'); await current.exited } })
  /** Starts the server; resolves with the milliseconds to its first /health answer. */
  async function startServer(): Promise<number> {
    const t0 = performance.now()
    current = Bun.spawn([process.execPath, join(ROOT, 'cli/mailctl.ts'), 'serve', '--role', 'api', '--role', 'worker'], {
      env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'ignore', stderr: 'inherit',
    })
    for (let i = 0; ; i++) {
      try { if ((await fetch(`${base}/health`)).ok) break } catch { /* not yet */ }
      if (i > 6000) throw new Error('server did not start')
      await Bun.sleep(10)
    }
    return performance.now() - t0
  }

  await startServer()
  const headers = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }
  const start = performance.now()
  const res = await fetch(`${base}/campaigns/${campaign.id}/send`, { method: 'POST', headers, body: '{}' })
  if (res.status !== 200) throw new Error(`send answered ${res.status}: ${await res.text()}`)
  while (received < RECIPIENTS * KILL_AT) await Bun.sleep(5)
  const atFault = received
  const faultAt = performance.now()
  const killed = current as unknown as ReturnType<typeof Bun.spawn>
  killed.kill(SIGNAL)
  await killed.exited
  const afterExit = received
  const restartAt = performance.now()
  const healthMs = await startServer()
  while (received === afterExit) await Bun.sleep(2)
  const firstAfter = performance.now()
  const fromFirst = received
  const deadline = Date.now() + 1_800_000
  while (received < RECIPIENTS && Date.now() < deadline) await Bun.sleep(10)
  const end = performance.now()
  const before = atFault / ((faultAt - start) / 1000)
  const after = (received - fromFirst) / ((end - firstAfter) / 1000)
  console.log(JSON.stringify({
    store: databaseUrl.startsWith('sqlite') ? 'sqlite' : 'pg',
    signal: SIGNAL, recipients: RECIPIENTS, received, atFault, deliveredWhileStopping: afterExit - atFault,
    ratePerSecondBefore: Math.round(before),
    ratePerSecondAfter: Math.round(after),
    ratioAfterToBefore: Math.round((after / before) * 1000) / 1000,
    firstDeliveryAfterRestartMs: Math.round(firstAfter - restartAt),
    restartToHealthMs: Math.round(healthMs),
    totalSeconds: Math.round((end - start) / 100) / 10,
    loadAverage: require('node:os').loadavg().map((v: number) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  for (const c of cleanups) {
    try { await c() } catch { /* best effort */ }
  }
}
