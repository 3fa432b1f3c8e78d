/**
 * Child process of bench/http.ts: a bare Elysia "hello" app and the real mailctl app (SQLite in a temp
 * data dir, one project with argv[3] contacts, default 1,000) on two loopback ports. Prints one JSON line {hello, api, secretKey, contactId, contacts}, then serves
 * until killed.
 */
import { Elysia } from 'elysia'
import { loadConfig } from '../src/config'
import { createDeps } from '../src/main'
import { ctxFor } from '../src/deps'
import { buildApp } from '../src/http/app'
import { authPlugin } from '../src/http/auth'
import { createProject } from '../src/modules/projects/service'
import { createContact } from '../src/modules/contacts/service'
import { createLogger } from '../src/log'

const dataDir = process.argv[2]
const config = loadConfig({
  overrides: {
    dataDir,
    databaseUrl: `sqlite://${dataDir}/mailctl.db`,
    rateLimitPerMinute: 100_000_000,
    logLevel: (process.env.BENCH_LOG_LEVEL as 'info' | 'warn' | undefined) ?? 'info',
    jwtSecret: 'bench',
  },
})
const deps = await createDeps(config, { log: createLogger(config.logLevel) })
const project = await createProject(deps.store, { name: 'bench' })
// A project with contacts, so that list pages, totals and look-ups read real rows.
const SEED = Number(process.argv[3] ?? 1000)
const ctx = ctxFor(deps, project.id, { kind: 'cli' })
let contactId = ''
for (let i = 0; i < SEED; i++) {
  const c = await createContact(ctx, { email: `user${i}@bench.example`, data: { plan: i % 3 ? 'free' : 'pro', n: i } })
  contactId = c.id
}
const hello = new Elysia().get('/', () => 'hello').listen({ port: 0, hostname: '127.0.0.1' })
// A diagnostic route that exists only in this harness: the whole foundation (request id, envelope, log
// line, key lookup, rate limit) in front of a handler that does nothing, to separate it from module costs.
const api = buildApp(deps)
  .use(new Elysia().use(authPlugin(deps)).get('/bench/guard-only', () => ({ ok: true }), { apiKey: 'secret' }))
  .listen({ port: 0, hostname: '127.0.0.1' })
process.stderr.write(`${JSON.stringify({ hello: portOf(hello), api: portOf(api), secretKey: project.secretKey, contactId, contacts: SEED })}\n`)

/** The port a server listens on; throws when it does not listen. */
function portOf(app: { server: { port?: number } | null }): number {
  const port = app.server?.port
  if (!port) throw new Error('the server is not listening')
  return port
}
