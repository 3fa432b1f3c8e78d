import { existsSync } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import pkg from '../../package.json'
import type { Config } from '../config'
import { pgConnection, sqlitePath, type Store } from '../db/client'
import { reservedTransaction } from '../db/pg-reserved'
import { conflict } from '../errors'
import { dkimKey, jwtSecret } from '../secrets'
import { FORMAT, MANIFEST, type Manifest, type ManifestTable } from './archive'
import { ident, pgTables } from './pg-data'
import { sqliteSnapshot } from './snapshot'
import { TarWriter, type TarEntryInfo } from './tar'

/**
 * `mailctl backup FILE` and the scheduled backup job: a consistent snapshot of a running install in one
 * archive (src/ops/archive.ts says what it holds). The archive is written as FILE.partial next to FILE,
 * with its working files in FILE.partial.d, and renamed to FILE only once complete and on disk: a failure
 * (a full disk) leaves no FILE, removes the partial files and never touches the running install.
 */

export interface BackupOptions {
  /** PostgreSQL: put the JWT secret and the DKIM master key in the archive (they come from the settings otherwise). */
  includeKeys?: boolean
  /** Progress lines for a terminal. */
  onProgress?: (message: string) => void
}

export interface BackupResult {
  file: string
  bytes: number
  durationMs: number
  dialect: 'sqlite' | 'pg'
  migrationLevel: string | null
  keys: Manifest['keys']
  uploads: number
  tables: ManifestTable[]
}

export async function createBackup(env: { config: Config; store: Store }, target: string, opts: BackupOptions = {}): Promise<BackupResult> {
  const started = performance.now()
  const file = resolve(target)
  const progress = opts.onProgress ?? (() => {})
  if (existsSync(file)) throw conflict(`${file} exists already: choose another name (a backup never overwrites a file)`)
  await mkdir(dirname(file), { recursive: true })
  const partial = `${file}.partial`
  const work = `${file}.partial.d`
  await rm(work, { recursive: true, force: true })
  await mkdir(work, { recursive: true })
  const fh = await open(partial, 'w', 0o600)
  let done = false
  try {
    const tar = new TarWriter(fh)
    const files: TarEntryInfo[] = []
    const add = async (name: string, path: string) => {
      const src = await open(path, 'r')
      try { files.push(await tar.addFile(name, src)) } finally { await src.close() }
    }
    const { store, config } = env
    let migrations: string[]
    let tables: ManifestTable[]
    let keys: Manifest['keys'] = 'settings'
    // dialect: a SQLite install is archived as a VACUUM INTO file with its key files, PostgreSQL as table dumps
    if (store.dialect === 'sqlite') {
      progress('taking the database snapshot (VACUUM INTO)')
      const snap = await sqliteSnapshot(sqlitePath(store.url), join(work, 'mailctl.db'))
      migrations = snap.migrations
      tables = snap.tables
      progress(`archiving the database (${((await stat(join(work, 'mailctl.db'))).size / 1e6).toFixed(1)} MB)`)
      await add('mailctl.db', join(work, 'mailctl.db'))
      await rm(join(work, 'mailctl.db'))
      for (const name of ['secret.key', 'dkim.key']) {
        const path = join(config.dataDir, name)
        if (existsSync(path)) { await add(`keys/${name}`, path); keys = 'files' }
      }
    } else {
      const dumped = await dumpPg(store, join(work, 'tables'), progress)
      migrations = dumped.migrations
      tables = dumped.tables
      for (const t of tables) {
        await add(t.file as string, join(work, t.file as string))
        await rm(join(work, t.file as string))
      }
      if (opts.includeKeys) {
        files.push(await tar.addBuffer('keys/secret.key', Buffer.from(`${jwtSecret(config)}\n`)))
        files.push(await tar.addBuffer('keys/dkim.key', Buffer.from(`${dkimKey(config).toString('base64')}\n`)))
        keys = 'included'
      }
    }
    let uploads = 0
    const uploadDir = join(config.dataDir, 'uploads')
    if (!config.s3Url && existsSync(uploadDir)) {
      progress('archiving uploads')
      for (const name of (await readdir(uploadDir)).sort()) {
        if (name.startsWith('.')) continue
        // An upload removed since it was listed is simply not in the archive.
        try { await add(`uploads/${name}`, join(uploadDir, name)) } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
          continue
        }
        uploads++
      }
    }
    const manifest: Manifest = {
      format: FORMAT, formatVersion: 1, mailctlVersion: pkg.version, createdAt: new Date().toISOString(),
      dialect: store.dialect, migrations, keys, uploads: config.s3Url ? 'bucket' : 'data dir', tables, files,
    }
    await tar.addBuffer(MANIFEST, Buffer.from(JSON.stringify(manifest, null, 2)))
    await tar.finish()
    await fh.sync()
    await fh.close()
    done = true
    await rename(partial, file)
    await rm(work, { recursive: true, force: true })
    return {
      file, bytes: tar.written, durationMs: Math.round(performance.now() - started), dialect: store.dialect,
      migrationLevel: migrations.at(-1) ?? null, keys, uploads, tables,
    }
  } catch (err) {
    if (!done) await fh.close().catch(() => {})
    await rm(partial, { force: true }).catch(() => {})
    await rm(work, { recursive: true, force: true }).catch(() => {})
    throw err
  }
}

/**
 * Every table of a PostgreSQL store as JSON lines, all read in one REPEATABLE READ, READ ONLY
 * transaction (one snapshot; writers go on). The contact search's derived tables are left out: the
 * restore rebuilds them (pg-data.ts).
 */
async function dumpPg(store: Store, dir: string, progress: (m: string) => void): Promise<{ migrations: string[]; tables: ManifestTable[] }> {
  await mkdir(dir, { recursive: true })
  const client = pgConnection(store.db)
  return reservedTransaction(client, async (q) => {
    const migrations = (await q<{ name: string }[]>`SELECT name FROM schema_migrations ORDER BY name`).map((r) => r.name)
    const tables: ManifestTable[] = []
    for (const t of await pgTables(q)) {
      progress(`dumping ${t.name}`)
      const file = `tables/${t.name}.jsonl`
      const out = await open(join(dir, basename(file)), 'w', 0o600)
      let rows = 0
      try {
        const cursor = q.unsafe<Array<{ j: string }>>(`SELECT row_to_json(t)::text AS j FROM ${ident(t.name)} t`).cursor(2000)
        for await (const batch of cursor) {
          rows += batch.length
          await out.write(`${batch.map((r) => r.j).join('\n')}\n`)
        }
        await out.sync()
      } finally {
        await out.close()
      }
      tables.push({ name: t.name, rows, columns: t.columns.map((c) => c.name), file })
    }
    return { migrations, tables }
  }, { begin: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', what: 'the backup' })
}

/** The archives of a backup directory, newest first (scheduled backups and doctor). */
export async function listBackups(dir: string): Promise<Array<{ file: string; at: Date }>> {
  if (!existsSync(dir)) return []
  const out: Array<{ file: string; at: Date }> = []
  for (const name of await readdir(dir)) {
    if (!/^mailctl-.*\.tar$/.test(name)) continue
    out.push({ file: join(dir, name), at: (await stat(join(dir, name))).mtime })
  }
  return out.sort((a, b) => b.at.getTime() - a.at.getTime())
}
