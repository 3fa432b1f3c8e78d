/**
 * The store: one handle over SQLite or PostgreSQL (Store below). On SQLite two things happen at run time
 * that callers do not see in the types:
 * - `Database.prepare` of both connections and `Database.query` of the reader are replaced
 *   (cacheStatements): prepare returns a statement compiled once per SQL text, and on the reader both
 *   open the turn's read snapshot.
 * - Reads share one read transaction per event-loop turn (beginRead/endRead), opened by the turn's first
 *   read, because taking SQLite's read locks costs more than a primary-key look-up.
 * The rules callers rely on:
 * 1. The snapshot ends at `setImmediate` (and before each commit of this process's writer, and at
 *    `refresh()`): all reads of one turn see one state; another connection's commit is seen from the next
 *    turn on, so code that waits for one must yield a turn (or call `refresh()`, as the track writer does).
 * 2. Writes go through `store.tx` (or the group committer's `run`, deps.runtime.commits, which calls it): the reader is query_only
 *    (a write on `store.db` fails), and tx ends the snapshot before it commits, so later reads see the write.
 * 3. The change-log catch-up, the scan and the page query of a contact search run in one turn, so that
 *    the in-memory index and the page are read from the same snapshot (contacts/search/).
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { Database } from 'bun:sqlite'
import { drizzle as drizzleSqlite, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import type { PgDatabase } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePg, type PostgresJsDatabase, type PostgresJsQueryResultHKT } from 'drizzle-orm/postgres-js'
import { sql, type SQL } from 'drizzle-orm'
import postgres from 'postgres'
import { pgSchema, sqliteSchema, type Schema } from './schema'
import { ConfigError, databaseUrlProblem, redactUrl, sqliteFile } from '../config'
import { PG_CONNECT_TIMEOUT_S, PgGuard, pgReconnectDelayS } from './pg-guard'
import { endPool, openPool, reservedTransaction, watchStatements } from './pg-reserved'

/** An arbitrary constant: the advisory lock that serialises migrations across nodes. */
const PG_MIGRATION_LOCK = 7_310_420_117

export type Dialect = 'sqlite' | 'pg'
/** The query-builder type repositories use; at run time it is the active store's drizzle instance. */
export type Db = PgDatabase<PostgresJsQueryResultHKT, Record<string, never>>

export interface TxOptions {
  /**
   * false: the commit returns before it reaches the disk (SQLite: synchronous=NORMAL for this transaction,
   * no fsync of the WAL; PostgreSQL: synchronous_commit off). It stays atomic and ordered: a crash may
   * lose it, and only with the transactions committed after it that were not durable either; the next
   * durable commit makes it durable too. Only for bookkeeping that is safe to redo, such as a lease
   * taken or released (a lost claim is claimed again). Ignored when joining an outer transaction.
   */
  durable?: boolean
}

/**
 * One handle over either store. Dialect differences live here and in columns.ts:
 * - `db` reads (on SQLite a read-only connection, so a write outside `tx` fails loudly);
 * - `tx(fn)` runs fn atomically and durably (SQLite: one writer connection behind an async mutex,
 *   BEGIN IMMEDIATE; PostgreSQL: a pooled transaction). Nested calls join the outer transaction.
 *   `tx(fn, { durable: false })` is atomic but its commit does not wait for the disk (TxOptions);
 * - `rows(sql)` / `exec(sql)` run raw SQL on either.
 */
export interface Store {
  dialect: Dialect
  url: string
  /**
   * One transaction writes at a time (SQLite: one writer; a commit blocks the event loop while it syncs):
   * concurrent writers only queue, and batching them is the one way to write more. False on PostgreSQL,
   * where transactions write side by side on the pool's connections.
   */
  readonly singleWriter: boolean
  /** The database file of a file-backed SQLite store; null on PostgreSQL and for a database in memory. */
  readonly file: string | null
  db: Db
  t: Schema
  tx<T>(fn: (db: Db) => Promise<T>, opts?: TxOptions): Promise<T>
  rows<T = Record<string, unknown>>(query: SQL, db?: Db): Promise<T[]>
  exec(query: SQL, db?: Db): Promise<void>
  /** Runs a multi-statement SQL script outside any transaction. */
  script(text: string): Promise<void>
  /** Applies one migration atomically unless `schema_migrations` already names it; true when applied. */
  applyMigration(name: string, text: string): Promise<boolean>
  /**
   * A read compiled once and reused, for hot paths (the API-key lookup of every request). `text` uses
   * $1, $2... placeholders and must be valid on both stores. It reads committed data outside any transaction.
   * Rows come back raw: columns as named in the SELECT; on SQLite booleans are 0/1, timestamps epoch ms and
   * JSON text. Map them in the repo.
   */
  prepared<T = Record<string, unknown>>(text: string): (...params: Array<string | number | null>) => Promise<T[]>
  /**
   * A read for health checks (/ready, the PostgreSQL outage probe) on a connection of its own, outside any
   * transaction, so that it never waits behind the pool's queue: on PostgreSQL a one-connection client
   * beside the pool (after an outage the pool's connections reconnect under the load that waited, and a
   * /ready queued behind them said "no answer" for seconds while the database answered); on SQLite the
   * reader connection. Not refused while the database is known down, so /ready says at once when it is back.
   */
  probe<T = Record<string, unknown>>(text: string): Promise<T[]>
  /**
   * Runs the statements a hot path sends to the driver itself (pgConnection: the sender gate, the contact
   * search's copy) as the store's own calls: on PostgreSQL refused at once while the database is known
   * down, counted in the bound on waiting calls, a connection failure marks it down (pg-guard.ts), and with
   * `deadline` (a read that answers at once) DATABASE_UNAVAILABLE past the read deadline. A scan takes
   * none: it may rightly take longer. On SQLite `call` runs as it is.
   */
  guarded<T>(call: () => Promise<T>, opts?: { deadline?: boolean }): Promise<T>
  /**
   * A number that changes whenever anyone (this process's writer, another process such as the CLI) commits
   * to the database: SQLite's `PRAGMA data_version` on the reader connection. A process may keep a read
   * cache that is exact by dropping it when this changes. The pragma costs a few µs on a WAL database (it
   * takes the read locks), so it is read at most once per event-loop turn, and again after each commit of
   * this process: another process's commit is seen from the next turn on. null on PostgreSQL (another
   * node's commit cannot be seen without a query), where such caches must not be used.
   */
  dataVersion(): number | null
  /**
   * Runs `fn` once the outermost transaction of `db` has committed (never when it rolls back); at once
   * when `db` is not a transaction. For what must not happen before the data is visible to everyone:
   * wake-ups of other workers, cache invalidations. An error thrown by `fn` is not the transaction's.
   */
  afterCommit(db: Db, fn: () => void): void
  /**
   * Another connection of this process (a writer thread) has just committed: reads from now on must see
   * it. On SQLite this ends the reader's snapshot of the current event-loop turn; nothing on PostgreSQL.
   */
  refresh(): void
  /**
   * State of the transaction `db` under `key`: made by `init` at its first use in the transaction, and
   * handed to `flush` inside the transaction, after its body and before COMMIT (nothing when it rolls
   * back). Writes that many callers of one transaction share go there as one (the events' outbox rows,
   * events/outbox.ts). Only inside `tx`.
   */
  txState<S>(db: Db, key: object, init: () => S, flush: (state: S) => Promise<void> | void): S
  /** True once `close()` was called. */
  readonly closed: boolean
  /** True inside a transaction of this store (`tx` here joins it: rolled back, it is the outer one's to run again). */
  readonly inTransaction: boolean
  close(): Promise<void>
}

/** The per-transaction states of `txState`, in the order they were first used, flushed before COMMIT. */
type TxStates = Map<object, { state: unknown; flush: (state: unknown) => Promise<void> | void }>

async function flushTxStates(states: TxStates | undefined): Promise<void> {
  if (!states) return
  for (const { state, flush } of states.values()) await flush(state)
}

function txStateOf<S>(states: TxStates, key: object, init: () => S, flush: (state: S) => Promise<void> | void): S {
  const hit = states.get(key)
  if (hit) return hit.state as S
  const state = init()
  states.set(key, { state, flush: flush as (state: unknown) => Promise<void> | void })
  return state
}

/** Runs the afterCommit callbacks of a transaction that has committed; one that throws does not stop the rest. */
function runAfterCommit(fns: Array<() => void>): void {
  for (const fn of fns) {
    try { fn() } catch (err) { console.error('mailctl: a callback after commit failed:', err) }
  }
}

/** What a `Db` of a SQLite store is at run time: drizzle's bun-sqlite handle over one connection. */
type SqliteDb = BunSQLiteDatabase & { $client: Database }

/**
 * A SQLite connection's drizzle handle, typed as the `Db` repositories are written against. It answers the
 * same query-builder calls at run time (the tables are built for each store from one definition,
 * columns.ts); TypeScript sees two unrelated classes, hence the cast.
 */
function sqliteDb(connection: Database): Db {
  return drizzleSqlite(connection) as unknown as Db
}

/** A `Db` of a SQLite store as what it is (see sqliteDb: the same two unrelated types, the other way). */
function sqliteHandle(db: Db): SqliteDb {
  return db as unknown as SqliteDb
}

/**
 * The raw bun:sqlite connection behind a drizzle handle of a SQLite store: the reader for `store.db`, the
 * writer for the handle `store.tx` passes. For hot paths that run compiled statements themselves.
 */
// dialect: the raw connection of each driver (bun:sqlite, postgres.js) for hot paths that run their own statements
export function sqliteConnection(db: Db): Database {
  return sqliteHandle(db).$client
}

/**
 * A read compiled once per store (Store.prepared), declared at module level: `const q = compiledRead<T>(text)`,
 * then `await q(store)(...params)`. For reads a hot path repeats, where drizzle's query building costs more
 * than the query (about 0.05-0.1 ms against a few µs for a look-up on SQLite).
 */
export function compiledRead<T = Record<string, unknown>>(text: string): (store: Store) => (...params: Array<string | number | null>) => Promise<T[]> {
  const byStore = new WeakMap<Store, (...params: Array<string | number | null>) => Promise<T[]>>()
  return (store) => {
    let st = byStore.get(store)
    if (!st) {
      st = store.prepared<T>(text)
      byStore.set(store, st)
    }
    return st
  }
}

/** The postgres.js client behind a PostgreSQL store's drizzle handle (not a transaction's). */
export function pgConnection(db: Db): postgres.Sql {
  return (db as PostgresJsDatabase & { $client: postgres.Sql }).$client
}

/** How long a SQLite write waits for another connection's write lock before failing with SQLITE_BUSY. */
const WRITE_LOCK_TIMEOUT_MS = 5000

class Mutex {
  private tail: Promise<void> = Promise.resolve()
  lock(): Promise<() => void> {
    let release!: () => void
    const next = new Promise<void>((r) => (release = r))
    const ready = this.tail.then(() => release)
    this.tail = this.tail.then(() => next)
    return ready
  }
}

export function sqlitePath(url: string): string {
  return sqliteFile(url)
}

/**
 * drizzle prepares every query it runs; compiling the same SQL again costs more than running it. Reuse
 * compiled statements by SQL text (bounded; statements run to completion synchronously, so one statement
 * is never in use twice at once). `beforeUse` runs whenever a statement is fetched (the reader's snapshot).
 */
function cacheStatements(db: Database, beforeUse?: () => void, max = 2000) {
  const cache = new Map<string, ReturnType<Database['prepare']>>()
  const prepare = db.prepare.bind(db)
  if (beforeUse) {
    const query = db.query.bind(db)
    db.query = ((text: string) => { beforeUse(); return query(text) }) as Database['query']
  }
  db.prepare = ((query: string, ...rest: unknown[]) => {
    beforeUse?.()
    if (rest.length) return (prepare as (q: string, ...r: unknown[]) => ReturnType<Database['prepare']>)(query, ...rest)
    let stmt = cache.get(query)
    if (!stmt) {
      if (cache.size >= max) cache.clear()
      stmt = prepare(query)
      cache.set(query, stmt)
    }
    return stmt
  }) as Database['prepare']
}

/**
 * The database file holds every tenant's data: it is created 0600, like the key files, and an existing one
 * (with its WAL and shared-memory files) readable by others is narrowed to 0600. SQLite creates the WAL
 * and -shm files with the database file's mode.
 */
function ownerOnly(path: string, create: boolean): void {
  if (create && !existsSync(path)) closeSync(openSync(path, 'a', 0o600))
  for (const f of [path, `${path}-wal`, `${path}-shm`]) {
    let mode: number
    try { mode = statSync(f).mode } catch { continue }
    if ((mode & 0o077) !== 0) chmodSync(f, 0o600)
  }
}

// dialect: each store is opened by its own driver with its own connection, transaction and snapshot rules
function openSqlite(url: string, synchronous: 'FULL' | 'NORMAL', create: boolean): Store {
  const path = sqlitePath(url)
  if (path !== ':memory:') {
    if (!create && !existsSync(path)) throw new StoreMissingError(url, path)
    if (create) mkdirSync(dirname(path), { recursive: true })
    ownerOnly(path, create)
  }
  const writer = new Database(path, { create, strict: true })
  writer.run('PRAGMA journal_mode = WAL')
  writer.run(`PRAGMA synchronous = ${synchronous}`)
  writer.run('PRAGMA foreign_keys = ON')
  // The writer never waits inside SQLite: its busy handler sleeps with the thread, which here is the
  // event loop. A locked database (another thread's or process's writer) is waited for in beginWrite.
  writer.run('PRAGMA busy_timeout = 0')
  // Checkpoint after ~80 MB of WAL instead of ~4 MB: a page written by many commits is copied to the
  // database file once per checkpoint, which cut the commit cost of /v1/track by about a third. The cost:
  // the WAL file grows to that size (disk), and recovery after a crash replays more of it.
  writer.run('PRAGMA wal_autocheckpoint = 20000')
  const reader = new Database(path, { strict: true })
  reader.run('PRAGMA foreign_keys = ON')
  reader.run('PRAGMA busy_timeout = 5000')
  reader.run('PRAGMA query_only = ON')
  const dataVersion = reader.query('PRAGMA data_version')
  let version: number | null = null
  // Reads share one read transaction per event-loop turn: on a WAL database each transaction takes and
  // drops the shared-memory read locks, which cost more than a primary-key look-up itself. The snapshot
  // is ended at the end of the turn and before every commit of this process's writer (so a read after
  // one's own write sees it, and the writer's checkpoint is never held back by our own reader); another
  // process's commit is seen from the next turn on, as with dataVersion().
  const readBegin = reader.query('BEGIN')
  const readEnd = reader.query('COMMIT')
  let reading = false
  const endRead = () => {
    // The version read in a snapshot lives as long as it (dataVersion()).
    version = null
    if (!reading) return
    reading = false
    if (reader.inTransaction) readEnd.run()
  }
  const beginRead = () => {
    if (reading) return
    if (!reader.inTransaction) readBegin.run()
    reading = true
    setImmediate(endRead)
  }
  cacheStatements(writer)
  cacheStatements(reader, beginRead)
  const writeDb = sqliteDb(writer)
  const readDb = sqliteDb(reader)
  const mutex = new Mutex()
  const current = new AsyncLocalStorage<Db>()
  /** The txState of the transaction in progress (one at a time: the mutex). */
  let txStates: TxStates | undefined
  /** What runs after the transaction in progress commits (afterCommit). */
  let committed: Array<() => void> | undefined
  let closed = false
  /** BEGIN IMMEDIATE, retried without blocking the event loop while another connection holds the write lock. */
  const beginWrite = async () => {
    const deadline = Date.now() + WRITE_LOCK_TIMEOUT_MS
    for (let attempt = 0; ; attempt++) {
      try {
        writer.run('BEGIN IMMEDIATE')
        return
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err
      }
      await Bun.sleep(attempt < 10 ? 0 : 1)
    }
  }
  return {
    dialect: 'sqlite',
    singleWriter: true,
    file: path === ':memory:' || path.startsWith('file::memory:') ? null : path,
    url,
    db: readDb,
    t: sqliteSchema,
    async tx(fn, opts) {
      const outer = current.getStore()
      if (outer) return fn(outer)
      const release = await mutex.lock()
      // The safety level cannot change inside a transaction: it is set before BEGIN and put back after.
      const lazy = opts?.durable === false && synchronous === 'FULL'
      try {
        if (lazy) writer.run('PRAGMA synchronous = NORMAL')
        await beginWrite()
        try {
          const result = await current.run(writeDb, async () => {
            const r = await fn(writeDb)
            await flushTxStates(txStates)
            return r
          })
          endRead()
          writer.run('COMMIT')
          const after = committed
          committed = undefined
          if (after) runAfterCommit(after)
          return result
        } catch (err) {
          if (writer.inTransaction) writer.run('ROLLBACK')
          throw err
        }
      } finally {
        txStates = undefined
        committed = undefined
        if (lazy) writer.run('PRAGMA synchronous = FULL')
        release()
      }
    },
    txState(db, key, init, flush) {
      // Only `tx` hands out the writer's handle (and one transaction runs at a time: the mutex).
      if (db !== writeDb) throw new Error('txState outside a transaction')
      txStates ??= new Map()
      return txStateOf(txStates, key, init, flush)
    },
    get closed() { return closed },
    get inTransaction() { return current.getStore() !== undefined },
    async rows<T>(query: SQL, db?: Db) {
      return sqliteHandle(db ?? current.getStore() ?? readDb).all<T>(query)
    },
    async probe<T>(text: string) {
      return sqliteHandle(readDb).all<T>(sql.raw(text))
    },
    async exec(query, db) {
      const target = db ?? current.getStore()
      if (target) { sqliteHandle(target).run(query); return }
      await this.tx(async (w) => { sqliteHandle(w).run(query) })
    },
    async script(text) {
      const release = await mutex.lock()
      endRead()
      // Scripts (migrations at start-up, VACUUM) may manage transactions themselves, so they cannot run
      // inside beginWrite's; they are rare enough to wait for a lock inside SQLite, blocking the thread.
      writer.run(`PRAGMA busy_timeout = ${WRITE_LOCK_TIMEOUT_MS}`)
      try {
        writer.run(text)
      } finally {
        writer.run('PRAGMA busy_timeout = 0')
        release()
      }
    },
    async applyMigration(name, text) {
      return this.tx(async () => {
        if (writer.query('SELECT 1 FROM schema_migrations WHERE name = ?').get(name)) return false
        writer.run(text)
        writer.query('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)').run(name, Date.now())
        return true
      })
    },
    guarded(call) {
      return call()
    },
    prepared<T>(text: string) {
      let statement: ReturnType<Database['query']> | null = null
      // Compiled at first use (the table may not exist before migrations), then reused.
      return async (...params: Array<string | number | null>) => {
        beginRead()
        statement ??= reader.query(text.replace(/\$(\d+)/g, '?$1'))
        return statement.all(...params) as T[]
      }
    },
    refresh() {
      endRead()
    },
    dataVersion() {
      if (version === null) {
        // Read inside the turn's snapshot (begun here if need be): the version is the snapshot's, and the
        // read locks are taken once for it and the turn's other reads.
        beginRead()
        version = (dataVersion.get() as { data_version: number }).data_version
      }
      return version
    },
    afterCommit(db, fn) {
      if (db !== writeDb) { fn(); return }
      committed ??= []
      committed.push(fn)
    },
    async close() {
      closed = true
      const release = await mutex.lock()
      try {
        endRead()
        reader.close()
        writer.close()
      } finally { release() }
    },
  }
}

/** Statements with more parameters than this (long IN lists) stay unnamed: one text per list length. */
const PREPARE_MAX_PARAMS = 32

/**
 * The client drizzle runs its statements through, with those of up to PREPARE_MAX_PARAMS parameters
 * prepared (named and kept per connection, as postgres.js does for its own tagged templates). drizzle
 * passes `prepare: false` unless a query is given a name, and postgres.js then describes every unnamed
 * statement with parameters before running it: a second round trip and a second socket write for each,
 * which measured as a quarter of the main thread's CPU under POST /v1/track on PostgreSQL. A prepared
 * statement is described once per connection; postgres.js replaces its connections after 30 to 60 minutes
 * (max_lifetime), which bounds what each keeps. Transactions and savepoints hand drizzle the same kind of
 * client.
 */
function preparing(sql: postgres.Sql, options: postgres.Sql['options'] = sql.options): postgres.Sql {
  return new Proxy(sql, {
    get(target, prop) {
      // A reserved connection has no options of its own: drizzle reads (and sets) the pool's parsers.
      if (prop === 'options') return options
      if (prop === 'unsafe') {
        return (text: string, params?: postgres.ParameterOrJSON<never>[], opts?: postgres.UnsafeQueryOptions) =>
          target.unsafe(text, params, params?.length && params.length <= PREPARE_MAX_PARAMS ? { ...opts, prepare: true } : opts)
      }
      if (prop === 'begin' || prop === 'savepoint') {
        return (...args: unknown[]) => {
          const fn = args.pop() as (inner: postgres.Sql) => unknown
          const method = Reflect.get(target, prop) as (...a: unknown[]) => unknown
          return method.call(target, ...args, (inner: postgres.Sql) => fn(preparing(inner)))
        }
      }
      const value = Reflect.get(target, prop)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * A transaction of the store on PostgreSQL: pg-reserved.ts's (its BEGIN written with its first statement,
 * a connection lost meanwhile never used again nor given back), with drizzle over the reserved connection.
 */
function pgTransaction<T>(client: postgres.Sql, fn: (tx: Db) => Promise<T>): Promise<T> {
  return reservedTransaction(client, (conn) => fn(drizzlePg(preparing(conn, client.options)) as Db))
}

function openPg(url: string): Store {
  const client = openPool(url, { max: 10, onnotice: () => {}, connect_timeout: PG_CONNECT_TIMEOUT_S, backoff: pgReconnectDelayS, connection: { application_name: 'mailctl' } })
  // Statements outside transactions, watched for the loss of their connection (pg-reserved.ts).
  const statements = watchStatements(client)
  const db: Db = drizzlePg(preparing(statements))
  // Fail fast while the database is down, a deadline on compiled reads, a bound on waiting calls (pg-guard.ts).
  // Health checks' own connection (Store.probe), made at the first check. The guard's probe of a database
  // that was down stays on the pool: while the database is known down every call is refused at once, so
  // nothing queues in front of it there.
  const probeClient = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: PG_CONNECT_TIMEOUT_S, backoff: pgReconnectDelayS, connection: { application_name: 'mailctl-probe' } })
  const guard = new PgGuard(() => client`SELECT 1`)
  const current = new AsyncLocalStorage<Db>()
  const txStates = new WeakMap<Db, TxStates>()
  /** What runs after each transaction commits (afterCommit), by its outermost handle. */
  const committed = new WeakMap<Db, Array<() => void>>()
  let closed = false
  return {
    dialect: 'pg',
    singleWriter: false,
    file: null,
    url,
    db,
    t: pgSchema,
    async tx(fn, opts) {
      const outer = current.getStore()
      if (outer) return fn(outer)
      let of: Db | undefined
      const result = await guard.run(() => pgTransaction(client, (tx) => current.run(tx, async () => {
        of = tx
        if (opts?.durable === false) void tx.execute(sql`SET LOCAL synchronous_commit = off`).catch(() => {})
        const r = await fn(tx)
        await flushTxStates(txStates.get(tx))
        return r
      })))
      const after = of && committed.get(of)
      if (after) runAfterCommit(after)
      return result
    },
    txState(_db, key, init, flush) {
      // The outermost transaction's (a savepoint of it commits with it).
      const tx = current.getStore()
      if (!tx) throw new Error('txState outside a transaction')
      let states = txStates.get(tx)
      if (!states) { states = new Map(); txStates.set(tx, states) }
      return txStateOf(states, key, init, flush)
    },
    get closed() { return closed },
    get inTransaction() { return current.getStore() !== undefined },
    async rows<T>(query: SQL, on?: Db) {
      const target = on ?? current.getStore()
      const res = target ? await target.execute(query) : await guard.run(() => db.execute(query))
      return res as T[]
    },
    async probe<T>(text: string) {
      return await probeClient.unsafe<T[]>(text)
    },
    async exec(query, on) {
      const target = on ?? current.getStore()
      if (target) await target.execute(query)
      else await guard.run(() => db.execute(query))
    },
    async script(text) {
      await client.unsafe(text).simple()
    },
    async applyMigration(name, text) {
      return reservedTransaction(client, async (q) => {
        await q`SELECT pg_advisory_xact_lock(${PG_MIGRATION_LOCK})`
        const seen = await q`SELECT 1 FROM schema_migrations WHERE name = ${name}`
        if (seen.length) return false
        await q.unsafe(text).simple()
        await q`INSERT INTO schema_migrations (name) VALUES (${name})`
        return true
      }, { what: `the migration ${name}` })
    },
    guarded(call, opts) {
      return guard.run(call, opts?.deadline ? guard.readDeadlineMs : undefined)
    },
    prepared<T>(text: string) {
      return (...params: Array<string | number | null>) => guard.run(async () => await statements.unsafe<T[]>(text, params, { prepare: true }), guard.readDeadlineMs)
    },
    dataVersion() {
      return null
    },
    afterCommit(on, fn) {
      // The outermost transaction's (a savepoint's work commits with it).
      const tx = current.getStore()
      if (!tx || on === db) { fn(); return }
      let list = committed.get(tx)
      if (!list) { list = []; committed.set(tx, list) }
      list.push(fn)
    },
    refresh() {},
    async close() {
      closed = true
      guard.stop()
      // A connection lost in the middle of a statement does not hold the end for its 5 s (endPool).
      await Promise.all([endPool(client, 5), probeClient.end({ timeout: 1 })])
    },
  }
}

/**
 * Opens the store of a DATABASE_URL (refused with a ConfigError naming the setting when malformed).
 * `create: false` opens only an existing SQLite file (StoreMissingError otherwise) and creates no
 * directory; a PostgreSQL database is never created here (see storeIsEmpty for "no schema yet").
 */
export function openStore(url: string, opts: { sqliteSynchronous?: 'FULL' | 'NORMAL'; create?: boolean } = {}): Store {
  const problem = databaseUrlProblem(url)
  if (problem) throw new ConfigError(problem)
  if (url.startsWith('sqlite:')) return openSqlite(url, opts.sqliteSynchronous ?? 'FULL', opts.create ?? true)
  return openPg(url)
}

/** The SQLite file of a DATABASE_URL does not exist and the caller asked not to create it. */
export class StoreMissingError extends Error {
  constructor(readonly url: string, readonly path: string) {
    super(`no SQLite database at ${path}`)
  }
}

/**
 * The message of a database error without drizzle's "Failed query: ..." wrapper: the driver's own cause
 * (`connect ECONNREFUSED 127.0.0.1:5432`, `database "x" does not exist`, `no such table: ...`).
 */
export function describeStoreError(err: unknown): string {
  let e: unknown = err
  const seen = new Set<unknown>()
  while (e instanceof Error && e.cause !== undefined && !seen.has(e)) {
    seen.add(e)
    e = e.cause
  }
  const root = e instanceof Error ? e.message : String(e)
  const top = err instanceof Error ? err.message : String(err)
  if (e === err || /^Failed query:/.test(top)) return root || top
  return `${top}: ${root}`
}

/** The store cannot be reached: its message names DATABASE_URL (password hidden) and the driver's cause. */
export class StoreUnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`cannot use the database of DATABASE_URL (${redactUrl(url)}): ${describeStoreError(cause)}`, { cause })
  }
}

/** Runs one trivial query, so a wrong host, port, password or database name fails here, named. */
export async function checkReachable(store: Store): Promise<void> {
  try {
    await store.rows(sql`SELECT 1 AS one`)
  } catch (err) {
    throw new StoreUnreachableError(store.url, err)
  }
}
