import { sqliteConnection, type Db, type Store } from './client'

/**
 * Group commit for SQLite's single writer: writes submitted during one turn of the event loop run in
 * ONE transaction, and every caller is answered only after that transaction has committed — so an
 * answered write is as durable as with one transaction per write (synchronous=FULL: fsynced; NORMAL: in
 * the WAL, surviving kill -9), while the commit cost (WAL frames, fsync) is shared by the whole batch.
 *
 * A failing write rolls back only itself. Two ways:
 * - `{ pure: true }` writes (the caller promises that `fn` has no effect outside `db`, so running it twice
 *   is harmless) run back to back without savepoints. If one throws, the whole transaction is rolled back
 *   and the batch runs again the safe way. Savepoints are not free on SQLite (each is a statement, and
 *   an FTS5 table written in the transaction flushes its pending terms at each one; the contacts' FTS5
 *   index of earlier versions cost about 25 µs of CPU per track that way).
 * - other writes run each inside its own savepoint, after the pure writes of the batch.
 *
 * PostgreSQL runs concurrent transactions itself; there `run` is a plain `store.tx`.
 */

export interface GroupCommitOptions {
  /** `fn` only reads and writes through `db` (no other effects), so it may run twice; see the class doc. */
  pure?: boolean
}

interface Pending<T> { fn: (db: Db) => Promise<T>; pure: boolean; resolve: (v: T) => void; reject: (e: unknown) => void }
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

const MAX_BATCH = 512

/** Thrown out of the optimistic transaction to roll it back (a pure write failed). */
const RETRY = Symbol('group commit: retry with savepoints')

function statements(db: Db) {
  const client = sqliteConnection(db)
  return { savepoint: client.query('SAVEPOINT group_commit'), release: client.query('RELEASE group_commit'), rollback: client.query('ROLLBACK TO group_commit') }
}

export class GroupCommit {
  private queue: Pending<unknown>[] = []
  private scheduled = false
  private flushing = false
  /** Batches committed, writes in them and batches run again with savepoints (for tests and benchmarks). */
  readonly stats = { batches: 0, writes: 0, retries: 0 }

  constructor(private readonly store: Store) {}

  run<T>(fn: (db: Db) => Promise<T>, opts?: GroupCommitOptions): Promise<T> {
    if (this.store.dialect !== 'sqlite') return this.store.tx(fn)
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, pure: opts?.pure === true, resolve, reject } as Pending<unknown>)
      this.schedule()
    })
  }

  private schedule() {
    if (this.scheduled || this.flushing) return
    this.scheduled = true
    // setImmediate: let the requests read in this turn of the loop join the batch.
    setImmediate(() => { this.scheduled = false; void this.flush() })
  }

  /**
   * Runs `batch` in one transaction: unless `safe`, the pure writes first, bare (one failing throws RETRY,
   * rolling everything back); then the others (all of them when `safe`) each in a savepoint.
   */
  private commit(batch: Pending<unknown>[], safe: boolean): Promise<Outcome[]> {
    return this.store.tx(async (db) => {
      const outcomes: Outcome[] = new Array(batch.length)
      let guarded = batch.length
      if (!safe) {
        guarded = 0
        for (let i = 0; i < batch.length; i++) {
          const p = batch[i]
          if (!p.pure) { guarded++; continue }
          try { outcomes[i] = { ok: true, value: await p.fn(db) } } catch { throw RETRY }
        }
      }
      if (!guarded) return outcomes
      const sp = statements(db)
      for (let i = 0; i < batch.length; i++) {
        const p = batch[i]
        if (!safe && p.pure) continue
        sp.savepoint.run()
        try {
          outcomes[i] = { ok: true, value: await p.fn(db) }
          sp.release.run()
        } catch (error) {
          sp.rollback.run()
          sp.release.run()
          outcomes[i] = { ok: false, error }
        }
      }
      return outcomes
    })
  }

  private async flush() {
    this.flushing = true
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, MAX_BATCH)
        let outcomes: Outcome[]
        try {
          try {
            outcomes = await this.commit(batch, false)
          } catch (error) {
            if (error !== RETRY) throw error
            this.stats.retries++
            outcomes = await this.commit(batch, true)
          }
        } catch (error) {
          for (const p of batch) p.reject(error)
          continue
        }
        this.stats.batches++
        this.stats.writes += batch.length
        for (let i = 0; i < batch.length; i++) {
          const o = outcomes[i]
          if (o.ok) batch[i].resolve(o.value)
          else batch[i].reject(o.error)
        }
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
