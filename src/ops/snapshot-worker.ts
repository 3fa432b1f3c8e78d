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

self.onmessage = (e: MessageEvent<SnapshotRequest>) => {
  const { db, into } = e.data
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
