import type { Db, Store } from '../../db/client'

/**
 * Group commit for SQLite's single writer: writes submitted during one turn of the event loop run in
 * ONE transaction, each inside its own savepoint (a failing write rolls back only itself), and every
 * caller is answered only after that transaction has committed — so an answered write is as durable
 * as with one transaction per write (synchronous=FULL: fsynced; NORMAL: in the WAL, surviving kill -9),
 * while the commit cost (WAL frames, fsync) is shared by the whole batch.
 *
 * PostgreSQL runs concurrent transactions itself; there `run` is a plain `store.tx`.
 */

interface Pending<T> { fn: (db: Db) => Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void }

const MAX_BATCH = 512

export class GroupCommit {
  private queue: Pending<unknown>[] = []
  private scheduled = false
  private flushing = false
  /** Batches committed and writes in them (for tests and benchmarks). */
  readonly stats = { batches: 0, writes: 0 }

  constructor(private readonly store: Store) {}

  run<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.store.dialect !== 'sqlite') return this.store.tx(fn)
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve, reject } as Pending<unknown>)
      this.schedule()
    })
  }

  private schedule() {
    if (this.scheduled || this.flushing) return
    this.scheduled = true
    // setImmediate: let the requests read in this turn of the loop join the batch.
    setImmediate(() => { this.scheduled = false; void this.flush() })
  }

  private async flush() {
    this.flushing = true
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, MAX_BATCH)
        const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = []
        try {
          await this.store.tx(async (db) => {
            const client = (db as unknown as { $client: { query(q: string): { run(): unknown } } }).$client
            const savepoint = client.query('SAVEPOINT group_commit')
            const release = client.query('RELEASE group_commit')
            const rollback = client.query('ROLLBACK TO group_commit')
            for (const p of batch) {
              savepoint.run()
              try {
                const value = await p.fn(db)
                release.run()
                outcomes.push({ ok: true, value })
              } catch (error) {
                rollback.run()
                release.run()
                outcomes.push({ ok: false, error })
              }
            }
          })
        } catch (error) {
          for (const p of batch) p.reject(error)
          continue
        }
        this.stats.batches++
        this.stats.writes += batch.length
        batch.forEach((p, i) => {
          const o = outcomes[i]
          if (o.ok) p.resolve(o.value)
          else p.reject(o.error)
        })
        if (this.queue.length) await new Promise<void>((r) => setImmediate(r))
      }
    } finally {
      this.flushing = false
      if (this.queue.length) this.schedule()
    }
  }
}

const perStore = new WeakMap<Store, GroupCommit>()

/** The group committer of `store` (one per store). */
export function groupCommit(store: Store): GroupCommit {
  let g = perStore.get(store)
  if (!g) { g = new GroupCommit(store); perStore.set(store, g) }
  return g
}
