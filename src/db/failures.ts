/**
 * Storage failures that are the store's state, not a bug: the disk is full, or the database cannot be
 * reached. They answer 503 with Retry-After and a code naming the cause (STORAGE_FULL, DATABASE_UNAVAILABLE)
 * instead of a generic 500 (src/http/app.ts), and readiness names them (src/db/readiness.ts).
 */
import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import { AppError } from '../errors'

/**
 * Free space SQLite needs beyond the database: the write-ahead log grows to about 80 MB before it is
 * folded back (wal_autocheckpoint, src/db/client.ts), so about 100 MB. `mailctl doctor` warns below it.
 */
export const WAL_HEADROOM_BYTES = 100 * 1024 * 1024
/** Below this much free space, writes fail: the disk is full. */
export const MIN_FREE_BYTES = 1024 * 1024

/** Bytes free for this process on the file system holding `file` (root may use the reserved blocks); null when unknown. */
export function freeBytesFor(file: string): number | null {
  try {
    const s = statfsSync(dirname(file))
    return Number(process.getuid?.() === 0 ? s.bfree : s.bavail) * Number(s.bsize)
  } catch {
    return null
  }
}

/** `n` bytes for people: 12.3 MB, 512 KB. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MB`
  return `${Math.floor(n / 1024)} KB`
}

/**
 * The error that stops a start on a full disk, naming it: SQLite reports a full volume while it opens its
 * write-ahead log as "disk I/O error". Null unless `err` is a SQLite failure to open or write `file` and
 * the file system holding it has (almost) no space left, or `err` is itself a full disk.
 */
export function diskFullAtStart(file: string, err: unknown): Error | null {
  const free = freeBytesFor(file)
  const full = storageFailure(err) === 'full'
  let io = false
  const seen = new Set<unknown>()
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e)
    io ||= /^SQLITE_(IOERR|CANTOPEN)/.test(String((e as { code?: unknown }).code ?? ''))
  }
  if (!full && !(io && free !== null && free < MIN_FREE_BYTES)) return null
  const left = free === null ? '' : ` (${formatBytes(free)} free)`
  return new Error(`disk full: the file system of ${file} has no space left${left}, so SQLite cannot open or write the database (${err instanceof Error ? err.message : String(err)}). Free space on that volume and start again; keep about 100 MB free for the write-ahead log.`, { cause: err })
}

export type StorageFailure = 'full' | 'unavailable'

/** PostgreSQL SQLSTATEs and postgres.js / socket codes of a database that cannot be reached now. */
const UNAVAILABLE_CODES = new Set([
  // postgres.js and the socket
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED',
  // src/db/pg-guard.ts: refused at once while the database is down, or it did not answer within the deadline
  'DATABASE_UNAVAILABLE',
  // PostgreSQL: shutting down, starting up, crashed, too many connections, out of memory
  '57P01', '57P02', '57P03', '53300', '53200',
  // SQLite: the write lock was not free within the wait
  'SQLITE_BUSY',
])

/** The code of one error in a cause chain (drizzle wraps the driver's error as `cause`). */
function codeOf(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : ''
}

/** What kind of storage failure `err` is (looking through its causes), or null for any other error. */
export function storageFailure(err: unknown): StorageFailure | null {
  const seen = new Set<unknown>()
  for (let e = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e)
    const code = codeOf(e)
    // SQLITE_FULL (and its extended codes), PostgreSQL's disk_full, an OS write that found no space.
    if (code.startsWith('SQLITE_FULL') || code === '53100' || code === 'ENOSPC') return 'full'
    if (/database or disk is full|no space left on device/i.test(e.message)) return 'full'
    if (UNAVAILABLE_CODES.has(code) || /^08/.test(code)) return 'unavailable'
  }
  return null
}

/** How long a client should wait before trying again, in seconds, by cause. */
export const RETRY_AFTER_S: Record<StorageFailure, number> = { full: 30, unavailable: 5 }

/** The 503 a request gets for a storage failure (null: not one). */
export function storageError(err: unknown): AppError | null {
  const kind = storageFailure(err)
  if (!kind) return null
  const headers = { 'retry-after': String(RETRY_AFTER_S[kind]) }
  return kind === 'full'
    ? new AppError('STORAGE_FULL', 'The server\'s storage is full: nothing can be written now. Nothing of this request was saved; try again later.', { headers, suggestion: 'Operators: free disk space on the data volume (the write-ahead log needs about 100 MB of headroom; `mailctl doctor` checks it).' })
    : new AppError('DATABASE_UNAVAILABLE', 'The database cannot be reached now. Try again in a few seconds.', { headers })
}

/** True when `err` or one of its causes (drizzle wraps the driver's error in `cause`) has one of `codes`. */
export function hasErrorCode(err: unknown, codes: readonly string[]): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (codes.includes(codeOf(e))) return true
  }
  return false
}

/**
 * A write that refers to a row that is not there (a foreign key), on either store: PostgreSQL's 23503,
 * SQLite's SQLITE_CONSTRAINT_FOREIGNKEY.
 */
export function isForeignKeyViolation(err: unknown): boolean {
  return hasErrorCode(err, ['23503', 'SQLITE_CONSTRAINT_FOREIGNKEY'])
}
