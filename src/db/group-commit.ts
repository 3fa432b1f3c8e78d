import { sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from './client'
import { AppError } from '../errors'
import { hasErrorCode, storageFailure } from './failures'

/**
 * Group commit, on both stores: writes submitted during one turn of the event loop run in ONE transaction,
 * and every caller is answered only after that transaction has committed — so an answered write is as
 * durable as with one transaction per write (SQLite synchronous=FULL: fsynced; NORMAL: in the WAL,
 * surviving kill -9; PostgreSQL: synchronous_commit on), while the commit cost (WAL frames, fsync, and on
 * PostgreSQL the BEGIN/COMMIT round trips) is shared by the whole batch.
 *
 * A failing write rolls back only itself. Two ways:
 * - `{ pure: true }` writes (the caller promises that `fn` has no effect outside `db`, so running it twice
 *   is harmless) run back to back without savepoints. If one throws, the whole transaction is rolled back
 *   and the batch runs again the safe way. Savepoints are not free on SQLite (each is a statement, and
 *   an FTS5 table written in the transaction flushes its pending terms at each one; the contacts' FTS5
 *   index of earlier versions cost about 25 µs of CPU per track that way), and on PostgreSQL each is a
 *   round trip.
 * - other writes run each inside its own savepoint, after the pure writes of the batch.
 * `runMany(kind, item)` is a pure write of a kind that writes many items with a few statements for all
 * (`Batched.many`: multi-row statements, so that a batch costs a few round trips on PostgreSQL instead of a
 * few per write); when it throws, the batch runs again the safe way, each item through `Batched.one`.
 *
 * What differs between the stores stays here: SQLite has one writer, so one batch is in flight at a time;
 * PostgreSQL runs up to PG_IN_FLIGHT batches at once on connections of its pool (a batch that waits for
 * its commit's fsync does not hold back the next), the second and later only once PG_SHARED_BATCH writes
 * wait or PG_SHARED_WAIT_MS have passed. On PostgreSQL `run` is a transaction of its own (see
 * `alone`): only `runMany` batches there. A write that fails with a deadlock or a serialization failure
 * (PostgreSQL), or that lost a race with another writer (LostRaceError), is run again (in its savepoint; a
 * batch or a transaction of its own, whole).
 */

export interface GroupCommitOptions {
  /** `fn` only reads and writes through `db` (no other effects), so it may run twice; see the class doc. */
  pure?: boolean
}

/**
 * A kind of write that can write many items at once (GroupCommit.runMany). Both functions only read and
 * write through `db` (they may run more than once). `many` answers one outcome per item, in order, or
 * throws (the batch then runs again with `one` per item, each in its savepoint).
 */
export interface Batched<I, O> {
  many(db: Db, items: I[]): Promise<O[]>
  one(db: Db, item: I): Promise<O>
}

interface Pending<T> {
  fn: ((db: Db) => Promise<T>) | null
  kind: Batched<unknown, T> | null
  item: unknown
  pure: boolean
  resolve: (v: T) => void
  reject: (e: unknown) => void
}
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

const MAX_BATCH = 512
/** Batches in flight at once on PostgreSQL (each holds a connection of the pool until it commits). */
const PG_IN_FLIGHT = 4
/**
 * On PostgreSQL, while a batch is in flight a new one starts only once this many writes wait; fewer wait
 * for the next commit. A batch has a fixed cost (its transaction's round trips and statements: a few
 * hundred µs of CPU measured on the client, as much as several writes), so batches started as soon as a
 * connection is free grow small when the load is spread (two nodes: each node's batches were half as
 * large as one node's, and its CPU per write 1.2x); the wait is bounded by PG_SHARED_WAIT_MS.
 */
const PG_SHARED_BATCH = 8
/**
 * How long (ms) fewer than PG_SHARED_BATCH writes wait for the batch in flight before they start a batch
 * of their own anyway: a batch waiting on a row lock (another node's batch, an import, a psql session) or
 * on a deadlock's detection must not hold up every other write of the node, whatever its project. A few
 * batches' time at the track bench's rates.
 */
const PG_SHARED_WAIT_MS = 5
/** Runs of a write (or of a batch's transaction) that failed with a deadlock, a serialization failure or a lost race. */
const RETRIES = 3

/** Thrown out of the optimistic transaction to roll it back (a pure write failed). */
const RETRY = Symbol('group commit: retry with savepoints')

/**
 * A write that lost a race with another writer, found out by the write itself rather than by the database
 * (a row it had just met was deleted before it could read it): rolled back and run again, in a
 * transaction or savepoint of its own, it may succeed, as after a deadlock. Run again by the group commit
 * like one (isRetryableConflict); lost on every run, it answers 409: the request may be sent again.
 */
export class LostRaceError extends AppError {
  constructor(message: string, cause?: unknown) {
    super('CONFLICT', message)
    if (cause !== undefined) this.cause = cause
  }
}

/**
 * PostgreSQL's deadlock_detected and serialization_failure, and a LostRaceError: the same write may
 * succeed when run again.
 */
export function isRetryableConflict(err: unknown): boolean {
  return err instanceof LostRaceError || hasErrorCode(err, ['40P01', '40001'])
}

/**
 * What a write throws once its last run still conflicted (isRetryableConflict): a LostRaceError as it is;
 * for a deadlock or a serialization failure a LostRaceError in its place (the driver's error as its
 * cause), so that the request answers 409 CONFLICT ("send the request again"), and an Idempotency-Key is
 * freed as for any 4xx, rather than a 500 that keeps it. Any other error as it is. Only where the runs end
 * (the group commit, againIfVanished): a deadlock elsewhere was not run again and stays what it is.
 */
export function conflictAnswer(err: unknown): unknown {
  if (err instanceof LostRaceError || !hasErrorCode(err, ['40P01', '40001'])) return err
  return new LostRaceError('The write met concurrent writes on every run (a deadlock or a serialization failure); send the request again', err)
}

/**
 * What a failing pure write throws out of the optimistic transaction: RETRY (run the batch again the safe
 * way), unless the store itself failed (the database is down, the disk is full): a second run would fail
 * the same way, so every caller gets that error at once (a 503, src/db/failures.ts).
 */
function retryOrFail(err: unknown): unknown {
  return storageFailure(err) ? err : RETRY
}

interface Savepoints { savepoint(): Promise<void> | void; release(): Promise<void> | void; rollback(): Promise<void> | void }

function savepoints(store: Store, db: Db): Savepoints {
  // dialect: savepoints compiled once on SQLite's writer connection, through drizzle on PostgreSQL's transaction
  if (store.dialect === 'sqlite') {
    const client = sqliteConnection(db)
    const s = client.query('SAVEPOINT group_commit')
    const r = client.query('RELEASE group_commit')
    const b = client.query('ROLLBACK TO group_commit')
    return { savepoint: () => { s.run() }, release: () => { r.run() }, rollback: () => { b.run() } }
  }
  const run = (text: string) => async () => { await db.execute(sql.raw(text)) }
  return { savepoint: run('SAVEPOINT group_commit'), release: run('RELEASE group_commit'), rollback: run('ROLLBACK TO group_commit') }
}

export class GroupCommit {
  private queue: Pending<unknown>[] = []
  private scheduled = false
  private inFlight = 0
  /** Starts the waiting writes if no batch in flight has committed within PG_SHARED_WAIT_MS (see start). */
  private waitTimer: ReturnType<typeof setTimeout> | null = null
  private readonly limit: number
  /**
   * Batches committed, writes in them, batches run again with savepoints, and writes or batches run again
   * after a deadlock, a serialization failure or a lost race (isRetryableConflict; for tests and benchmarks).
   */
  readonly stats = { batches: 0, writes: 0, retries: 0, conflicts: 0 }

  constructor(private readonly store: Store) {
    // dialect: PostgreSQL runs batches on several pooled connections at once; SQLite has one writer
    this.limit = store.dialect === 'pg' ? PG_IN_FLIGHT : 1
  }

  run<T>(fn: (db: Db) => Promise<T>, opts?: GroupCommitOptions): Promise<T> {
    // dialect: on PostgreSQL run is a transaction of its own (only runMany batches there); SQLite's writes share one commit
    if (this.store.dialect === 'pg') return this.alone(fn)
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, kind: null, item: null, pure: opts?.pure === true, resolve, reject } as Pending<unknown>)
      this.schedule()
    })
  }

  /**
   * A write of its own on PostgreSQL: a transaction of its own, run again after a deadlock, a serialization
   * failure or a lost race. Measured with bench/send.ts, writes of several statements awaited one after the other (sends,
   * before they were a `Batched` kind) went slower one after another in a shared transaction than in
   * concurrent transactions of their own; writes that gain from sharing a transaction there are written as
   * a `Batched` kind (runMany), with a few statements for the whole batch.
   */
  private async alone<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.tx(fn)
      } catch (error) {
        if (!isRetryableConflict(error)) throw error
        if (attempt >= RETRIES) throw conflictAnswer(error)
        this.stats.conflicts++
      }
    }
  }

  /** A pure write of `kind`, written with the batch's other items of that kind by `kind.many`. */
  runMany<I, O>(kind: Batched<I, O>, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ fn: null, kind: kind as Batched<unknown, unknown>, item, pure: true, resolve, reject } as Pending<unknown>)
      this.schedule()
    })
  }

  private schedule() {
    if (this.scheduled || this.inFlight >= this.limit) return
    this.scheduled = true
    // setImmediate: let the requests read in this turn of the loop join the batch.
    setImmediate(() => { this.scheduled = false; this.start() })
  }

  private start(waited = false) {
    while (this.queue.length && this.inFlight < this.limit) {
      if (this.inFlight > 0 && this.queue.length < PG_SHARED_BATCH && !waited) {
        // A batch in flight will start this one when it commits (settle), larger by then; or the timer
        // will, if that batch is held up.
        this.waitTimer ??= setTimeout(() => { this.waitTimer = null; this.start(true) }, PG_SHARED_WAIT_MS)
        return
      }
      waited = false
      if (this.waitTimer) { clearTimeout(this.waitTimer); this.waitTimer = null }
      const batch = this.queue.splice(0, MAX_BATCH)
      this.inFlight++
      void this.settle(batch).finally(() => {
        this.inFlight--
        if (this.queue.length) this.schedule()
      })
    }
  }

  /** One write in its own savepoint (run again after a deadlock, a serialization failure or a lost race). */
  private async guarded(sp: Savepoints, db: Db, p: Pending<unknown>): Promise<Outcome> {
    for (let attempt = 1; ; attempt++) {
      await sp.savepoint()
      try {
        const value = p.kind ? await p.kind.one(db, p.item) : await (p.fn as (db: Db) => Promise<unknown>)(db)
        await sp.release()
        return { ok: true, value }
      } catch (error) {
        await sp.rollback()
        await sp.release()
        if (!isRetryableConflict(error)) return { ok: false, error }
        if (attempt < RETRIES) { this.stats.conflicts++; continue }
        return { ok: false, error: conflictAnswer(error) }
      }
    }
  }

  /**
   * Runs `batch` in one transaction: unless `safe`, the pure writes first, bare, and the items of each
   * batched kind with one `many` (one failing throws RETRY, rolling everything back); then the others
   * (all of them when `safe`) each in a savepoint.
   */
  private commit(batch: Pending<unknown>[], safe: boolean): Promise<Outcome[]> {
    return this.store.tx(async (db) => {
      const outcomes: Outcome[] = new Array(batch.length)
      let guarded = batch.length
      if (!safe) {
        guarded = 0
        let kinds: Map<Batched<unknown, unknown>, number[]> | null = null
        for (let i = 0; i < batch.length; i++) {
          const p = batch[i]
          if (!p.pure) { guarded++; continue }
          if (p.kind) {
            kinds ??= new Map()
            const list = kinds.get(p.kind)
            if (list) list.push(i)
            else kinds.set(p.kind, [i])
            continue
          }
          try { outcomes[i] = { ok: true, value: await (p.fn as (db: Db) => Promise<unknown>)(db) } } catch (e) { throw retryOrFail(e) }
        }
        if (kinds) {
          for (const [kind, indexes] of kinds) {
            let values: unknown[]
            try { values = await kind.many(db, indexes.map((i) => batch[i].item)) } catch (e) { throw retryOrFail(e) }
            for (let k = 0; k < indexes.length; k++) outcomes[indexes[k]] = { ok: true, value: values[k] }
          }
        }
      }
      if (!guarded) return outcomes
      const sp = savepoints(this.store, db)
      for (let i = 0; i < batch.length; i++) {
        const p = batch[i]
        if (!safe && p.pure) continue
        outcomes[i] = await this.guarded(sp, db, p)
      }
      return outcomes
    })
  }

  private async settle(batch: Pending<unknown>[]) {
    let outcomes: Outcome[]
    try {
      try {
        outcomes = await this.commit(batch, false)
      } catch (error) {
        if (error !== RETRY && !isRetryableConflict(error)) throw error
        if (error === RETRY) this.stats.retries++
        else this.stats.conflicts++
        for (let attempt = 1; ; attempt++) {
          try {
            outcomes = await this.commit(batch, true)
            break
          } catch (again) {
            if (!isRetryableConflict(again)) throw again
            if (attempt >= RETRIES) throw conflictAnswer(again)
            this.stats.conflicts++
          }
        }
      }
    } catch (error) {
      for (const p of batch) p.reject(error)
      return
    }
    this.stats.batches++
    this.stats.writes += batch.length
    for (let i = 0; i < batch.length; i++) {
      const o = outcomes[i]
      if (o.ok) batch[i].resolve(o.value)
      else batch[i].reject(o.error)
    }
  }
}
