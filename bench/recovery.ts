/**
 * Recovery after a fault mid-campaign: the rate at which the rest of a campaign drains after the
 * server is killed (kill -9, or SIGTERM) and started again, against the rate before the fault.
 *
 *   node_modules/.bin/bun bench/recovery.ts
 *     BENCH_RECIPIENTS=20000   subscribed contacts in the audience
 *     BENCH_KILL_AT=0.4        the fault comes once the sink has this share of the messages
 *     BENCH_SIGNAL=SIGKILL     or SIGTERM
 *     BENCH_DATABASE_URL=pg    a fresh PostgreSQL database (default: a fresh SQLite file)
 *     BENCH_NODES=2            PostgreSQL only: two nodes from the start; the fault stops the first for good and
 *                              the figures are the surviving node's (rate from the fault to the last message)
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
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { createCampaign } from '../src/modules/campaigns/service'
import { startTestDns } from '../test/helpers/dns'
import { freePort, lines } from './_proc'
import { benchProject, benchStore, runCleanups, serverEnv, startServer } from './_mailctl'

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 20_000)
const KILL_AT = Number(process.env.BENCH_KILL_AT ?? 0.4)
const SIGNAL = (process.env.BENCH_SIGNAL ?? 'SIGKILL') as 'SIGKILL' | 'SIGTERM'
const ROOT = join(import.meta.dir, '..')
const NODES = Number(process.env.BENCH_NODES ?? 1)

const store = await benchStore('recovery')
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
    if (typeof rec.received === 'number') received = Math.max(received, rec.received)
  })
  while (!sinkPort) await Bun.sleep(10)
  dns.set('sink.test', [{ type: 'MX', exchange: 'mx.sink.test', priority: 10 }])
  dns.set('mx.sink.test', [{ type: 'A', address: '127.0.0.1' }])

  const env = await serverEnv(store, dns, sinkPort, { MAILCTL_PUBLIC_URL: 'https://mail.bench-sender.test' })
  const { secretKey, extra: campaignId } = await benchProject(env, dns, async (ctx) => {
    const now = Date.now()
    const pg = store.kind === 'pg'
    const idOf = (expr: string) => pg
      ? `lpad(to_hex(${expr}), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(${expr}), 12, '0')`
      : `printf('%08x-0000-7000-8000-%012x', ${expr}, ${expr})`
    const { store: db } = ctx.deps
    if (pg) {
      await db.exec(sql.raw(`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT ${idOf('i')}, '${ctx.projectId}', 'user' || i || '@sink.test', true, jsonb_build_object('firstName', 'User ' || i),
          to_timestamp(${now} / 1000.0), to_timestamp(${now} / 1000.0) FROM generate_series(0, ${RECIPIENTS - 1}) AS i`))
    } else {
      await db.tx((tx) => db.exec(sql.raw(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RECIPIENTS - 1})
        INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT ${idOf('i')}, '${ctx.projectId}', 'user' || i || '@sink.test', 1, json_object('firstName', 'User ' || i), ${now}, ${now} FROM n`), tx))
    }
    const body = `<html><body><h1>Hello {{firstName}}</h1>${'<p>News of the season. Lorem ipsum dolor sit amet. <a href="https://bench-sender.test/shop">Shop now</a></p>'.repeat(20)}</body></html>`
    const campaign = await createCampaign(ctx, {
      name: 'Bench', subject: 'News for {{firstName}}', body, from: 'hello@bench-sender.test', fromName: 'Bench', audienceType: 'ALL', type: 'MARKETING',
    })
    return campaign.id
  })

  let current: ReturnType<typeof Bun.spawn> | null = null
  cleanups.unshift(async () => { if (current) { current.kill('SIGTERM'); await current.exited } })
  let base = ''
  /** Starts the server; resolves with the milliseconds to its first /health answer. */
  const restart = async () => {
    const s = await startServer(env)
    current = s.proc
    base = s.base
    return s.ms
  }

  await restart()
  // A second node from the start (PostgreSQL): it survives the fault and drains the rest alone.
  let survivor: ReturnType<typeof Bun.spawn> | null = null
  if (NODES === 2) {
    if (store.kind !== 'pg') throw new Error('BENCH_NODES=2 needs BENCH_DATABASE_URL=pg')
    survivor = (await startServer({ ...env, MAILCTL_HTTP_PORT: String(freePort()) })).proc
    const s = survivor
    cleanups.unshift(async () => { s.kill('SIGTERM'); await s.exited })
  }
  const headers = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' }
  const start = performance.now()
  const res = await fetch(`${base}/campaigns/${campaignId}/send`, { method: 'POST', headers, body: '{}' })
  if (res.status !== 200) throw new Error(`send answered ${res.status}: ${await res.text()}`)
  while (received < RECIPIENTS * KILL_AT) await Bun.sleep(5)
  const atFault = received
  const faultAt = performance.now()
  const killed = current as unknown as ReturnType<typeof Bun.spawn>
  killed.kill(SIGNAL)
  await killed.exited
  const afterExit = received
  const restartAt = performance.now()
  // Two nodes: the first stays down; the survivor's rate is counted from the fault on.
  if (survivor) current = null
  const healthMs = survivor ? 0 : await restart()
  while (received === afterExit) await Bun.sleep(2)
  const firstAfter = survivor ? faultAt : performance.now()
  const fromFirst = survivor ? atFault : received
  const deadline = Date.now() + 1_800_000
  while (received < RECIPIENTS && Date.now() < deadline) await Bun.sleep(10)
  const end = performance.now()
  const before = atFault / ((faultAt - start) / 1000)
  const after = (received - fromFirst) / ((end - firstAfter) / 1000)
  console.log(JSON.stringify({
    store: store.kind,
    nodes: NODES,
    signal: SIGNAL, recipients: RECIPIENTS, received, atFault, deliveredWhileStopping: afterExit - atFault,
    ratePerSecondBefore: Math.round(before),
    ratePerSecondAfter: Math.round(after),
    ratioAfterToBefore: Math.round((after / before) * 1000) / 1000,
    firstDeliveryAfterRestartMs: survivor ? null : Math.round(firstAfter - restartAt),
    restartToHealthMs: Math.round(healthMs),
    totalSeconds: Math.round((end - start) / 100) / 10,
    loadAverage: require('node:os').loadavg().map((v: number) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  await runCleanups(store)
}
