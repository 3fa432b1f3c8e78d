import { afterAll, describe, expect, test } from 'bun:test'
import { createPrivateKey, createPublicKey, randomBytes, sign, verify } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { loadConfig, type Config } from '../../src/config'
import { ctxFor, type Deps } from '../../src/deps'
import { openStore } from '../../src/db/client'
import { embeddedMigrations } from '../../src/db/migrations.macro' with { type: 'macro' }
import { AppError } from '../../src/errors'
import { buildApp } from '../../src/http/app'
import { unsubscribeUrl } from '../../src/mail/links'
import { closeDeps, createDeps } from '../../src/main'
import { createDomain, signingKeyFor } from '../../src/modules/domains/service'
import { createProject } from '../../src/modules/projects/service'
import { createBackup } from '../../src/ops/backup'
import { restoreBackup } from '../../src/ops/restore'
import { RESTORE_MARKER } from '../../src/ops/restore-marker'
import { run as runCli, SOURCE } from '../cli/run'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'
import { must } from '../helpers/must'

/*
 * Backup and restore (issue 39) on real SQLite files and fresh PostgreSQL databases: a backup taken while
 * the install writes, restored into an empty target, signs with the same DKIM keys and honours links
 * signed before; damaged archives and occupied targets are refused before anything is written; an
 * archive of an older migration level is migrated after restoring.
 */

const dirs: string[] = []
const drops: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const d of drops) await d().catch(() => {})
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
}, 60_000)

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'mailctl-backup-'))
  dirs.push(d)
  return d
}

const PG_MIGRATIONS = embeddedMigrations('pg')
const SQLITE_MIGRATIONS = embeddedMigrations('sqlite')
const SECRET = 'backup-test-secret-0123456789abcdefghij'

async function target(kind: 'sqlite' | 'pg'): Promise<Config> {
  const dataDir = join(tmp(), 'data')
  let databaseUrl = `sqlite://${join(dataDir, 'mailctl.db')}`
  if (kind === 'pg') {
    const db = await freshPgDatabase()
    drops.push(() => db.drop())
    databaseUrl = db.url
  }
  return loadConfig({
    env: {},
    overrides: {
      dataDir, databaseUrl, logLevel: 'silent', hostname: 'mx.mailctl.test', publicUrl: 'http://localhost:3000', sqliteSynchronous: 'NORMAL', rateLimitPerMinute: 100_000_000,
      // On SQLite the keys come from the data dir's files (they travel in the archive); PostgreSQL needs them set.
      ...(kind === 'pg' ? { secret: SECRET } : {}),
    },
  })
}

/** The environment that points the CLI at a target's store. */
function settingsEnv(c: Config): Record<string, string> {
  return { MAILCTL_DATA_DIR: c.dataDir, DATABASE_URL: c.databaseUrl, ...(c.secret ? { MAILCTL_SECRET: c.secret } : {}) }
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(AppError)
  return err as AppError
}

/** What a fresh data dir or database holds: nothing, or only what the test put there. */
function dirEntries(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : []
}

for (const kind of ['sqlite', 'pg'] as const) {
  const run = kind === 'sqlite' || pgReachableSync()
  ;(run ? describe : describe.skip)(`backup and restore [${kind}]`, () => {
    let source: Deps
    let archive: string
    let projectId: string
    let secretKey: string
    let contactId: string
    let publicDkim: string
    let domainName: string
    let linkPath: string

    test('a backup taken while the install writes is consistent, and restores to the same rows, keys and links', async () => {
      source = await createDeps(await target(kind), { create: true })
      drops.push(() => closeDeps(source))
      const app = buildApp(source)
      const p = await createProject(source.store, { name: 'backed-up' })
      projectId = p.id
      secretKey = p.secretKey
      const ctx = ctxFor(source, projectId, { kind: 'cli' })
      domainName = `backup-${Date.now().toString(36)}.example.com`
      const domain = await createDomain(ctx, { projectId, domain: domainName })
      publicDkim = must(domain.records.find((r) => r.purpose === 'DKIM'), 'DKIM record').value
      // Sending needs a verified domain; the DNS check is not what this test is about.
      await source.store.exec(sql`UPDATE domains SET verified = ${kind === 'pg' ? sql`true` : sql`1`} WHERE id = ${domain.id}`)
      const post = (email: string) => app.handle(new Request('http://localhost/contacts', {
        method: 'POST', headers: { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ email, subscribed: true }),
      }))
      const first = await (await post('first@example.com')).json() as { id: string }
      contactId = first.id
      linkPath = new URL(unsubscribeUrl(source, { projectId, contactId })).pathname

      // Writers keep going for the whole backup.
      let writing = true
      let written = 0
      const writer = (async () => {
        while (writing) {
          const res = await post(`w${written}@example.com`)
          expect(res.status).toBeLessThan(300)
          written++
          // Requests from a socket arrive in separate turns of the event loop; so do these.
          await new Promise((r) => setImmediate(r))
        }
      })()
      archive = join(tmp(), 'b.tar')
      const result = await createBackup(source, archive, { includeKeys: true })
      writing = false
      await writer
      expect(written).toBeGreaterThan(0)
      expect(existsSync(archive)).toBe(true)
      expect(existsSync(`${archive}.partial`)).toBe(false)
      expect(existsSync(`${archive}.partial.d`)).toBe(false)
      const backedUp = must(result.tables.find((t) => t.name === 'contacts'), 'contacts in the manifest').rows
      const [{ n: now }] = await source.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts`)
      expect(backedUp).toBeGreaterThanOrEqual(1)
      expect(backedUp).toBeLessThanOrEqual(Number(now))

      const into = await target(kind)
      const restored = await restoreBackup(into, archive)
      expect(restored.applied).toEqual([])
      expect(must(restored.tables.find((t) => t.name === 'contacts'), 'contacts restored').rows).toBe(backedUp)
      expect(restored.keysMatch).toBe(true)
      if (kind === 'sqlite') {
        expect(readFileSync(join(into.dataDir, 'dkim.key'), 'utf8')).toBe(readFileSync(join(source.config.dataDir, 'dkim.key'), 'utf8'))
        expect(existsSync(join(into.dataDir, RESTORE_MARKER))).toBe(false)
      } else {
        expect(Object.keys(restored.settings).sort()).toEqual(['MAILCTL_DKIM_KEY', 'MAILCTL_JWT_SECRET'])
      }

      // The restored install starts (its keys match the fingerprints recorded), signs with the same DKIM key,
      // and the unsubscribe link signed before the backup still works.
      const deps = await createDeps(into, { create: false })
      try {
        const [{ n }] = await deps.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts`)
        expect(Number(n)).toBe(backedUp)
        const key = must(await signingKeyFor(ctxFor(deps, projectId, { kind: 'cli' }), domainName), 'signing key')
        const published = createPublicKey({ key: Buffer.from(must(/p=([A-Za-z0-9+/=]+)/.exec(publicDkim.replace(/["\s]/g, '')), 'p=')[1], 'base64'), format: 'der', type: 'spki' })
        const signature = sign('sha256', Buffer.from('hello'), createPrivateKey(key.privateKeyPem))
        expect(verify('sha256', Buffer.from('hello'), published, signature)).toBe(true)
        const restoredApp = buildApp(deps)
        const page = await restoredApp.handle(new Request(`http://localhost${linkPath}`))
        expect(page.status).toBe(200)
        const done = await restoredApp.handle(new Request(`http://localhost${linkPath}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' }))
        expect(done.status).toBeLessThan(300)
        const [c] = await deps.store.rows<{ subscribed: unknown }>(sql`SELECT subscribed FROM contacts WHERE id = ${contactId}`)
        expect(Boolean(c.subscribed)).toBe(false)
        // The API key of the backed-up project still works.
        const list = await restoredApp.handle(new Request('http://localhost/contacts', { headers: { authorization: `Bearer ${secretKey}` } }))
        expect(list.status).toBe(200)
      } finally {
        await closeDeps(deps)
      }
    }, 120_000)

    test('a truncated or altered archive is refused before anything is written', async () => {
      const bytes = readFileSync(archive)
      const truncated = join(tmp(), 'truncated.tar')
      writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length * 0.6)))
      const altered = join(tmp(), 'altered.tar')
      const copy = Buffer.from(bytes)
      // A byte in the first entry's data (after its 512-byte header), not in a header.
      copy[512 + 100] ^= 0xff
      writeFileSync(altered, copy)
      const noManifest = join(tmp(), 'nomanifest.tar')
      writeFileSync(noManifest, bytes.subarray(0, bytes.length - 1024 - 4096))
      for (const bad of [truncated, altered, noManifest]) {
        const into = await target(kind)
        const err = await refusal(restoreBackup(into, bad))
        expect(err.code).toBe('BAD_REQUEST')
        expect(err.message).toMatch(/archive refused/)
        expect(dirEntries(into.dataDir)).toEqual([])
        if (kind === 'pg') {
          const store = openStore(into.databaseUrl)
          const [{ n }] = await store.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)
          await store.close()
          expect(n).toBe(0)
        }
      }
    }, 60_000)

    test.skipIf(!pgReachableSync())('an archive of the other store kind is refused before anything is written, naming what to do', async () => {
      const other = kind === 'sqlite' ? 'pg' : 'sqlite'
      const into = await target(other)
      const err = await refusal(restoreBackup(into, archive))
      expect(err.code).toBe('BAD_REQUEST')
      expect(err.message).toMatch(kind === 'sqlite' ? /archive is of a SQLite install and DATABASE_URL is PostgreSQL/ : /archive is of a PostgreSQL install and DATABASE_URL is SQLite/)
      expect(dirEntries(into.dataDir)).toEqual([])
    }, 60_000)

    test('a target that is not empty is refused without --force, and replaced with it', async () => {
      const into = await target(kind)
      // Another install, made by another process (as an operator's would be).
      const made = await runCli(SOURCE, ['migrate'], settingsEnv(into))
      expect(made.code).toBe(0)
      expect((await runCli(SOURCE, ['project', 'create', '--name', 'already-here'], settingsEnv(into))).code).toBe(0)
      const err = await refusal(restoreBackup(into, archive))
      expect(err.code).toBe('CONFLICT')
      expect(err.message).toMatch(/--force/)
      const restored = await restoreBackup(into, archive, { force: true })
      expect(restored.dialect).toBe(kind)
      const deps = await createDeps(into, { create: false })
      try {
        const names = (await deps.store.rows<{ name: string }>(sql`SELECT name FROM projects ORDER BY name`)).map((r) => r.name)
        expect(names).toEqual(['backed-up'])
      } finally { await closeDeps(deps) }
    }, 60_000)

    test('an archive of an older migration level is migrated after restoring', async () => {
      const older = await target(kind)
      const store = openStore(older.databaseUrl, { create: true })
      const all = kind === 'pg' ? PG_MIGRATIONS : SQLITE_MIGRATIONS
      const cut = all.findIndex((m) => m.name.startsWith('0020'))
      await store.script(kind === 'pg'
        ? 'CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ(3) NOT NULL DEFAULT now())'
        : 'CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)')
      for (const m of all.slice(0, cut)) await store.applyMigration(m.name, m.sql)
      await store.exec(kind === 'pg'
        ? sql`INSERT INTO projects (id, name, public_key, secret_key_hash, created_at, updated_at) VALUES ('old-project', 'old', 'pk_old', 'hash_old', now(), now())`
        : sql`INSERT INTO projects (id, name, public_key, secret_key_hash, created_at, updated_at) VALUES ('old-project', 'old', 'pk_old', 'hash_old', 0, 0)`)
      const file = join(tmp(), 'older.tar')
      await createBackup({ config: older, store }, file, { includeKeys: kind === 'pg' })
      await store.close()
      const into = await target(kind)
      const restored = await restoreBackup(into, file)
      expect(restored.migrationLevel).toBe(all[cut - 1].name)
      expect(restored.applied).toContain(all[all.length - 1].name)
      expect(restored.applied).toContain(all[cut].name)
      const deps = await createDeps(into, { create: false, migrate: false })
      try {
        const [p] = await deps.store.rows<{ name: string }>(sql`SELECT name FROM projects WHERE id = 'old-project'`)
        expect(p.name).toBe('old')
      } finally { await closeDeps(deps) }
    }, 60_000)

    if (kind === 'sqlite') {
      test('a data dir whose restore did not finish is refused until a restore finishes', async () => {
        const into = await target(kind)
        await restoreBackup(into, archive)
        // What a restore killed between its first and last write leaves behind.
        writeFileSync(join(into.dataDir, RESTORE_MARKER), '{}\n')
        const err = await createDeps(into, { create: false }).then(() => null, (e: unknown) => e as Error)
        expect(err?.message).toMatch(/did not finish/)
        expect((await refusal(restoreBackup(into, archive))).code).toBe('CONFLICT')
        await restoreBackup(into, archive, { force: true })
        expect(existsSync(join(into.dataDir, RESTORE_MARKER))).toBe(false)
        const deps = await createDeps(into, { create: false })
        await closeDeps(deps)
      }, 60_000)

      test('a restore killed midway (SIGKILL) leaves a data dir every command refuses, until a restore finishes', async () => {
        // An archive large enough that unpacking it takes a while: 48 MB of uploads.
        const from = await target(kind)
        const made = await runCli(SOURCE, ['migrate'], settingsEnv(from))
        expect(made.code).toBe(0)
        mkdirSync(join(from.dataDir, 'uploads'), { recursive: true })
        for (let i = 0; i < 6; i++) writeFileSync(join(from.dataDir, 'uploads', `big${i}.png`), randomBytes(8 << 20))
        const big = join(tmp(), 'big.tar')
        expect((await runCli(SOURCE, ['backup', big], settingsEnv(from))).code).toBe(0)
        const into = await target(kind)
        const child = Bun.spawn([...SOURCE, 'restore', big], { env: { PATH: process.env.PATH ?? '', MAILCTL_LOG_LEVEL: 'warn', ...settingsEnv(into) }, stdout: 'ignore', stderr: 'ignore' })
        const marker = join(into.dataDir, RESTORE_MARKER)
        while (!existsSync(marker) && child.exitCode === null) await Bun.sleep(1)
        child.kill('SIGKILL')
        await child.exited
        expect(child.signalCode).toBe('SIGKILL')
        expect(existsSync(marker)).toBe(true)
        const refused = await runCli(SOURCE, ['project', 'list'], settingsEnv(into))
        expect(refused.code).toBe(2)
        expect(refused.stderr).toMatch(/did not finish/)
        expect((await runCli(SOURCE, ['restore', big], settingsEnv(into))).code).toBe(1)
        const again = await runCli(SOURCE, ['restore', big, '--force'], settingsEnv(into))
        expect(again.code).toBe(0)
        expect(existsSync(marker)).toBe(false)
        expect((await runCli(SOURCE, ['project', 'list'], settingsEnv(into))).code).toBe(0)
      }, 120_000)

      test('a backup never overwrites a file and leaves nothing behind when it fails', async () => {
        const err = await refusal(createBackup(source, archive))
        expect(err.code).toBe('CONFLICT')
        // An unwritable destination (a directory where the archive's working dir would go) fails cleanly.
        const dir = tmp()
        const file = join(dir, 'x.tar')
        writeFileSync(`${file}.partial.d`, 'in the way')
        rmSync(`${file}.partial.d`)
        const size = statSync(archive).size
        expect(size).toBeGreaterThan(0)
        const blocked = join(dir, 'blocked')
        writeFileSync(blocked, 'a file, not a directory')
        const failure = await createBackup(source, join(blocked, 'y.tar')).then(() => null, (e: unknown) => e)
        expect(failure).toBeInstanceOf(Error)
        expect(readdirSync(dir).sort()).toEqual(['blocked'])
      })
    }
  })
}

/*
 * A backup into a full disk (issue 39, Bad input and faults), on a real full volume: a small private tmpfs
 * mounted for this test only (root and `mount` needed; skipped otherwise, as test/cli/disk-full.test.ts).
 */
const fullDir = mkdtempSync(join(tmpdir(), 'mailctl-backup-full-'))
const mounted = process.getuid?.() === 0 && Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', fullDir]).exitCode === 0
afterAll(() => {
  if (mounted) Bun.spawnSync(['umount', fullDir])
  rmSync(fullDir, { recursive: true, force: true })
})

;(mounted ? describe : describe.skip)('a backup into a full disk [sqlite, tmpfs]', () => {
  test('fails with the disk\'s error, leaves nothing on it, and the install goes on', async () => {
    const config = await target('sqlite')
    const deps = await createDeps(config, { create: true })
    try {
      const p = await createProject(deps.store, { name: 'full-disk' })
      const err = await createBackup(deps, join(fullDir, 'b.tar')).then(() => null, (e: unknown) => e as NodeJS.ErrnoException)
      expect(err?.message).toMatch(/ENOSPC|no space|full/i)
      expect(readdirSync(fullDir)).toEqual([])
      // The running install is untouched: it reads and writes as before.
      await createProject(deps.store, { name: 'after' })
      const [{ n }] = await deps.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM projects WHERE id = ${p.id}`)
      expect(Number(n)).toBe(1)
    } finally {
      await closeDeps(deps)
    }
  }, 60_000)
})
