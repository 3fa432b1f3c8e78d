import { open } from 'node:fs/promises'
import { isDialect } from '../db/dialect'
import { ArchiveError, hasher, readTar, type TarEntryInfo } from './tar'

/**
 * The archive of `mailctl backup` (docs/architecture.md, Backups): a tar file whose entries are
 * - `mailctl.db`: the SQLite database (VACUUM INTO), or `tables/<table>.jsonl`: PostgreSQL rows, one
 *   `row_to_json` object a line, all read in one REPEATABLE READ snapshot;
 * - `keys/secret.key`, `keys/dkim.key`: the data dir's key files (SQLite), or the keys on PostgreSQL when
 *   asked for with `--include-keys`;
 * - `uploads/<name>`: the images kept in the data dir;
 * - `manifest.json`, last: versions, migration level, row counts and the SHA-256 of every other entry.
 * A restore reads the whole archive and checks every checksum before it writes anything.
 */

export const MANIFEST = 'manifest.json'
export const FORMAT = 'mailctl-backup'

export interface ManifestTable { name: string; rows: number; columns?: string[]; file?: string }

export interface Manifest {
  format: typeof FORMAT
  formatVersion: 1
  mailctlVersion: string
  createdAt: string
  dialect: 'sqlite' | 'pg'
  /** The names in schema_migrations when the snapshot was taken (the migration level). */
  migrations: string[]
  /** files: the data dir's key files are in keys/; included: the keys (PostgreSQL, --include-keys); settings: not in the archive. */
  keys: 'files' | 'included' | 'settings'
  /** data dir: the images are in uploads/; bucket: they stay in MAILCTL_S3_URL's bucket, not in the archive. */
  uploads: 'data dir' | 'bucket'
  tables: ManifestTable[]
  files: TarEntryInfo[]
}

function parseManifest(text: string): Manifest {
  let m: Manifest
  try { m = JSON.parse(text) as Manifest } catch { throw new ArchiveError('the manifest is not valid JSON') }
  if (m?.format !== FORMAT) throw new ArchiveError('not a mailctl backup (no mailctl manifest)')
  if (m.formatVersion !== 1) throw new ArchiveError(`archive format version ${m.formatVersion} is newer than this mailctl reads (1)`)
  if (!isDialect(m.dialect)) throw new ArchiveError('the manifest names no store kind')
  if (!Array.isArray(m.files) || !Array.isArray(m.migrations) || !Array.isArray(m.tables)) throw new ArchiveError('the manifest is incomplete')
  for (const f of m.files) {
    if (typeof f.path !== 'string' || f.path.startsWith('/') || f.path.split('/').includes('..')) throw new ArchiveError(`the manifest names an unsafe path: ${f.path}`)
  }
  return m
}

/**
 * Reads the whole archive, checks every entry against the manifest (same names, sizes and SHA-256) and
 * answers the manifest. Throws ArchiveError naming the first problem; writes nothing.
 */
export async function verifyArchive(path: string): Promise<Manifest> {
  const fh = await open(path, 'r').catch((err) => { throw new ArchiveError(`cannot read ${path}: ${(err as Error).message}`) })
  const seen: TarEntryInfo[] = []
  let manifestText: string | null = null
  try {
    await readTar(fh, async (name, size) => {
      if (manifestText !== null) throw new ArchiveError(`an entry follows the manifest: ${name}`)
      const h = hasher()
      const parts: Buffer[] = []
      return {
        data(chunk) {
          if (name === MANIFEST) parts.push(Buffer.from(chunk))
          else h.update(chunk)
        },
        end() {
          if (name === MANIFEST) manifestText = Buffer.concat(parts).toString('utf8')
          else seen.push({ path: name, size, sha256: h.hex() })
        },
      }
    })
  } finally {
    await fh.close()
  }
  if (manifestText === null) throw new ArchiveError('the archive has no manifest (truncated or not a mailctl backup)')
  const manifest = parseManifest(manifestText)
  const listed = new Map(manifest.files.map((f) => [f.path, f]))
  if (listed.size !== seen.length) throw new ArchiveError(`the manifest lists ${listed.size} files, the archive holds ${seen.length}`)
  for (const f of seen) {
    const want = listed.get(f.path)
    if (!want) throw new ArchiveError(`${f.path} is not in the manifest`)
    if (want.size !== f.size || want.sha256 !== f.sha256) throw new ArchiveError(`${f.path} does not match its checksum in the manifest (altered or damaged)`)
  }
  return manifest
}

/**
 * Reads the archive again and hands each listed entry to `sink`; every entry's checksum is checked again
 * as it is read (the file may have changed since verifyArchive), and a mismatch throws before the
 * caller commits anything.
 */
export async function extractArchive(path: string, manifest: Manifest, sink: (name: string) => Promise<{ data(chunk: Buffer): Promise<void> | void; end(): Promise<void> | void }>): Promise<void> {
  const listed = new Map(manifest.files.map((f) => [f.path, f]))
  const fh = await open(path, 'r')
  try {
    await readTar(fh, async (name) => {
      if (name === MANIFEST) return { data() {}, end() {} }
      const want = listed.get(name)
      if (!want) throw new ArchiveError(`${name} is not in the manifest`)
      const h = hasher()
      const inner = await sink(name)
      return {
        async data(chunk) { h.update(chunk); await inner.data(chunk) },
        async end() {
          if (h.hex() !== want.sha256) throw new ArchiveError(`${name} changed since it was checked`)
          await inner.end()
        },
      }
    })
  } finally {
    await fh.close()
  }
}

/** Splits a byte stream into lines (JSON lines of tables/). */
export function lineSplitter(onLine: (line: string) => Promise<void>) {
  let rest = ''
  const decoder = new TextDecoder()
  return {
    async data(chunk: Buffer) {
      const text = rest + decoder.decode(chunk, { stream: true })
      const lines = text.split('\n')
      rest = lines.pop() ?? ''
      for (const l of lines) if (l) await onLine(l)
    },
    async end() {
      rest += decoder.decode()
      if (rest) await onLine(rest)
      rest = ''
    },
  }
}
