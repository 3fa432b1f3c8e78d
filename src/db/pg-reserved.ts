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
 * So the connection is lost from the first of: postgres.js closing it (its connection's `onclose`, which
 * its own `begin` uses, reached through the `onexecute` option of a statement), or one of its statements
 * failing because the connection failed (connectionFailed). From then on statements are refused with a
 * ConnectionLostError before they reach postgres.js, and `release()` does nothing: postgres.js has the
 * connection among its closed ones (or will at the close that follows such a failure) and connects it again
 * when the pool needs it. Nothing is dropped: the statements in flight at the loss were failed by postgres.js,
 * the later ones are failed here, each with an error that answers 503 DATABASE_UNAVAILABLE
 * (src/db/failures.ts), and the server rolls back the transaction of a connection that ended.
 * The hooks are postgres.js internals: the version is pinned in package.json, and
 * test/db/pg-lost-connection.test.ts fails if they change.
 */
import type postgres from 'postgres'

/** The connection object postgres.js passes to a statement's `onexecute` (the one field used here). */
interface PgConnection { onclose: ((err: Error) => void) | null }

/** What refused statements fail with: its code is postgres.js's own for a closed connection. */
export class ConnectionLostError extends Error {
  readonly code = 'CONNECTION_CLOSED'
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

export interface GuardedConnection {
  /** The reserved connection: its `unsafe` (all drizzle and the transaction send) refuses statements once it is lost. */
  sql: postgres.ReservedSql
  /** Why the connection is lost; null while it is not. */
  readonly lost: Error | null
  /** Gives the connection back to the pool unless it is lost. */
  release(): void
}

/** A statement refused: a rejected promise that answers the chaining calls drizzle and the transaction make. */
function refusal(cause: Error): postgres.PendingQuery<postgres.Row[]> {
  const p = Promise.reject(new ConnectionLostError(`the database connection was lost (${cause.message}); the statement was not sent`, { cause }))
  const self = () => p
  return Object.assign(p, { values: self, raw: self, execute: self, simple: self }) as unknown as postgres.PendingQuery<postgres.Row[]>
}

export async function reserveGuarded(client: postgres.Sql): Promise<GuardedConnection> {
  const conn = await client.reserve()
  let lost: Error | null = null
  let connection: PgConnection | null = null
  const onclose = (err: Error) => { lost ??= err }
  // postgres.js calls it as a statement is handed to the connection; its result must be truthy (more may follow).
  const onexecute = (c: PgConnection) => {
    connection = c
    c.onclose = onclose
    return true
  }
  // Promise's own `then`, not the query's: the query's would send it before drizzle has set it up.
  const observe = (q: postgres.PendingQuery<postgres.Row[]>) => {
    Promise.prototype.then.call(q, undefined, (err: unknown) => {
      if (lost === null && connectionFailed(err)) lost = err as Error
    })
    return q
  }
  const sql = new Proxy(conn, {
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
      // Our close hook stays with the connection after us otherwise (the pool reuses the object).
      if (connection?.onclose === onclose) connection.onclose = null
      if (!lost) conn.release()
    },
  }
}
