import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { loadConfig, type Config } from '../../src/config'
import { openStore } from '../../src/db/client'
import { closeDeps, createDeps } from '../../src/main'
import { createProject } from '../../src/modules/projects/service'
import { createBackup } from '../../src/ops/backup'
import { copyStore } from '../../src/ops/copy'
import { cleanEnv, SOURCE } from '../cli/run'
import { freshPgDatabase, PG_ADMIN_URL, pgReachableSync } from '../helpers/env'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy'

/*
 * The operator's one-off commands when their PostgreSQL connection is lost in the middle of their one
 * transaction (issue 33; src/db/pg-reserved.ts's reservedTransaction, which they use instead of
 * postgres.js's `begin`): the command ends with an error that says the connection was lost and, for
 * the writing ones, that nothing was written, and the database is as it was. postgres.js's `begin`
 * wrote the ROLLBACK that follows the failure to the closed connection's null socket (an uncaught
 * TypeError that ended the process) or never answered it. The connection is cut by a loopback proxy at
 * the moment the command sends a given statement, so the loss lands mid-transaction, after writes.
 */

const HUNG = Symbol('no answer within the bound')
/** The error `p` fails with, `HUNG` when it neither fails nor succeeds within 20 s (a bound, not a measurement). */
async function failure(p: Promise<unknown>): Promise<unknown> {
  return Promise.race([p.then(() => new Error('it succeeded'), (e: unknown) => e), Bun.sleep(20_000).then(() => HUNG)])
}

describe.skipIf(!pgReachableSync())('one-off commands whose PostgreSQL connection is lost [pg]', () => {
  const target = new URL(PG_ADMIN_URL)
  const dirs: string[] = []
  const drops: Array<() => Promise<void>> = []
  let proxy: TcpProxy
  const SECRET = 'lost-connection-secret-0123456789abcdef'

  /** A PostgreSQL install holding one project, and an archive of it made without a cut. */
  let source: { config: Config; direct: string; url: string }
  let archive: string

  beforeAll(async () => {
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432))
    const db = await database()
    source = { config: config(db.direct), ...db }
    const deps = await createDeps(source.config, { create: true })
    try {
      await createProject(deps.store, { name: 'backed-up' })
      archive = join(tmp(), 'whole.tar')
      await createBackup(deps, archive, { includeKeys: true })
    } finally { await closeDeps(deps) }
  }, 60_000)
  afterAll(async () => {
    await proxy.close()
    for (const d of drops) await d().catch(() => {})
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }, 60_000)

  function tmp(): string {
    const d = mkdtempSync(join(tmpdir(), 'mailctl-lost-'))
    dirs.push(d)
    return d
  }
  /** A fresh database: its URL, and the same through the proxy. */
  async function database(): Promise<{ direct: string; url: string }> {
    const db = await freshPgDatabase()
    drops.push(() => db.drop())
    const u = new URL(db.url)
    u.port = String(proxy.port)
    return { direct: db.url, url: u.toString() }
  }
  function config(databaseUrl: string): Config {
    return loadConfig({ env: {}, overrides: { dataDir: join(tmp(), 'data'), databaseUrl, logLevel: 'silent', secret: databaseUrl.startsWith('postgres') ? SECRET : null } })
  }
  async function rows(url: string, text: string): Promise<Array<Record<string, unknown>>> {
    const c = postgres(url, { max: 1, onnotice: () => {} })
    try { return await c.unsafe(text) } finally { await c.end() }
  }
  const publicTables = async (url: string) => Number((await rows(url, "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'"))[0].n)
  const projectNames = async (url: string) => (await rows(url, 'SELECT name FROM projects ORDER BY name')).map((r) => r.name)

  for (const how of ['end', 'reset'] as const) test(`backup: the connection lost (${how}) while a table is read by its cursor fails it (no archive, no partial file) and the store goes on`, async () => {
    // The install's store reached through the proxy, as a server's whose connection is lost.
    const store = openStore(source.url)
    try {
      const file = join(tmp(), `cut-${how}.tar`)
      const cut = proxy.cutAt('row_to_json(t)::text AS j FROM "projects"', how)
      const err = await failure(createBackup({ config: source.config, store }, file))
      await cut
      expect(err).not.toBe(HUNG)
      expect((err as Error).message).toMatch(/^the database connection was lost during the backup \(/)
      expect(existsSync(file) || existsSync(`${file}.partial`) || existsSync(`${file}.partial.d`)).toBe(false)
      // The same store takes the backup once the database can be reached again.
      const done = await createBackup({ config: source.config, store }, file)
      expect(done.tables.find((t) => t.name === 'projects')?.rows).toBe(1)
    } finally {
      await store.close()
    }
  }, 60_000)

  test('restore (the CLI): a connection lost mid-load exits 1 naming the loss and that nothing was written; the database is as it was, and a second restore works', async () => {
    const db = await database()
    const into = config(db.url)
    const env = cleanEnv({ MAILCTL_DATA_DIR: into.dataDir, DATABASE_URL: db.url, MAILCTL_SECRET: SECRET })
    const restore = async (...args: string[]) => {
      const p = Bun.spawn([...SOURCE, 'restore', archive, ...args], { env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
      const answered = await Promise.race([p.exited, Bun.sleep(30_000).then(() => HUNG)])
      if (answered === HUNG) p.kill()
      return { hung: answered === HUNG, code: await p.exited, stderr: await new Response(p.stderr).text() }
    }
    // Into an empty database: the schema is made and tables are loaded when the projects' rows go out.
    let cut = proxy.cutAt('INSERT INTO "projects"', 'end')
    const first = await restore()
    await cut
    expect(first.hung).toBe(false)
    expect(first.stderr).toMatch(/^error: the database connection was lost during the restore \(.*\); it was not committed: nothing of it was written\n$/)
    expect(first.code).toBe(1)
    expect(await publicTables(db.direct)).toBe(0)

    const second = await restore()
    expect(second.code).toBe(0)
    expect(await projectNames(db.direct)).toEqual(['backed-up'])

    // With --force over that install, reset (ECONNRESET) this time: the install is still whole.
    await rows(db.direct, "UPDATE projects SET name = 'already-here'")
    cut = proxy.cutAt('INSERT INTO "projects"', 'reset')
    const third = await restore('--force')
    await cut
    expect(third.hung).toBe(false)
    expect(third.stderr).toMatch(/^error: the database connection was lost during the restore \(.*\); it was not committed: nothing of it was written\n$/)
    expect(third.code).toBe(1)
    expect(await projectNames(db.direct)).toEqual(['already-here'])
  }, 120_000)

  test('store copy: a connection lost mid-load fails the copy, the target stays empty, and the copy works again', async () => {
    const source = config(`sqlite://${join(tmp(), 'mailctl.db')}`)
    const deps = await createDeps(source, { create: true })
    try {
      await createProject(deps.store, { name: 'copied' })
      const db = await database()
      const cut = proxy.cutAt('INSERT INTO "projects"', 'end')
      const err = await failure(copyStore(deps, db.url))
      await cut
      expect(err).not.toBe(HUNG)
      expect((err as Error).message).toMatch(/^the database connection was lost during the copy \(.*\); it was not committed: nothing of it was written$/)
      expect(await publicTables(db.direct)).toBe(0)
      const copied = await copyStore(deps, db.url)
      expect(copied.ok).toBe(true)
      expect(await projectNames(db.direct)).toEqual(['copied'])
    } finally {
      await closeDeps(deps)
    }
  }, 60_000)
})
