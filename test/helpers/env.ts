/**
 * Test environment: a real store (a fresh SQLite file, or a fresh PostgreSQL database on the local
 * server, dropped afterwards), migrations applied, the real Elysia app, and request helpers.
 *
 * `forEachStore(title, body)` runs `body` once per store. When PostgreSQL is unreachable outside CI a
 * loud notice is printed and the PostgreSQL half is skipped; under CI (CI=1) that is a failure.
 *
 * `MAILCTL_TEST_STORES=sqlite` (set by `npm run test:fast`) runs the SQLite half only: every suite that
 * asks `pgReachableSync()` or `describePrivatePg` skips its PostgreSQL part, on purpose and without the
 * notice. Unset, both stores run (`npm test`, CI).
 */
import { afterAll, beforeAll, describe } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { loadConfig, type Config } from '../../src/config'
import { openStore, type Store } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import type { Deps } from '../../src/deps'
import { createLogger } from '../../src/log'
import { memoryLimiter } from '../../src/http/ratelimit'
import { captureMailOut } from '../../src/mail/system'
import { buildApp, type App } from '../../src/http/app'
import { createProject, type NewProject } from '../../src/modules/projects/service'
import { composeDeps, storeRuntime, unwireConsumers } from '../../src/main'
import { must } from './must'
import { TestClock } from './clock'

export type StoreKind = 'sqlite' | 'pg'
export const PG_ADMIN_URL = process.env.MAILCTL_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** True under `MAILCTL_TEST_STORES=sqlite` (the fast tier): the PostgreSQL suites are skipped on purpose. */
export const sqliteOnly = testStores(process.env.MAILCTL_TEST_STORES)

function testStores(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'sqlite,pg') return false
  if (value === 'sqlite') return true
  throw new Error(`MAILCTL_TEST_STORES=${value}: expected "sqlite" (the fast tier) or unset (both stores)`)
}

/** Creates a database named uniquely for one test file and returns its URL and a drop function. */
export async function freshPgDatabase(adminUrl = PG_ADMIN_URL): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `mailctl_t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  return {
    url: u.toString(),
    async drop() {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} })
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await a.end()
    },
  }
}

/**
 * A response body as tests read it by default: untyped on purpose, so a test can reach into any answer
 * (`res.body.error.code`) without declaring its type first. What an answer may contain is checked at run
 * time instead: under `bun test` every route's response schema is enforced (src/http/app.ts). A test that
 * wants types passes one: `env.request<DomainOut>(...)`.
 */
// biome-ignore lint/suspicious/noExplicitAny: the one untyped JSON of the test suite, for the reason above
export type JsonBody = any
export interface Res<T = JsonBody> { status: number; body: T; headers: Headers; text: string }
export interface ReqOpts { key?: string | null; body?: unknown; headers?: Record<string, string>; cookie?: string; raw?: BodyInit }

export class TestEnv {
  store!: Store
  deps!: Deps
  app!: App
  config!: Config
  /** The deps' one clock: the real time until a test moves it (helpers/clock.ts). */
  readonly clock = new TestClock()
  private cleanups: Array<() => Promise<void> | void> = []

  /** `pgAdminUrl`: the PostgreSQL server whose fresh database the env uses (a private server for fault tests). */
  constructor(readonly kind: StoreKind, private overrides: Partial<Config> = {}, private pgAdminUrl = PG_ADMIN_URL) {}

  async start() {
    const dir = mkdtempSync(join(tmpdir(), 'mailctl-test-'))
    this.cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    let url = `sqlite://${join(dir, 'test.db')}`
    if (this.kind === 'pg') {
      const db = await freshPgDatabase(this.pgAdminUrl)
      url = db.url
      this.cleanups.push(() => db.drop())
    }
    this.config = loadConfig({
      env: {},
      overrides: {
        dataDir: dir, databaseUrl: url, logLevel: 'silent', hostname: 'mx.mailctl.test',
        publicUrl: 'http://localhost:3000', jwtSecret: `test-secret-${Math.random()}`, sqliteSynchronous: 'NORMAL',
        // The suites' SMTP sinks listen on loopback, which direct delivery otherwise refuses (outbound/guard.ts).
        deliveryAllowHosts: ['127.0.0.0/8', '::1'],
        ...this.overrides,
      },
    })
    this.store = openStore(url, { sqliteSynchronous: 'NORMAL' })
    this.cleanups.unshift(() => this.store.close())
    await migrate(this.store)
    // Through the composition root's wiring, like every other builder of deps. Wired afresh: under
    // `npm run test:fast` a process runs many files, and one may have left a registry changed.
    unwireConsumers()
    const log = createLogger('silent')
    this.deps = composeDeps({
      config: this.config,
      store: this.store,
      log,
      limiter: memoryLimiter(this.clock),
      mail: captureMailOut(this.store, 'mailctl@mx.mailctl.test', this.clock),
      redis: null,
      secret: must(this.config.jwtSecret, 'config.jwtSecret'),
      clock: this.clock,
      runtime: storeRuntime(this.store, this.config, log),
    })
    this.app = buildApp(this.deps)
  }

  /** Registers a clean-up run (in reverse order) when the suite ends. */
  onStop(fn: () => Promise<void> | void) { this.cleanups.unshift(fn) }

  async stop() {
    for (const c of this.cleanups) {
      try { await c() } catch (e) { console.error('cleanup failed', e) }
    }
    this.cleanups = []
  }

  project(name = `p-${Math.random().toString(36).slice(2, 8)}`): Promise<NewProject> {
    return createProject(this.store, { name })
  }

  /**
   * A project whose events go to the outbox (events/interest.ts: a project nothing consumes gets no outbox
   * row): it has a tracked DYNAMIC segment, on a field no contact has, so it never gains members.
   */
  async consumedProject(): Promise<NewProject> {
    const p = await this.project()
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.outboxTestNever', operator: 'equals', value: 'x' }] }] }
    const r = await this.request('POST', '/segments', { key: p.secretKey, body: { name: 'Consumed', condition, trackMembership: true } })
    if (r.status !== 201 && r.status !== 200) throw new Error(`consumedProject: POST /segments answered ${r.status} ${r.text}`)
    return p
  }

  async request<T = JsonBody>(method: string, path: string, opts: ReqOpts = {}): Promise<Res<T>> {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key) headers.authorization = `Bearer ${opts.key}`
    if (opts.cookie) headers.cookie = opts.cookie
    let body: BodyInit | undefined = opts.raw
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await this.app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await res.text()
    let parsed: unknown = text
    try { parsed = text ? JSON.parse(text) : null } catch { /* not JSON */ }
    return { status: res.status, body: parsed as T, headers: res.headers, text }
  }
}

let pgSync: boolean | null = null
/** Synchronous reachability check (suites are registered synchronously). */
/**
 * A migrated store of `kind` on a fresh SQLite file or a fresh PostgreSQL database, for tests of the store
 * itself; `cleanup` closes it and removes the file or drops the database.
 */
export async function migratedStore(kind: StoreKind, name: string): Promise<{ store: Store; url: string; cleanup(): Promise<void> }> {
  let url: string
  let remove: () => Promise<void>
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `mailctl-${name}-`))
    url = `sqlite://${join(dir, 'mailctl.db')}`
    remove = async () => rmSync(dir, { recursive: true, force: true })
  } else {
    const db = await freshPgDatabase()
    url = db.url
    remove = db.drop
  }
  const store = openStore(url)
  await migrate(store)
  return { store, url, cleanup: async () => { await store.close(); await remove() } }
}

export function pgReachableSync(): boolean {
  if (pgSync !== null) return pgSync
  if (sqliteOnly) {
    pgSync = false
    return pgSync
  }
  const u = new URL(PG_ADMIN_URL)
  try {
    const r = Bun.spawnSync(['pg_isready', '-h', u.hostname, '-p', u.port || '5432', '-t', '3'])
    pgSync = r.exitCode === 0
  } catch {
    pgSync = true // no pg_isready: try for real and fail loudly if it is down
  }
  if (!pgSync) {
    if (process.env.CI) throw new Error(`PostgreSQL is unreachable at ${PG_ADMIN_URL}: CI requires it`)
    console.warn(`\n${'!'.repeat(78)}\n!! PostgreSQL unreachable at ${PG_ADMIN_URL}\n!! Every PostgreSQL suite is SKIPPED in this run. Start PostgreSQL to test both stores.\n${'!'.repeat(78)}\n`)
  }
  return pgSync
}

/** Runs `body` against SQLite and PostgreSQL, each with its own fresh store and app. */
export function forEachStore(title: string, body: (env: TestEnv) => void, overrides: Partial<Config> = {}) {
  for (const kind of ['sqlite', 'pg'] as const) {
    const env = new TestEnv(kind, overrides)
    const run = kind === 'sqlite' || pgReachableSync()
    ;(run ? describe : describe.skip)(`${title} [${kind}]`, () => {
      beforeAll(() => env.start(), 60_000)
      afterAll(() => env.stop(), 60_000)
      body(env)
    })
  }
}
