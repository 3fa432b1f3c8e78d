import type { SnapshotAnswer, SnapshotRequest } from './snapshot-worker'

/** The worker's module: next to this file from source; in the executable, by its embedded path (package.json build). */
const WORKER_ENTRY = import.meta.url.includes('/$bunfs/')
  ? './src/ops/snapshot-worker.ts'
  : new URL('./snapshot-worker.ts', import.meta.url).href

/** Copies the SQLite database at `db` into the new file `into` (VACUUM INTO, on a thread); answers its migrations and row counts. */
export function sqliteSnapshot(db: string, into: string): Promise<{ migrations: string[]; tables: Array<{ name: string; rows: number }> }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_ENTRY)
    worker.onmessage = (e: MessageEvent<SnapshotAnswer>) => {
      worker.terminate()
      const a = e.data
      if (a.ok) resolve({ migrations: a.migrations, tables: a.tables })
      else reject(Object.assign(new Error(`database snapshot failed: ${a.error}`), { code: a.code }))
    }
    worker.onerror = (e) => { worker.terminate(); reject(new Error(`database snapshot failed: ${e.message}`)) }
    worker.postMessage({ db, into } satisfies SnapshotRequest)
  })
}
