/**
 * A workflow run at scale: N contacts enter SEND_EMAIL -> DELAY -> SEND_EMAIL at once, on a real
 * `mailctl serve --role worker` delivering to an SMTP sink on loopback (direct MX delivery through a loopback
 * DNS server, DKIM signing on).
 *
 *   node_modules/.bin/bun bench/workflows.ts
 *     BENCH_CONTACTS=10000       contacts entering the workflow
 *     BENCH_DELAY_SECONDS=60     the DELAY step (1 minute; the engine's real clock, nothing is faked)
 *     BENCH_DATABASE_URL=pg      default: a fresh SQLite file
 *
 * The executions start the way a tracked event starts them, only sooner: the events are appended (with
 * their outbox rows, which the worker node's drainer also hands to its trigger consumer) and given to that
 * consumer's work (`startFromEvents`) in this process at once, 500 at a time, so that everyone enters
 * together; whichever comes second finds the execution started (unique per workflow and event). The worker
 * node runs every step. Prints:
 * - executions completed per second (over the whole run, and over the phases without the delay itself);
 * - the lateness of each DELAY step, from its due time to the step running (p50, p99, max; target p99 < 2 s);
 * - whether every email reached the sink exactly once: the sink's count equals the number of emails
 *   queued, every one is recorded DELIVERED, and each contact has exactly one of each.
 * Figures from a shared 2-core machine; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, count, eq, sql } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { ctxFor } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { upsertMany } from '../src/modules/contacts/service'
import { appendEvents } from '../src/modules/events/stream'
import { createProject } from '../src/modules/projects/service'
import { createTemplate } from '../src/modules/templates/service'
import { startFromEvents } from '../src/modules/workflows/engine'
import { addStep, addTransition, createWorkflow, updateWorkflow } from '../src/modules/workflows/service'
import { freshPgDatabase } from '../test/helpers/env'
import { startTestDns } from '../test/helpers/dns'
import { lines, verifiedBenchDomain } from './_proc'

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 10_000)
const DELAY_SECONDS = Number(process.env.BENCH_DELAY_SECONDS ?? 60)
const ROOT = join(import.meta.dir, '..')


const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-wf-'))
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
    if (typeof rec.received === 'number') received = rec.received
  })
  while (!sinkPort) await Bun.sleep(10)
  dns.set('sink.test', [{ type: 'MX', exchange: 'mx.sink.test', priority: 10 }])
  dns.set('mx.sink.test', [{ type: 'A', address: '127.0.0.1' }])

  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl, MAILCTL_DATA_DIR: dir, MAILCTL_JWT_SECRET: 'bench-secret', MAILCTL_SECRET: 'bench-secret-shared-by-every-node',
    MAILCTL_HOSTNAME: 'mx.bench.test', MAILCTL_OUTBOUND: 'direct', MAILCTL_MX_PORT: String(sinkPort), MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8', MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_LOG_LEVEL: 'warn',
    MAILCTL_SQLITE_SYNCHRONOUS: process.env.BENCH_SQLITE_SYNCHRONOUS ?? 'FULL',
  }
  const config = loadConfig({ env })
  const deps = await createDeps(config, { log: createLogger('warn') })
  cleanups.unshift(() => closeDeps(deps))
  const project = await createProject(deps.store, { name: 'bench' })
  const ctx = ctxFor(deps, project.id, { kind: 'cli' })
  await verifiedBenchDomain(ctx, dns)

  // The workflow: SEND_EMAIL first -> DELAY -> SEND_EMAIL second.
  const html = `<html><body><h1>Hello {{name}}</h1>${'<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>'.repeat(20)}</body></html>`
  const first = await createTemplate(ctx, { name: 'first', subject: 'Welcome {{name}}', body: html, from: 'hello@bench-sender.test', type: 'TRANSACTIONAL' })
  const second = await createTemplate(ctx, { name: 'second', subject: 'Day two, {{name}}', body: html, from: 'hello@bench-sender.test', type: 'TRANSACTIONAL' })
  const wf = await createWorkflow(ctx, { name: 'bench', eventName: 'bench.enter' })
  const s1 = await addStep(ctx, wf.id, { type: 'SEND_EMAIL', config: { templateId: first.id } })
  const unit = DELAY_SECONDS % 60 === 0 ? { amount: DELAY_SECONDS / 60, unit: 'minutes' } : null
  if (!unit) throw new Error('BENCH_DELAY_SECONDS must be a whole number of minutes (the DELAY step counts in minutes)')
  const d = await addStep(ctx, wf.id, { type: 'DELAY', config: unit })
  const s2 = await addStep(ctx, wf.id, { type: 'SEND_EMAIL', config: { templateId: second.id } })
  await addTransition(ctx, wf.id, { fromStepId: wf.steps[0].id, toStepId: s1.id })
  await addTransition(ctx, wf.id, { fromStepId: s1.id, toStepId: d.id })
  await addTransition(ctx, wf.id, { fromStepId: d.id, toStepId: s2.id })
  await updateWorkflow(ctx, wf.id, { enabled: true })

  const people = Array.from({ length: CONTACTS }, (_, i) => ({ email: `user${i}@sink.test`, subscribed: true, data: { name: `User ${i}` } }))
  const ids: string[] = []
  for (let i = 0; i < CONTACTS; i += 1000) {
    const r = await deps.store.tx((db) => upsertMany(ctx, db, people.slice(i, i + 1000), { defaultSubscribed: true }))
    ids.push(...r.contacts.map((c) => c.id))
  }

  const server = Bun.spawn([process.execPath, join(ROOT, 'cli/mailctl.ts'), 'serve', '--role', 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'ignore', stderr: 'inherit',
  })
  cleanups.unshift(async () => { server.kill('SIGTERM'); await server.exited })
  await Bun.sleep(1500)

  // Everyone enters at once: events appended and handed to the trigger consumer, 1,000 per transaction.
  process.stderr.write(`bench: ${CONTACTS} contacts enter (DELAY ${DELAY_SECONDS} s)\n`)
  const t0 = performance.now()
  // Two processes write one SQLite file: a write that waited out the lock (5 s on a busy machine) is tried
  // again. Starting is idempotent by event id, so handing the same events over again is safe.
  const retry = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try { return await fn() } catch (err) {
        if (attempt >= 10 || !String(err).includes('locked')) throw err
        process.stderr.write(`bench: ${String(err)}; again\n`)
      }
    }
  }
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await retry(() => deps.store.tx((db) => appendEvents(ctx, db, ids.slice(i, i + 500).map((contactId) => ({ contactId, name: 'bench.enter' })))))
    await retry(() => startFromEvents(ctx, rows))
  }
  const entered = performance.now()

  const { workflowExecutions: ex, workflowStepExecutions: sx, emails } = deps.store.t
  const byStatus = async () => Object.fromEntries((await deps.store.db.select({ s: ex.status, n: count() }).from(ex).where(eq(ex.workflowId, wf.id)).groupBy(ex.status)).map((r) => [r.s, Number(r.n)]))
  const emailsQueued = async () => Number((await deps.store.db.select({ n: count() }).from(emails).where(eq(emails.projectId, project.id)))[0].n)
  let parked = 0
  let shown = Date.now()
  const deadline = Date.now() + 30 * 60_000
  for (;;) {
    const st = await byStatus()
    if (!parked && (st.WAITING ?? 0) === CONTACTS) parked = performance.now()
    if ((st.COMPLETED ?? 0) + (st.FAILED ?? 0) === CONTACTS) break
    if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify(st)}`)
    if (Date.now() - shown > 5000) { shown = Date.now(); process.stderr.write(`bench: ${JSON.stringify(st)}, sink ${received}\n`) }
    await Bun.sleep(200)
  }
  const done = performance.now()
  const total = await emailsQueued()
  while (received < total && Date.now() < deadline) await Bun.sleep(50)
  const delivered = performance.now()
  await Bun.sleep(500)

  const late = (await deps.store.db.select({ out: sx.output }).from(sx).where(and(eq(sx.projectId, project.id), eq(sx.stepType, 'DELAY'))))
    .map((r) => Number((r.out as { lateMs?: number } | null)?.lateMs)).filter((v) => Number.isFinite(v)).sort((a, b) => a - b)
  const pct = (p: number) => late[Math.min(late.length - 1, Math.floor(late.length * p))] ?? null
  const perContact = await deps.store.db.select({ to: emails.toAddress, templateId: emails.templateId, n: count() }).from(emails)
    .where(eq(emails.projectId, project.id)).groupBy(emails.toAddress, emails.templateId).having(sql`count(*) <> 1`)
  const notDelivered = Number((await deps.store.db.select({ n: count() }).from(emails).where(and(eq(emails.projectId, project.id), sql`${emails.status} <> 'DELIVERED'`)))[0].n)
  const st = await byStatus()
  const runSeconds = (done - t0) / 1000
  console.log(JSON.stringify({
    store: databaseUrl.startsWith('sqlite') ? `sqlite (synchronous=${env.MAILCTL_SQLITE_SYNCHRONOUS})` : 'pg',
    contacts: CONTACTS, delaySeconds: DELAY_SECONDS, executions: st,
    enterSeconds: Math.round((entered - t0) / 10) / 100,
    allParkedInDelaySeconds: parked ? Math.round((parked - t0) / 10) / 100 : null,
    allCompletedSeconds: Math.round(runSeconds * 100) / 100,
    executionsCompletedPerSecond: Math.round(CONTACTS / runSeconds),
    executionsCompletedPerSecondWithoutTheDelay: Math.round(CONTACTS / Math.max(0.001, runSeconds - DELAY_SECONDS)),
    delayLatenessMs: { n: late.length, p50: pct(0.5), p99: pct(0.99), max: late[late.length - 1] ?? null },
    emails: { queued: total, sinkReceived: received, notDelivered, contactsWithOtherThanOneOfEach: perContact.length, expected: 2 * CONTACTS },
    everyEmailExactlyOnce: total === 2 * CONTACTS && received === total && notDelivered === 0 && perContact.length === 0,
    lastDeliveredSeconds: Math.round((delivered - t0) / 10) / 100,
    loadAverage: require('node:os').loadavg().map((v: number) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  for (const c of cleanups) {
    try { await c() } catch { /* best effort */ }
  }
}
