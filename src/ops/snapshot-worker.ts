/**
 * The SQLite snapshot of a backup, on its own thread (src/ops/snapshot.ts): `VACUUM INTO` copies the
 * database as one read transaction sees it, without stopping the writers (WAL), and takes seconds to
 * minutes on a large store, which must not stall the server's event loop when the scheduled job runs it.
 */
import { Database } from 'bun:sqlite'

declare const self: Worker

export interface SnapshotRequest { db: string; into: string }
export type SnapshotAnswer =
  | { ok: true; migrations: string[]; tables: Array<{ name: string; rows: number }> }
  | { ok: false; error: string; code?: string }

/**
 * Lowers this thread's CPU priority (nice 19) so that a snapshot taken in a serving process leaves the CPU
 * to the requests first. Linux with glibc only (gettid and setpriority on the thread id); elsewhere the
 * thread keeps the process's priority.
 */
function lowerPriority(): void {
  if (process.platform !== 'linux') return
  try {
    const { dlopen, FFIType } = require('bun:ffi') as typeof import('bun:ffi')
    const libc = dlopen('libc.so.6', {
      gettid: { args: [], returns: FFIType.i32 },
      setpriority: { args: [FFIType.i32, FFIType.u32, FFIType.i32], returns: FFIType.i32 },
    })
    libc.symbols.setpriority(0, libc.symbols.gettid(), 19)
    libc.close()
  } catch { /* not glibc: the normal priority */ }
}

self.onmessage = (e: MessageEvent<SnapshotRequest>) => {
  const { db, into } = e.data
  lowerPriority()
  try {
    const source = new Database(db, { readwrite: true, create: false })
    try {
      source.run('PRAGMA busy_timeout = 5000')
      source.run(`VACUUM INTO '${into.replace(/'/g, "''")}'`)
    } finally {
      source.close()
    }
    const copy = new Database(into, { readonly: true })
    try {
      const migrations = (copy.query('SELECT name FROM schema_migrations ORDER BY name').all() as Array<{ name: string }>).map((r) => r.name)
      const names = (copy.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name)
      const tables = names.map((name) => ({ name, rows: (copy.query(`SELECT count(*) AS n FROM "${name.replace(/"/g, '""')}"`).get() as { n: number }).n }))
      self.postMessage({ ok: true, migrations, tables } satisfies SnapshotAnswer)
    } finally {
      copy.close()
    }
  } catch (err) {
    self.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err), code: (err as { code?: string }).code } satisfies SnapshotAnswer)
  }
}
