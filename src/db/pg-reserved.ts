/**
 * A connection reserved from postgres.js's pool (a transaction's, src/db/client.ts), never used again once it
 * is lost. postgres.js 3.4.9, the newest release, keeps handing statements to a reserved connection whose
 * socket has closed: its `closed()` sets the socket to null, and a statement sent afterwards (the ROLLBACK
 * after a failed statement, a savepoint's rollback in a group-committed batch), or the connection handed
 * back with `release()` (which puts the closed connection among the open ones, where the pool's next query
 * lands), is written from a `setImmediate` to that null socket: an uncaught
 * `TypeError: null is not an object (evaluating 'socket.write')` that ends the process, and the statement is
 * never answered (porsager/postgres#1208 and #1066, unfixed). A statement sent after a socket error and
 * before the socket's close is never answered either: `closed()` fails only what it finds in flight when
 * the socket ended without an error.
 *
 * postgres.js's own `begin` has the same fault, so no transaction uses it: the store's, the migrations', and
 * those of the one-off commands (backup, restore, store copy) all run in reservedTransaction below. Two
 * more faults of its pool are worked around here: a reservation waiting for a connection when another
 * closes was dropped (PoolConnections.closed), and its `end()` waited its whole timeout for a connection
 * lost in the middle of a statement (endPool).
 *
 * So the connection is lost from the first of: postgres.js closing it (its connection's `onclose`, which
 * its own `begin` uses, reached through the `onexecute` option of a statement), or one of its statements
 * failing because the connection failed (connectionFailed). From then on statements (`unsafe` and tagged
 * ones) are refused with a ConnectionLostError before they reach postgres.js, and `release()` does nothing:
 * postgres.js has the connection among its closed ones (or will at the close that follows such a failure)
 * and connects it again when the pool needs it. Nothing is dropped: the statements in flight at the loss
 * were failed by postgres.js, the later ones are failed here, each with an error that answers 503
 * DATABASE_UNAVAILABLE (src/db/failures.ts), and the server rolls back the transaction of a connection
 * that ended. The hooks are postgres.js internals: the version is pinned in package.json, and
 * test/db/pg-lost-connection.test.ts and test/ops/pg-lost-connection.test.ts fail if they change.
 */
import postgres from 'postgres'

/** The connection object postgres.js passes to a statement's `onexecute` (the fields used here). */
interface PgConnection {
  onclose: ((err: Error) => void) | null
  /** The pool's queue the connection is in: open, busy, closed... (postgres.js moves it between them). */
  queue: unknown
  end(): Promise<void>
  terminate(): void
}

/** What refused statements fail with: its code is postgres.js's own for a closed connection. */
export class ConnectionLostError extends Error {
  readonly code = 'CONNECTION_CLOSED'
}

/**
 * A transaction that failed because its connection was lost. `committed` is false when the connection
 * was lost before its COMMIT was sent (the server rolls back the transaction of a connection that ends:
 * nothing of it was written), null when it was lost with the COMMIT in flight (it may have committed).
 */
export class TransactionLostError extends ConnectionLostError {
  constructor(what: string, readonly committed: false | null, readOnly: boolean, cause: Error) {
    const lost = `the database connection was lost during ${what} (${cause.message})`
    super(readOnly ? lost
      : committed === false ? `${lost}; it was not committed: nothing of it was written`
      : `the database connection was lost while the COMMIT of ${what} was in flight (${cause.message}); it may or may not have committed`, { cause })
  }
}

/**
 * True when a statement failed because its connection failed: the socket's own error (it has a `syscall`:
 * ECONNRESET, EPIPE...), FATAL or PANIC from the server (it closes the connection after them), or
 * postgres.js's codes for a connection closed, destroyed or ended. Not a statement's own error (a
 * constraint, a deadlock, a bad parameter): the connection then stays usable and goes back to the pool.
 */
export function connectionFailed(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  const e = err as { code?: unknown; severity?: unknown; syscall?: unknown }
  if (e.severity === 'FATAL' || e.severity === 'PANIC') return true
  if (typeof e.syscall === 'string') return true
  return e.code === 'CONNECTION_CLOSED' || e.code === 'CONNECTION_DESTROYED' || e.code === 'CONNECTION_ENDED'
}

/**
 * The connections of one postgres.js pool that its reserved connections ran on, so that the pool's end
 * does not wait for one that was lost. postgres.js keeps the statement that was in flight when a
 * connection closed as the connection's current one until it connects again, and its `end()` waits for
 * that statement's answer, which never comes: `sql.end({ timeout })` then waited its whole timeout, after
 * every statement had been answered or failed. `endPool` ends such connections at once (there is nothing
 * left on them to flush) and lets the others finish what they run, as `end` does.
 */
class PoolConnections {
  readonly seen = new Set<PgConnection>()
  /** The pool's queue of closed connections, learned from the first close seen (postgres.js moves a connection there before telling it). */
  closedQueue: unknown = null
  /** Connections lost by a socket error whose close has not come yet (it comes a little later). */
  readonly closing = new Set<PgConnection>()
  /** Reservations waiting in postgres.js's queue, oldest first: each asks again when it is presumed dropped (closed). */
  readonly queued: Array<() => void> = []

  /**
   * A connection of the pool closed. postgres.js then connects it again for the oldest request waiting in
   * its queue, and when that request is a reservation it drops it once connected: the reservation never
   * gets its connection and its transaction waits forever (a transaction waiting for a free connection
   * when another closes: a cut, a server restart, the connection's max_lifetime). The oldest waiting
   * reservation asks again, behind the others; had it not been dropped, whichever answer comes second is
   * given back to the pool.
   */
  closed(): void {
    const again = this.queued.shift()
    // After postgres.js has handed the request over (it does so right after telling us).
    if (again) setImmediate(again)
  }

  /**
   * A connection the pool's own statements (outside transactions) run on, ended at its close as a lost
   * reserved one is: an `end()` already waiting for the statement it lost in flight is let go (a store
   * closed right after that statement failed, before the socket's close: the failure comes at the
   * socket's error, a turn earlier), and statements handed to it between the error and the close are
   * failed. Once closed, endPool knows it lost. The hook also learns the pool's closed queue (a store may
   * lose connections before it ran any transaction); postgres.js calls it at the close and drops it, and
   * a reservation of the connection sets its own meanwhile. The result lets postgres.js send more
   * statements on the connection without waiting (as without `onexecute`).
   */
  watch(c: PgConnection): true {
    if (!c.onclose) {
      this.seen.add(c)
      c.onclose = () => {
        // postgres.js has just moved it to the pool's closed ones.
        this.closedQueue ??= c.queue
        c.terminate()
      }
    }
    return true
  }

  /** The connections lost and not connected again since (the pool moves one out of its closed queue as it reconnects it). */
  lost(): PgConnection[] {
    return [...this.closing, ...[...this.seen].filter((c) => this.closedQueue !== null && c.queue === this.closedQueue)]
  }
}

/** One per pool, by its options object (the same through the proxies in front of the pool, client.ts's `preparing`). */
const pools = new WeakMap<object, PoolConnections>()

function poolOf(client: postgres.Sql): PoolConnections {
  let p = pools.get(client.options)
  if (!p) { p = new PoolConnections(); pools.set(client.options, p) }
  return p
}

/**
 * A postgres.js pool for reservedTransaction and reserveGuarded: told when one of its connections closes,
 * so that a reservation postgres.js dropped then asks again (PoolConnections.closed).
 */
export function openPool(url: string, options: postgres.Options<Record<string, postgres.PostgresType>>): postgres.Sql {
  let pool: PoolConnections | null = null
  const client = postgres(url, { ...options, onclose: (id) => { options.onclose?.(id); pool?.closed() } })
  pool = poolOf(client)
  return client
}

/**
 * The pool's own statements (`unsafe`: drizzle's outside transactions, Store.prepared, the repos' direct
 * reads) watched for the loss of their connection (PoolConnections.watch), so that `store.close()` does
 * not wait postgres.js's whole timeout for a statement that was in flight when its connection was lost
 * (endPool). postgres.js tells a statement's connection only when the statement can be followed at once
 * by another (not one described before it runs, nor a cursor): a connection is watched from its first
 * such statement.
 */
export function watchStatements(client: postgres.Sql): postgres.Sql {
  const pool = poolOf(client)
  const onexecute = (c: PgConnection) => pool.watch(c)
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'unsafe') {
        return (text: string, params?: postgres.ParameterOrJSON<never>[], opts?: postgres.UnsafeQueryOptions) =>
          target.unsafe(text, params, (opts ? { ...opts, onexecute } : { onexecute }) as postgres.UnsafeQueryOptions)
      }
      const value = Reflect.get(target, prop)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** `client.reserve()`, asked again when postgres.js dropped the request (PoolConnections.closed). */
function reserve(client: postgres.Sql, pool: PoolConnections): Promise<postgres.ReservedSql> {
  return new Promise((resolve, reject) => {
    let done = false
    const ask = () => {
      if (done) return
      const again = () => ask()
      pool.queued.push(again)
      const answered = () => {
        const i = pool.queued.indexOf(again)
        if (i >= 0) pool.queued.splice(i, 1)
      }
      client.reserve().then((conn) => {
        answered()
        if (done) conn.release()
        else { done = true; resolve(conn) }
      }, (err: unknown) => {
        answered()
        if (!done) { done = true; reject(err) }
      })
    }
    ask()
  })
}

/**
 * Ends a pool as `client.end({ timeout })` does, but a connection lost since it last connected (known
 * from the reserved connections, which all of the store's transactions use, and from the statements of
 * watchStatements) is ended at once instead of holding the end for `timeout` seconds. The others still
 * finish the statements they run.
 */
export async function endPool(client: postgres.Sql, timeout: number): Promise<void> {
  for (const c of pools.get(client.options)?.lost() ?? []) {
    const end = c.end
    // `terminate` resolves the end that waits for the lost statement (and fails nothing more: none is in flight).
    c.end = () => { const ended = end(); c.terminate(); return ended }
  }
  await client.end({ timeout })
}

export interface GuardedConnection {
  /** The reserved connection: its `unsafe` and tagged statements refuse to run once it is lost. */
  sql: postgres.ReservedSql
  /** Why the connection is lost; null while it is not. */
  readonly lost: Error | null
  /** Gives the connection back to the pool unless it is lost. */
  release(): void
}

/** A statement refused: a rejected promise that answers the chaining calls of drizzle, the transaction and src/ops. */
function refusal(cause: Error): postgres.PendingQuery<postgres.Row[]> {
  const err = new ConnectionLostError(`the database connection was lost (${cause.message}); the statement was not sent`, { cause })
  const p = Promise.reject(err)
  // Handled here (a statement built but never awaited must not be an unhandled rejection); awaiting it still throws.
  p.catch(() => {})
  const self = () => p
  const cursor = () => ({ [Symbol.asyncIterator]: () => ({ next: () => p, return: () => Promise.resolve({ done: true, value: undefined }) }) })
  return Object.assign(p, { values: self, raw: self, execute: self, simple: self, cursor }) as unknown as postgres.PendingQuery<postgres.Row[]>
}

export async function reserveGuarded(client: postgres.Sql): Promise<GuardedConnection> {
  const pool = poolOf(client)
  const conn = await reserve(client, pool)
  let lost: Error | null = null
  let connection: PgConnection | null = null
  let closed = false
  const onclose = (err: Error) => {
    lost ??= err
    closed = true
    if (connection) {
      pool.closing.delete(connection)
      // postgres.js has just moved it to the pool's closed ones.
      pool.closedQueue ??= connection.queue
      // Statements sent between a socket error and its close (the connection was idle at the error, so
      // nothing told us) are never failed by postgres.js, and it would take their answers from the next
      // connection on this object: ending it fails them (CONNECTION_DESTROYED) and forgets them. The pool
      // connects it again as before.
      connection.terminate()
    }
  }
  // postgres.js calls it as a statement is handed to the connection; its result must be truthy (more may follow).
  const onexecute = (c: PgConnection) => {
    connection = c
    pool.seen.add(c)
    c.onclose = onclose
    return true
  }
  const markLost = (err: unknown) => {
    if (lost !== null || !connectionFailed(err)) return
    lost = err as Error
    if (connection && !closed) pool.closing.add(connection)
  }
  // Promise's own `then`, not the query's: the query's would send it before drizzle has set it up. A
  // cursor's failure does not reject the query's own promise, only the iterator's `next` (src/ops reads
  // tables with cursors): that is watched too.
  const observe = <Q extends Promise<unknown> & { cursor?: unknown }>(q: Q): Q => {
    Promise.prototype.then.call(q, undefined, markLost)
    const cursor = q.cursor as ((rows?: unknown, fn?: unknown) => AsyncIterable<unknown>) | undefined
    if (typeof cursor === 'function') {
      q.cursor = (rows?: unknown, fn?: unknown) => {
        // Given a function, the cursor settles the query's own promise (watched above).
        if (typeof rows === 'function' || typeof fn === 'function') return cursor.call(q, rows, fn)
        const batches = cursor.call(q, rows)
        return {
          [Symbol.asyncIterator]: () => {
            const it = batches[Symbol.asyncIterator]()
            return {
              next: () => Promise.resolve(it.next()).catch((err: unknown) => { markLost(err); throw err }),
              return: () => Promise.resolve(it.return?.() ?? { done: true, value: undefined }),
            }
          },
        }
      }
    }
    return q
  }
  const sql = new Proxy(conn, {
    // A tagged statement (sql`...`); the helpers called the same way (sql(list), sql(name)) build no statement.
    apply(target, self, args: unknown[]) {
      const strings = args[0] as { raw?: unknown } | undefined
      if (!Array.isArray(strings) || !Array.isArray(strings.raw)) return Reflect.apply(target, self, args)
      if (lost) return refusal(lost)
      return observe(Reflect.apply(target, self, args) as postgres.PendingQuery<postgres.Row[]>)
    },
    get(target, prop) {
      if (prop === 'unsafe') {
        return (text: string, params?: postgres.ParameterOrJSON<never>[], opts?: postgres.UnsafeQueryOptions) => {
          if (lost) return refusal(lost)
          return observe(target.unsafe(text, params, connection ? opts : ({ ...opts, onexecute } as postgres.UnsafeQueryOptions)))
        }
      }
      const value = Reflect.get(target, prop)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    sql,
    get lost() { return lost },
    release() {
      // Lost: the hook stays until postgres.js calls it at the close (which may follow a socket error), then
      // drops it. Otherwise it would stay with the connection after us (the pool reuses the object).
      if (lost) return
      if (connection?.onclose === onclose) connection.onclose = null
      conn.release()
    },
  }
}

export interface TransactionOptions {
  /** The BEGIN statement (an isolation level, READ ONLY). */
  begin?: string
  /** The transaction in the message of a TransactionLostError ("the restore"). */
  what?: string
}

/**
 * A transaction on a connection of the pool reserved for it (reserveGuarded), with its BEGIN written
 * together with its first statement. postgres.js's own `begin` awaits the BEGIN alone (a round trip and a
 * socket write more for every transaction) and, like a reserved connection, keeps writing to a connection
 * that was lost: its ROLLBACK after the failure crashed the process or was never answered (above). Here
 * statements on one connection run in the order they were written, so nothing of `fn` runs before the
 * BEGIN; if the BEGIN fails, so do they. ROLLBACK on any error, then the connection goes back to the
 * pool. A connection lost meanwhile is neither used again nor given back, and the transaction fails with a
 * TransactionLostError that says whether it may have committed.
 */
export async function reservedTransaction<T>(client: postgres.Sql, fn: (sql: postgres.ReservedSql) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
  const reserved = await reserveGuarded(client)
  const conn = reserved.sql
  let committing = false
  try {
    const begun = conn.unsafe(opts.begin ?? 'BEGIN').execute()
    begun.catch(() => {})
    const result = await fn(conn)
    await begun
    // PostgreSQL answers the COMMIT of a failed transaction with ROLLBACK, not an error: a statement that
    // failed unawaited (sent without awaiting its answer, its rejection handled) must not pass for committed.
    // Lost before it: the COMMIT is refused, never sent.
    committing = reserved.lost === null
    const done = await conn.unsafe('COMMIT')
    if (done.command !== 'COMMIT') throw new Error(`the transaction was rolled back at its commit (the database answered ${done.command})`)
    return result
  } catch (error) {
    const lost = reserved.lost
    if (lost) throw new TransactionLostError(opts.what ?? 'the transaction', committing ? null : false, /\bREAD ONLY\b/i.test(opts.begin ?? ''), lost)
    await conn.unsafe('ROLLBACK').catch(() => {})
    throw error
  } finally {
    reserved.release()
  }
}
