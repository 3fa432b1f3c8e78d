/**
 * Child process of bench/track.ts: the real mailctl app on SQLite (synchronous mode from
 * MAILCTL_SQLITE_SYNCHRONOUS) in the given data dir, with one project and SEED existing contacts.
 * Prints one JSON line {port, publicKey} on stderr, then serves until killed.
 */
import { loadConfig } from '../src/config'
import { ctxFor } from '../src/deps'
import { createDeps } from '../src/main'
import { buildApp } from '../src/http/app'
import { createProject } from '../src/modules/projects/service'
import { upsertMany } from '../src/modules/contacts/service'

const dataDir = process.argv[2]
const seed = Number(process.argv[3] ?? 10_000)
const config = loadConfig({
  overrides: {
    dataDir,
    databaseUrl: `sqlite://${dataDir}/mailctl.db`,
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
const app = buildApp(deps).listen({ port: 0, hostname: '127.0.0.1' })
process.stderr.write(JSON.stringify({ port: app.server!.port, publicKey: project.publicKey, synchronous: config.sqliteSynchronous }) + '\n')
