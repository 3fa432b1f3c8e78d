/**
 * Child process of bench/track.ts: the real mailctl app on SQLite (synchronous mode from
 * MAILCTL_SQLITE_SYNCHRONOUS) in the given data dir, or on the PostgreSQL database of BENCH_DB_URL, with one project and SEED existing contacts.
 * Prints one JSON line {port, publicKey, secretKey} on stderr, then serves until killed; on SIGTERM it prints the
 * group-commit statistics and exits. Diagnostics: BENCH_WAL_CKPT=<pages> sets wal_autocheckpoint; BENCH_SQL runs an SQL
 * script on the store before serving (to compare a schema change: a dropped trigger or index).
 * BENCH_DRAIN=1 also runs the events' outbox drainer in the process (as `serve` does with the worker role),
 * so its claims and deliveries share the CPU and the write lock with the tracks.
 * BENCH_CONSUMED=1 gives the project an enabled workflow (triggered by another event than the tracked ones):
 * its events then go to the outbox (src/modules/events/interest.ts: a project nothing consumes writes no
 * outbox row), and with BENCH_DRAIN=1 reach the consumers.
 */
import { loadConfig } from '../src/config'
import { ctxFor } from '../src/deps'
import { createDeps } from '../src/main'
import { buildApp } from '../src/http/app'
import { createProject } from '../src/modules/projects/service'
import { upsertMany } from '../src/modules/contacts/service'

const dataDir = process.argv[2]
const seed = Number(process.argv[3] ?? 10_000)
// BENCH_DB_URL: a PostgreSQL database (bench/track.ts with BENCH_DATABASE_URL=pg) instead of SQLite in dataDir.
const config = loadConfig({
  env: process.env.BENCH_DB_URL ? { ...process.env, MAILCTL_SECRET: 'bench-track-secret-shared-by-every-node' } : process.env,
  overrides: {
    dataDir,
    databaseUrl: process.env.BENCH_DB_URL ?? `sqlite://${dataDir}/mailctl.db`,
    rateLimitPerMinute: 100_000_000,
    logLevel: (process.env.BENCH_LOG_LEVEL as 'info' | 'warn' | undefined) ?? 'info',
    jwtSecret: 'bench',
  },
})
const deps = await createDeps(config)
const project = await createProject(deps.store, { name: 'bench' })
const ctx = ctxFor(deps, project.id, { kind: 'cli' })
for (let i = 0; i < seed; i += 1000) {
  const inputs = Array.from({ length: Math.min(1000, seed - i) }, (_, k) => ({ email: `seed${i + k}@example.com`, data: { plan: 'free' } }))
  await deps.store.tx((db) => upsertMany(ctx, db, inputs, { defaultSubscribed: true }))
}
if (process.env.BENCH_WAL_CKPT) await deps.store.tx(async (db) => { (db as unknown as { $client: { run(q: string): void } }).$client.run(`PRAGMA wal_autocheckpoint = ${Number(process.env.BENCH_WAL_CKPT)}`) })
if (process.env.BENCH_SQL) await deps.store.script(process.env.BENCH_SQL)
if (process.env.BENCH_CONSUMED === '1') await enableWorkflow()
// The drainer's counters (events, batches, failures) are printed at SIGTERM with the group-commit statistics.
const outbox = process.env.BENCH_DRAIN === '1' ? await (await import('../src/modules/events/outbox')).startOutbox(deps) : null
const app = buildApp(deps).listen({ port: 0, hostname: '127.0.0.1' })
process.stderr.write(`${JSON.stringify({ port: portOf(app), publicKey: project.publicKey, secretKey: project.secretKey, synchronous: process.env.BENCH_DB_URL ? 'pg' : config.sqliteSynchronous })}\n`)
// On SIGTERM: how well group commit batched (diagnostics), then a normal exit (so --cpu-prof can write).
process.on('SIGTERM', () => {
  // Tracks commit on the track writer thread on a file-backed database, else through the in-thread group commit.
  const { batches, writes } = (deps.runtime.trackWriter ?? deps.runtime.commits).stats
  process.stderr.write(`${JSON.stringify({ groupCommit: { batches, writes, perBatch: batches ? writes / batches : 0 }, outbox: outbox?.stats })}\n`)
  process.exit(0)
})

/** An enabled workflow in the project: trigger 'bench-never' → DELAY 1 hour (BENCH_CONSUMED). */
async function enableWorkflow(): Promise<void> {
  const api = buildApp(deps)
  const call = async (method: string, path: string, body: unknown) => {
    const res = await api.handle(new Request(`http://localhost${path}`, { method, headers: { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return res.json() as Promise<{ id: string; steps: Array<{ id: string }> }>
  }
  const wf = await call('POST', '/workflows', { name: 'bench', eventName: 'bench-never' })
  const delay = await call('POST', `/workflows/${wf.id}/steps`, { type: 'DELAY', config: { amount: 1, unit: 'hours' } })
  await call('POST', `/workflows/${wf.id}/transitions`, { fromStepId: wf.steps[0].id, toStepId: delay.id })
  await call('PATCH', `/workflows/${wf.id}`, { enabled: true })
}

/** The port a server listens on; throws when it does not listen. */
function portOf(app: { server: { port?: number } | null }): number {
  const port = app.server?.port
  if (!port) throw new Error('the server is not listening')
  return port
}
