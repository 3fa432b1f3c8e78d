import { existsSync, readdirSync } from 'node:fs'
import { copyFile, mkdir, open, readdir, rename, rm, writeFile, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { Database } from 'bun:sqlite'
import type { Config } from '../config'
import { openStore, pgConnection, sqlitePath, type Store } from '../db/client'
import { embeddedMigrations } from '../db/migrations.macro' with { type: 'macro' }
import { knownMigrations, migrate } from '../db/migrate'
import { reservedTransaction } from '../db/pg-reserved'
import { recordedFingerprints } from '../db/secret-check'
import { badRequest, conflict } from '../errors'
import { fingerprint } from '../secrets'
import { NODE_STALE_MS } from '../jobs/nodes'
import { extractArchive, lineSplitter, verifyArchive, type Manifest } from './archive'
import { countRows, dropSecondaryIndexes, ident, LineLoader, setTriggers } from './pg-data'
import { restoreMarker } from './restore-marker'
import { ArchiveError } from './tar'

/**
 * `mailctl restore FILE`: an archive of `mailctl backup` into the store of the settings (DATABASE_URL,
 * MAILCTL_DATA_DIR), which must be empty unless `force`. The whole archive is read and every checksum
 * checked before anything is written. Then:
 * - SQLite: the files are unpacked into a staging dir inside the data dir, the database's row counts
 *   checked and its newer migrations applied there, and only then moved into place; `restore.incomplete`
 *   (restore-marker.ts) is in the data dir from the first write to the last, so a killed restore leaves a
 *   data dir every command refuses;
 * - PostgreSQL: the schema at the archive's migration level and every row are written in one transaction
 *   (a killed restore leaves the database as it was), then the newer migrations are applied.
 */

export interface RestoreOptions { force?: boolean; onProgress?: (message: string) => void }

export interface RestoreResult {
  dialect: 'sqlite' | 'pg'
  backupCreatedAt: string
  backupVersion: string
  migrationLevel: string | null
  /** The newer migrations this mailctl applied after restoring. */
  applied: string[]
  tables: Array<{ name: string; rows: number }>
  uploads: number
  keys: Manifest['keys']
  /** Settings the operator must set (PostgreSQL with keys in the archive). */
  settings: Record<string, string>
  /** Whether this configuration's keys are those the restored database was first served with (null: not recorded). */
  keysMatch: boolean | null
  durationMs: number
}

const PG_MIGRATIONS = embeddedMigrations('pg')

/** The DDL of migrate.ts's bookkeeping table on PostgreSQL (created here inside the restore's transaction). */
const PG_SCHEMA_MIGRATIONS = 'CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ(3) NOT NULL DEFAULT now())'

function refuse(err: unknown): never {
  if (err instanceof ArchiveError) throw badRequest(`archive refused, nothing was written: ${err.message}`)
  throw err
}

export async function restoreBackup(config: Config, file: string, opts: RestoreOptions = {}): Promise<RestoreResult> {
  const started = performance.now()
  const progress = opts.onProgress ?? (() => {})
  progress('checking the archive')
  const manifest = await verifyArchive(file).catch(refuse)
  const dialect = config.databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'pg'
  if (manifest.dialect !== dialect) {
    // dialect: the refusal names the archive's store and what to do
    throw badRequest(manifest.dialect === 'sqlite'
      ? 'this archive is of a SQLite install and DATABASE_URL is PostgreSQL: restore it into a SQLite data dir, then move it with `mailctl store copy --to postgres://...`'
      : 'this archive is of a PostgreSQL install and DATABASE_URL is SQLite: set DATABASE_URL to an empty PostgreSQL database')
  }
  const known = new Set(knownMigrations({ dialect }))
  const unknown = manifest.migrations.filter((m) => !known.has(m))
  if (unknown.length) throw badRequest(`this archive was written by a newer mailctl (${manifest.mailctlVersion}; migrations ${unknown.join(', ')} are unknown here): restore it with that version or a later one`)
  // dialect: a SQLite archive is a database file to put in place, a PostgreSQL one table dumps to load
  const done = dialect === 'sqlite' ? await restoreSqlite(config, file, manifest, opts, progress) : await restorePg(config, file, manifest, opts, progress)
  return {
    dialect, backupCreatedAt: manifest.createdAt, backupVersion: manifest.mailctlVersion,
    migrationLevel: manifest.migrations.at(-1) ?? null, keys: manifest.keys,
    uploads: manifest.files.filter((f) => f.path.startsWith('uploads/')).length,
    ...done, durationMs: Math.round(performance.now() - started),
  }
}

/** A data dir's or database's live server: a node whose heartbeat is recent (src/jobs/nodes.ts). */
function liveNodeMessage(): string {
  return 'a mailctl server is running on this store (its node heartbeat is recent): stop it before restoring'
}

async function keysMatch(store: Store, keys: { jwt: string; dkim: Buffer } | null): Promise<boolean | null> {
  const recorded = await recordedFingerprints(store).catch(() => ({} as Record<string, string>))
  if (!recorded.jwt && !recorded.dkim) return null
  if (!keys) return null
  return (!recorded.jwt || recorded.jwt === fingerprint(keys.jwt)) && (!recorded.dkim || recorded.dkim === fingerprint(keys.dkim))
}

/** The keys the restored SQLite install will use: the settings' where set, else the archive's key files. */
async function stagedKeys(config: Config, dir: string): Promise<{ jwt: string; dkim: Buffer } | null> {
  const read = async (n: string) => existsSync(join(dir, n)) ? (await Bun.file(join(dir, n)).text()).trim() : null
  const { deriveKey, LABELS } = await import('../secrets')
  const jwt = config.jwtSecret ?? (config.secret ? deriveKey(config.secret, LABELS.jwt).toString('hex') : await read('secret.key'))
  const dkimText = config.dkimKey ?? (config.secret ? deriveKey(config.secret, LABELS.dkim).toString('base64') : await read('dkim.key'))
  return jwt && dkimText ? { jwt, dkim: Buffer.from(dkimText, 'base64') } : null
}

// dialect: a SQLite archive is a database file to put in place, a PostgreSQL one table dumps to load
async function restoreSqlite(config: Config, file: string, manifest: Manifest, opts: RestoreOptions, progress: (m: string) => void) {
  const dataDir = config.dataDir
  const dbPath = sqlitePath(config.databaseUrl)
  const marker = restoreMarker(config)
  const uploadsDir = join(dataDir, 'uploads')
  const present = [dbPath, `${dbPath}-wal`, join(dataDir, 'secret.key'), join(dataDir, 'dkim.key'), marker].filter((p) => existsSync(p))
  if (existsSync(uploadsDir) && readdirSync(uploadsDir).length) present.push(uploadsDir)
  if (present.length && !opts.force) throw conflict(`the target is not empty (${present.join(', ')}): restore into an empty data dir, or pass --force to replace it`)
  if (existsSync(dbPath)) {
    const db = new Database(dbPath, { readonly: true })
    try {
      const live = db.query('SELECT count(*) AS n FROM nodes WHERE heartbeat_at > ?').get(Date.now() - NODE_STALE_MS) as { n: number } | null
      if (live?.n) throw conflict(liveNodeMessage())
    } catch (err) {
      if (!/no such table/.test((err as Error).message)) throw err
    } finally { db.close() }
  }
  await mkdir(dataDir, { recursive: true })
  // A marker left by an earlier restore that did not finish stays until one does.
  const hadMarker = existsSync(marker)
  await writeFile(marker, `${JSON.stringify({ archive: file, startedAt: new Date().toISOString() })}\n`)
  const staging = join(dataDir, '.restore-staging')
  await rm(staging, { recursive: true, force: true })
  await mkdir(join(staging, 'keys'), { recursive: true })
  await mkdir(join(staging, 'uploads'), { recursive: true })
  progress('unpacking')
  // Until the files are moved into place the target is untouched: a failure removes what was written.
  const staged = join(staging, 'mailctl.db')
  let applied: string[]
  let match: boolean | null
  const tables: Array<{ name: string; rows: number }> = []
  try {
    await extractArchive(file, manifest, async (name) => {
      const out: FileHandle = await open(join(staging, name), 'w', 0o600)
      return {
        async data(chunk) { await out.write(chunk) },
        async end() { await out.sync(); await out.close() },
      }
    }).catch(refuse)
    if (!existsSync(staged)) throw badRequest('archive refused: it holds no mailctl.db')
    const check = new Database(staged, { readonly: true })
    try {
      for (const t of manifest.tables) {
        const { n } = check.query(`SELECT count(*) AS n FROM ${ident(t.name)}`).get() as { n: number }
        if (n !== t.rows) throw badRequest(`archive refused: table ${t.name} holds ${n} rows, the manifest says ${t.rows}`)
        tables.push({ name: t.name, rows: n })
      }
    } finally { check.close() }
    progress('applying newer migrations')
    const store = openStore(`sqlite://${staged}`, { create: false })
    try {
      applied = await migrate(store)
      match = await keysMatch(store, await stagedKeys(config, join(staging, 'keys')))
    } finally { await store.close() }
  } catch (err) {
    await rm(staging, { recursive: true, force: true }).catch(() => {})
    if (!hadMarker) await rm(marker, { force: true }).catch(() => {})
    throw err
  }
  progress('moving the restored files into place')
  for (const p of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, join(dataDir, 'secret.key'), join(dataDir, 'dkim.key')]) await rm(p, { force: true })
  await rm(uploadsDir, { recursive: true, force: true })
  for (const n of await readdir(join(staging, 'keys'))) await rename(join(staging, 'keys', n), join(dataDir, n))
  await rename(join(staging, 'uploads'), uploadsDir)
  await mkdir(dirname(dbPath), { recursive: true })
  for (const suffix of ['-wal', '']) {
    const from = `${staged}${suffix}`
    if (!existsSync(from)) continue
    await rename(from, `${dbPath}${suffix}`).catch(async (err) => {
      // Another file system (DATABASE_URL outside the data dir): copy, then the staging dir goes.
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err
      await copyFile(from, `${dbPath}${suffix}`)
    })
  }
  await rm(staging, { recursive: true, force: true })
  await rm(marker)
  return { applied, tables, settings: {}, keysMatch: match }
}

async function restorePg(config: Config, file: string, manifest: Manifest, opts: RestoreOptions, progress: (m: string) => void) {
  const store = openStore(config.databaseUrl)
  try {
    const client = pgConnection(store.db)
    const existing = await client<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`
    if (existing[0].n > 0) {
      if (!opts.force) throw conflict('the target database is not empty: restore into an empty database, or pass --force to replace its tables')
      const live = await client<{ n: number }[]>`SELECT count(*)::int AS n FROM nodes WHERE heartbeat_at > now() - make_interval(secs => ${NODE_STALE_MS / 1000})`.catch(() => [{ n: 0 }])
      if (live[0].n) throw conflict(liveNodeMessage())
    }
    const keys: Record<string, string> = {}
    const tables: Array<{ name: string; rows: number }> = []
    await reservedTransaction(client, async (q) => {
      if (existing[0].n > 0) {
        progress('dropping the existing tables (--force)')
        await q.unsafe('DROP SCHEMA public CASCADE')
        await q.unsafe('CREATE SCHEMA public')
      }
      progress(`creating the schema at ${manifest.migrations.at(-1)}`)
      await q.unsafe(PG_SCHEMA_MIGRATIONS)
      const wanted = new Set(manifest.migrations)
      for (const m of PG_MIGRATIONS) if (wanted.has(m.name)) await q.unsafe(m.sql).simple()
      for (const name of manifest.migrations) await q`INSERT INTO schema_migrations (name) VALUES (${name})`
      const byFile = new Map(manifest.tables.map((t) => [t.file, t]))
      await setTriggers(q, manifest.tables.map((t) => t.name), false)
      const indexes = await dropSecondaryIndexes(q, manifest.tables.map((t) => t.name))
      await extractArchive(file, manifest, async (name) => {
        if (name.startsWith('keys/')) {
          const parts: Buffer[] = []
          return { data(c) { parts.push(Buffer.from(c)) }, end() { keys[name.slice(5)] = Buffer.concat(parts).toString('utf8').trim() } }
        }
        const t = byFile.get(name)
        if (!t) return { data() {}, end() {} }
        progress(`loading ${t.name}`)
        const loader = new LineLoader(q, t.name, t.columns ?? [])
        const lines = lineSplitter((l) => loader.add(l))
        return { data: (c) => lines.data(c), async end() { await lines.end(); await loader.flush() } }
      }).catch(refuse)
      progress('building the indexes')
      await indexes.rebuild()
      await setTriggers(q, manifest.tables.map((t) => t.name), true)
      for (const t of manifest.tables) {
        const n = await countRows(q, t.name)
        if (n !== t.rows) throw badRequest(`archive refused: table ${t.name} holds ${n} rows after loading, the manifest says ${t.rows}`)
        tables.push({ name: t.name, rows: n })
      }
    }, { what: 'the restore' })
    progress('applying newer migrations')
    const applied = await migrate(store)
    const settings: Record<string, string> = {}
    if (keys['secret.key']) settings.MAILCTL_JWT_SECRET = keys['secret.key']
    if (keys['dkim.key']) settings.MAILCTL_DKIM_KEY = keys['dkim.key']
    const { dkimKey, jwtSecret } = await import('../secrets')
    const configured = config.secret || (config.jwtSecret && config.dkimKey) ? { jwt: jwtSecret(config), dkim: dkimKey(config) } : null
    const match = await keysMatch(store, configured)
    return { applied, tables, settings, keysMatch: match }
  } finally {
    await store.close()
  }
}
