/**
 * Leases and wake-ups, the one implementation both durable queues use: the job queue (jobs/queue.ts)
 * and the outbound mail queue (mail/outbound/queue-repo.ts). Each queue claims rows its own way; this module
 * owns everything after the claim:
 * - who holds a lease (`Holders`, implemented by the nodes table in jobs/nodes.ts: a holder id per
 *   worker, and which holders are gone);
 * - how long a lease lasts and how it is renewed (`leaseEnd`, `renewAfterMs`, `renew`);
 * - handing leases back: those of a holder that is gone (`releaseDead`, when a worker starts and at each
 *   node heartbeat) and those a stopping worker still holds (`release`, at stop);
 * - waking workers when work is queued (`Wakeups`).
 *
 * A leased table has `locked_by` (the holder id) and `locked_until` (the lease end). A lease that runs
 * out is simply claimed again by its queue's claim query; only the holder may write a row it holds
 * (`heldBy`), so a worker whose lease ran out cannot overwrite the new holder's work.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { and, eq, gt, inArray, isNotNull, lt, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable, PgUpdateSetSource } from 'drizzle-orm/pg-core'
import { EventEmitter } from 'node:events'
import type Redis from 'ioredis'
import type { Store } from '../db/client'
import { errorFields, type Logger } from '../log'

/** A table whose rows are leased, and what renewing and releasing a row writes in it. */
export interface LeasedTable<T extends PgTable = PgTable> {
  table: T
  /** The primary key. */
  key: PgColumn
  lockedBy: PgColumn
  lockedUntil: PgColumn
  /** What a renewal sets, given the new lease end (at least `locked_until`). */
  renewed(until: Date): PgUpdateSetSource<T>
  /** What a release sets: no holder, and due at `now`. */
  released(now: Date): PgUpdateSetSource<T>
}

/**
 * Holder identity and liveness: the only contract the lease functions rely on. The implementation is
 * the nodes table (jobs/nodes.ts, `NodeRegistry`): a holder id names a node (a process) and a holder is
 * gone when its node's heartbeat is stale or its row is gone. Hostnames and pids are never trusted.
 */
export interface Holders {
  /** A new holder id, one per worker (a job Worker, an outbound pipeline). */
  newId(): string
  /** The ids among `ids` whose holder is known to be gone; their leases may be handed back now. */
  dead(ids: string[]): Promise<string[]>
}

/** The end of a lease of `leaseMs` taken at `now`. */
export function leaseEnd(now: Date, leaseMs: number): Date {
  return new Date(now.getTime() + leaseMs)
}

/** A holder renews its leases once a third of the lease has passed, so one late renewal loses nothing. */
export function renewAfterMs(leaseMs: number): number {
  return leaseMs / 3
}

/** Rows of `t` that `holder` holds (among `keys`, when given): the condition of every write by a holder. */
export function heldBy(t: LeasedTable, holder: string, keys?: string[]): SQL | undefined {
  const mine = eq(t.lockedBy, holder)
  return keys ? and(mine, inArray(t.key, keys)) : mine
}

/** Leases that have run out at `now` (their rows may be claimed again). */
export function expiredLease(t: LeasedTable, now: Date): SQL {
  return lt(t.lockedUntil, now)
}

/** Leases held at `now`. */
export function liveLease(t: LeasedTable, now: Date): SQL | undefined {
  return and(isNotNull(t.lockedBy), gt(t.lockedUntil, now))
}

const CHUNK = 500

/**
 * Extends `holder`'s leases on `keys` to `leaseMs` from `now` (a heartbeat); `also` is written with
 * them (a job's progress). Rows the holder lost are left alone. Returns how many were renewed.
 */
export async function renew<T extends PgTable>(
  store: Store, t: LeasedTable<T>, holder: string, keys: string[], leaseMs: number,
  now: Date, also?: PgUpdateSetSource<T>,
): Promise<number> {
  const until = leaseEnd(now, leaseMs)
  let n = 0
  for (let i = 0; i < keys.length; i += CHUNK) {
    const rows = await store.tx((db) => db.update(t.table).set({ ...also, ...t.renewed(until) })
      .where(heldBy(t, holder, keys.slice(i, i + CHUNK))).returning({ key: t.key }), { durable: false })
    n += rows.length
  }
  return n
}

/**
 * Hands back `holder`'s leases (only those on `keys`, when given): the rows are due at `now`, for any
 * worker. A worker calls it when it stops, for what it still holds. Returns how many were released.
 */
export async function release(store: Store, t: LeasedTable, holder: string, keys: string[] | undefined, now: Date): Promise<number> {
  if (keys && !keys.length) return 0
  let n = 0
  const chunks = keys ? Array.from({ length: Math.ceil(keys.length / CHUNK) }, (_, i) => keys.slice(i * CHUNK, (i + 1) * CHUNK)) : [undefined]
  for (const chunk of chunks) {
    const rows = await store.tx((db) => db.update(t.table).set(t.released(now)).where(heldBy(t, holder, chunk)).returning({ key: t.key }))
    n += rows.length
  }
  return n
}

/**
 * Hands back the live leases of holders that are gone (a crash or kill -9), so their rows are due now
 * instead of when the leases expire. The node registry calls it when a worker starts and at each
 * heartbeat. Returns how many rows it released.
 */
export async function releaseDead(store: Store, t: LeasedTable, who: Holders, now: Date): Promise<number> {
  const rows = await store.db.selectDistinct({ by: t.lockedBy }).from(t.table).where(liveLease(t, now))
  const ids = rows.map((r) => r.by).filter((by): by is string => typeof by === 'string')
  const dead = ids.length ? await who.dead(ids) : []
  if (!dead.length) return 0
  const released = await store.tx((db) => db.update(t.table).set(t.released(now)).where(inArray(t.lockedBy, dead)).returning({ key: t.key }))
  return released.length
}

/**
 * Where a process publishes its wake-ups for other nodes: its Redis connection (REDIS_URL), so that a node
 * without workers, an API node, wakes the worker nodes too. `Deps` is one: callers pass their deps.
 */
export interface WakeupRemote { redis: Redis | null; log: Logger }

/**
 * The signal "work was queued" of one queue. Workers of this process hear it at once; with Redis,
 * workers of other nodes hear it through the channel `mailctl:<name>`. Without Redis (or when it is
 * down) other nodes find the work at their next poll.
 */
/** Runs a function in the async context of this module's loading: no caller's transaction is visible in it. */
const outsideAsyncContext = AsyncLocalStorage.snapshot()

export class Wakeups {
  private local = new EventEmitter()
  readonly channel: string

  constructor(readonly name: string) {
    this.channel = `mailctl:${name}`
    this.local.setMaxListeners(100)
  }

  /**
   * Wakes this process's workers now and, given Redis, every node's. While Redis is not connected the
   * publish is skipped (other nodes poll), and a failed publish is logged at debug level only: a wake-up
   * is an accelerator, never an error of the caller.
   */
  notify(remote?: WakeupRemote): void {
    // Listeners run outside the caller's async context: a wake-up sent from inside a transaction (enqueue
    // with `db`) must not make the woken worker's claim join that transaction (the store finds the open
    // transaction through AsyncLocalStorage, and on PostgreSQL a claim on a committed one never returns).
    outsideAsyncContext(() => this.local.emit('wake'))
    if (remote?.redis?.status !== 'ready') return
    const log = remote.log
    remote.redis.publish(this.channel, '1').catch((err) => log.debug(`${this.name} wake-up publish failed; other nodes poll`, errorFields(err)))
  }

  /** Calls `fn` on each wake-up of this process; returns the function that stops it. */
  on(fn: () => void): () => void {
    this.local.on('wake', fn)
    return () => { this.local.off('wake', fn) }
  }

  /** Calls `fn` when any node notifies through Redis; resolves to the function that stops it. */
  async subscribe(redis: Redis, log: Logger, fn: () => void): Promise<() => void> {
    const sub = redis.duplicate()
    sub.on('message', () => fn())
    // ioredis reconnects and subscribes again by itself; meanwhile this node polls. One line per outage.
    let down = false
    sub.on('error', (err) => {
      if (!down) log.debug(`${this.name} wake-up subscription lost; polling until Redis is back`, errorFields(err))
      down = true
    })
    sub.on('ready', () => { down = false })
    const subscribed = sub.subscribe(this.channel).catch((err) => log.debug(`${this.name} wake-up subscription failed; polling`, errorFields(err)))
    // Connected: the subscription is live when this resolves. Not connected: start polling now.
    if (redis.status === 'ready') await subscribed
    return () => { sub.disconnect() }
  }
}
