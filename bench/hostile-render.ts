/**
 * Hostile renders through the real server: a corpus of templates and bodies built to
 * make rendering, Markdown or the tracking rewrite run for seconds or minutes, each sent through the API
 * of `mailctl serve` on SQLite or PostgreSQL while GET /health is polled throughout. Each case has an
 * answer budget (the render budgets of src/mail/render/sandbox.ts plus slack for a busy machine) and the
 * statuses it may answer (a large body that is legitimate but slow to compile on a busy machine may
 * meet the render deadline: 200 or 422 are both within budget); /health's max and p99 latency are printed (target < 100 ms). Exits 1 when a case
 * answers late or with another status (benches assert budgets, tests do not).
 *
 *   node_modules/.bin/bun bench/hostile-render.ts
 *     BENCH_DATABASE_URL=pg    a fresh PostgreSQL database instead of a SQLite file
 *     BENCH_ONLY=text          only the cases whose name contains it
 *     BENCH_BUN_ARGS="--cpu-prof"  extra bun arguments for the server (a CPU profile written at exit)
 *
 * The CPU is shared with other work on this machine: latencies are pessimistic. The "idle" figures are
 * /health polled the same way for 2 s before the corpus, the ceiling of the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { ctxFor } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createLogger } from '../src/log'
import { RENDER_TIMEOUT_MS, RENDER_WALL_MAX_MS } from '../src/mail/render'
import { createProject } from '../src/modules/projects/service'
import { freshPgDatabase } from '../test/helpers/env'
import { startTestDns } from '../test/helpers/dns'
import { freePort, verifiedBenchDomain } from './_proc'

const ROOT = join(import.meta.dir, '..')
const SLACK_MS = 1_500
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
const EACH3 = '<p>{{#each @root.a}}{{#each @root.a}}{{#each @root.a}}x{{/each}}{{/each}}{{/each}}</p>'

interface Case { name: string; path: string; body: Record<string, unknown>; statuses: number[]; budgetMs: number }

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-hostile-'))
const pg = process.env.BENCH_DATABASE_URL === 'pg' ? await freshPgDatabase() : null
const databaseUrl = pg?.url ?? `sqlite://${join(dir, 'mailctl.db')}`
const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dir, { recursive: true, force: true })]
if (pg) cleanups.unshift(() => pg.drop())
let failed = false

try {
  const dns = await startTestDns()
  cleanups.unshift(() => dns.close())
  dns.set('sink.test', [{ type: 'MX', exchange: 'mx.sink.test', priority: 10 }])
  dns.set('mx.sink.test', [{ type: 'A', address: '127.0.0.1' }])
  const httpPort = freePort()
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl, MAILCTL_DATA_DIR: dir, MAILCTL_JWT_SECRET: 'bench-secret', MAILCTL_SECRET: 'bench-secret-shared-by-every-node-of-the-bench',
    MAILCTL_HOSTNAME: 'mx.bench.test', MAILCTL_HTTP_PORT: String(httpPort), MAILCTL_HTTP_HOST: '127.0.0.1',
    // Mail is queued, not delivered: nothing listens on this port (the bench measures the API's answers).
    MAILCTL_OUTBOUND: 'direct', MAILCTL_MX_PORT: String(freePort()), MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_LOG_LEVEL: 'warn',
  }
  const config = loadConfig({ env })
  const deps = await createDeps(config, { log: createLogger('warn') })
  const project = await createProject(deps.store, { name: 'bench' })
  const ctx = ctxFor(deps, project.id, { kind: 'cli' })
  await verifiedBenchDomain(ctx, dns)
  await deps.store.tx((db) => db.update(deps.store.t.projects).set({ trackingEnabled: true }).where(eq(deps.store.t.projects.id, project.id)))
  await closeDeps(deps)

  const bunArgs = (process.env.BENCH_BUN_ARGS ?? '').split(' ').filter(Boolean)
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
  const headers = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }
  const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  const from = 'hello@bench-sender.test'

  // Fixtures the corpus refers to: a saved hostile template, a campaign and a contact with hostile data.
  const tpl = await (await post('/templates', { name: 'each3', subject: 'Hi', body: EACH3, from, type: 'TRANSACTIONAL' })).json() as { id: string }
  await post('/contacts', { email: 'hostile@sink.test', data: { a: keys(200) } })
  const camp = await (await post('/campaigns', { name: 'H', subject: 'Hi', body: EACH3, from, audienceType: 'ALL' })).json() as { data: { id: string } }
  if (!camp.data?.id || !tpl.id) throw new Error(`fixtures: ${JSON.stringify({ tpl, camp })}`)

  const send = (body: Record<string, unknown>) => ({ to: 'r@sink.test', from, subject: 'Hostile', ...body })
  const quick = 1_000 + SLACK_MS
  // A render thread's budget is CPU time (RENDER_TIMEOUT_MS); on a busy machine its wall-clock time is
  // capped at RENDER_WALL_MAX_MS.
  const timed = RENDER_WALL_MAX_MS + SLACK_MS
  const corpus: Case[] = [
    { name: 'each x3 over 200 keys (issue: 10.6 s)', path: '/v1/send', body: send({ body: EACH3, data: { a: keys(200) } }), statuses: [422], budgetMs: quick },
    { name: 'each x3 over 200 keys, saved template', path: '/v1/send', body: { to: 'r@sink.test', template: tpl.id, data: { a: keys(200) } }, statuses: [422], budgetMs: quick },
    { name: 'each x3, campaign test to a hostile contact', path: `/campaigns/${camp.data.id}/test`, body: { email: 'hostile@sink.test' }, statuses: [422], budgetMs: quick },
    { name: 'each over 100 x 60 KB values (output)', path: '/v1/send', body: send({ body: '{{#each @root.a}}{{{@root.big}}}{{/each}}', data: { a: Array(100).fill(0), big: 'y'.repeat(60_000) } }), statuses: [422], budgetMs: quick },
    { name: '{{{v}}} x 40, 60 KB value (output, inline)', path: '/v1/send', body: send({ body: '{{{v}}}'.repeat(40), data: { v: 'z'.repeat(60_000) } }), statuses: [422], budgetMs: quick },
    { name: 'subject with {{#each}} (refused at save)', path: '/templates', body: { name: 'x', subject: '{{#each a}}{{#each a}}x{{/each}}{{/each}}', body: 'b', from }, statuses: [422], budgetMs: quick },
    { name: 'Markdown "_a" x 300,000 (issue: ~270 s)', path: '/v1/send', body: send({ body: '_a'.repeat(300_000), type: 'markdown' }), statuses: [422], budgetMs: timed },
    { name: 'Markdown "> " x 200,000 (issue: 13.8 s, then 500)', path: '/v1/send', body: send({ body: '> '.repeat(200_000), type: 'markdown' }), statuses: [422], budgetMs: quick },
    { name: 'Markdown "- " x 100,000', path: '/v1/send', body: send({ body: '- '.repeat(100_000), type: 'markdown' }), statuses: [422], budgetMs: quick },
    { name: 'Markdown "*a" x 16,000', path: '/v1/send', body: send({ body: '*a'.repeat(16_000), type: 'markdown' }), statuses: [200, 422], budgetMs: timed },
    { name: 'Markdown "[" x 16,000 + "]" x 16,000', path: '/v1/send', body: send({ body: `${'['.repeat(16_000)}a${']'.repeat(16_000)}`, type: 'markdown' }), statuses: [200, 422], budgetMs: timed },
    { name: 'Markdown, an ordinary 40 KB document', path: '/v1/send', body: send({ body: '## Hello {{name}}\n\nLorem *ipsum* dolor [sit](https://x.test/) amet.\n\n1. one\n2. two\n\n'.repeat(450), type: 'markdown', data: { name: 'A' } }), statuses: [200], budgetMs: quick },
    { name: '"<a " x 300,000, tracking on (issue: 7.7 s)', path: '/v1/send', body: send({ body: '<a '.repeat(300_000) }), statuses: [200], budgetMs: quick },
    { name: 'unclosed <a href=" x 100,000, tracking on (issue: 6.3 s)', path: '/v1/send', body: send({ body: `<a href="https://x.test/">x</a>${'<a href="'.repeat(100_000)}` }), statuses: [200], budgetMs: quick },
    { name: '</body> x 200,000, tracking on', path: '/v1/send', body: send({ body: '</body>'.repeat(200_000) }), statuses: [200, 422], budgetMs: timed },
    { name: '1.9 MB of <div> (a heavy source: compiled and rendered in a render thread)', path: '/v1/send', body: send({ body: '<div>a</div>'.repeat(160_000) }), statuses: [200, 422], budgetMs: timed },
    { name: '3 MB of <p> (output budget)', path: '/v1/send', body: send({ body: '<p>abcdefgh</p>'.repeat(200_000) }), statuses: [422], budgetMs: timed },
    { name: '<ol> of 100,000 items with {{#each}}', path: '/v1/send', body: send({ body: '<ol>{{#each @root.a}}<li>{{this}}</li>{{/each}}</ol>', data: { a: Array.from({ length: 10_000 }, (_, i) => i) } }), statuses: [200], budgetMs: quick },
  ]

  // /health, polled back to back (5 ms apart) from here to the end.
  const health: number[] = []
  let polling = true
  const poll = (async () => {
    while (polling) {
      const t0 = performance.now()
      try { await (await fetch(`${base}/health`)).arrayBuffer() } catch { /* counted as its time */ }
      health.push(performance.now() - t0)
      await Bun.sleep(5)
    }
  })()
  await Bun.sleep(2_000)
  const idle = health.splice(0)
  const results: Array<Record<string, unknown>> = []
  const only = process.env.BENCH_ONLY
  for (const c of corpus) {
    if (only && !c.name.includes(only)) continue
    const t0 = performance.now()
    const from = health.length
    const res = await post(c.path, c.body)
    const answer = await res.json().catch(() => null) as { error?: { errors?: Array<{ code: string }> } } | null
    const ms = Math.round(performance.now() - t0)
    const during = health.slice(from)
    const ok = c.statuses.includes(res.status) && ms <= c.budgetMs
    if (!ok) failed = true
    results.push({ case: c.name, status: res.status, code: answer?.error?.errors?.[0]?.code ?? null, ms, budgetMs: c.budgetMs, healthMaxMs: Math.round(Math.max(0, ...during)), ok })
    process.stderr.write(`bench: ${ok ? 'ok  ' : 'FAIL'} ${c.name}: ${res.status} in ${ms} ms\n`)
  }
  polling = false
  await poll
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b)
    const at = (q: number) => Math.round((s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? 0) * 10) / 10
    return { polls: s.length, p50: at(0.5), p99: at(0.99), max: Math.round((s[s.length - 1] ?? 0) * 10) / 10 }
  }
  console.log(JSON.stringify({
    store: pg ? 'pg' : 'sqlite', renderCpuMs: RENDER_TIMEOUT_MS, renderWallMaxMs: RENDER_WALL_MAX_MS, cases: results,
    healthMs: { idle: stats(idle), duringCorpus: stats(health), target: '< 100' },
    loadAverage: require('node:os').loadavg().map((v: number) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  for (const c of cleanups) {
    try { await c() } catch { /* best effort */ }
  }
}
process.exit(failed ? 1 : 0)
