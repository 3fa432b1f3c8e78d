/**
 * The nodes table: which processes are alive, for lease.ts's holders. Each process that runs workers
 * (a job Worker, an outbound pipeline) has one `NodeRegistry` per store (Deps.runtime.node, made by the
 * composition root): a random node id, a row in
 * `nodes` inserted when its first worker starts, a heartbeat every HEARTBEAT_MS, and the row deleted
 * when its last worker stops. A holder id is `<node id>:<suffix>` (one suffix per worker), and a holder
 * is gone when its node's heartbeat is older than NODE_STALE_MS or its row is gone: liveness is read
 * from the shared store, so it holds across hosts and containers (hostname and pid, kept in the row for
 * operators, prove nothing: two containers may share both).
 *
 * Dead nodes are looked for when a worker starts and then at every heartbeat (a sweep per node every
 * few seconds), never per claim: the claim and delivery hot paths are unchanged.
 *
 * A heartbeat that fails (a full disk, the database down) is retried every RETRY_MS until it lands, and
 * meanwhile this node claims nothing (`mayClaim`): other nodes judge it by its heartbeat, and would hand
 * its leases out while it works. Work already claimed goes on.
 *
 * On a file-backed SQLite store every node also holds an exclusive lock on a file of its own next to the
 * database (`<database>-node-<id>.lock`) for as long as it runs. The kernel drops that lock when the process
 * dies, kill -9 included, so a node whose file can be locked by another is known dead at once, not only
 * once its heartbeat is stale: after a crash the next start resumes the previous process's claimed mail
 * and jobs immediately (no other host can share a SQLite file, so the lock is proof). A node without a
 * lock file is judged by its heartbeat alone.
 */
import { Database } from 'bun:sqlite'
import { count, eq, gt, inArray, lt } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import { existsSync, unlinkSync } from 'node:fs'
import { hostname as osHostname } from 'node:os'
import { systemClock, type Clock } from '../clock'
import type { Store } from '../db/client'
import { errorFields, type Logger } from '../log'
import { releaseDead, type Holders, type LeasedTable } from './lease'

/** How often a node renews its heartbeat (and sweeps for dead nodes). */
export const HEARTBEAT_MS = 5_000
/**
 * A node whose heartbeat is older than this is gone: three missed heartbeats, plus a margin for a slow
 * store write and for clock differences between hosts.
 */
export const NODE_STALE_MS = 3 * HEARTBEAT_MS + 5_000
/** How soon a heartbeat that failed is tried again. */
export const HEARTBEAT_RETRY_MS = 1_000

export interface NodeOptions {
  hostname?: string
  pid?: number
  /** The clock of heartbeats and staleness: the deps' clock (src/clock.ts); the system clock when absent. */
  clock?: Clock
  heartbeatMs?: number
  staleMs?: number
  /** How soon a failed heartbeat is tried again (HEARTBEAT_RETRY_MS). */
  retryMs?: number
  log?: Logger
}

/** The registries of this process by node id, for `mayClaim`. */
const byId = new Map<string, NodeRegistry>()

/**
 * Whether `holder` may claim work now: false while its node's heartbeat has not landed recently (never
 * since the node started, or not for half the stale bound), since other nodes would judge it dead and
 * hand its leases out while it works. Holders of no node of this process (tools, tests) may.
 * Every claim of a leased table asks it first.
 */
export function mayClaim(holder: string): boolean {
  return byId.get(nodeOfHolder(holder))?.claimable() ?? true
}

/** The lock file of node `id` on a file-backed SQLite store (null: none, PostgreSQL or in memory). */
function lockFile(store: Store, id: string): string | null {
  // dialect: node lock files exist only beside a file-backed SQLite store
  return store.file === null ? null : `${store.file}-node-${id}.lock`
}

/** Takes the exclusive lock of `path` (created when missing); null when another connection holds it. */
function tryLock(path: string, create: boolean): Database | null {
  let db: Database
  try {
    db = new Database(path, { create })
  } catch {
    return null
  }
  try {
    db.run('PRAGMA busy_timeout = 0')
    db.run('PRAGMA locking_mode = EXCLUSIVE')
    db.run('BEGIN EXCLUSIVE')
    return db
  } catch {
    db.close()
    return null
  }
}

/** True when node `id`'s lock file exists and nobody holds its lock: the node's process is gone. */
function lockAbandoned(store: Store, id: string): boolean {
  const path = lockFile(store, id)
  if (!path || !existsSync(path)) return false
  const db = tryLock(path, false)
  if (!db) return false
  db.close()
  return true
}

function removeLockFile(store: Store, id: string): void {
  const path = lockFile(store, id)
  if (!path) return
  try { unlinkSync(path) } catch {}
}

/** The node id a holder id names (the part before the first colon). */
export function nodeOfHolder(holder: string): string {
  const i = holder.indexOf(':')
  return i < 0 ? holder : holder.slice(0, i)
}

/** This process's entry in `nodes` on one store, and the `Holders` that judge leases by it. */
export class NodeRegistry implements Holders {
  readonly id = `n${randomBytes(9).toString('base64url')}`
  readonly hostname: string
  readonly pid: number
  private readonly clock: Clock
  private readonly heartbeatMs: number
  private readonly staleMs: number
  private readonly retryMs: number
  private timer: Timer | null = null
  private users = 0
  private starting: Promise<void> | null = null
  /** When the last heartbeat landed (this node's clock); null: none yet. */
  private landedAt: number | null = null
  /** This node's lock (file-backed SQLite), held from its first heartbeat to its stop. */
  private lock: Database | null = null
  private tables = new Set<LeasedTable>()
  private log: Logger | null
  /** Live nodes at the last beat (this one included); 1 before the first. */
  private live = 1
  private liveListeners = new Set<(n: number) => void>()

  constructor(private store: Store, opts: NodeOptions = {}) {
    this.hostname = opts.hostname ?? osHostname()
    this.pid = opts.pid ?? process.pid
    this.clock = opts.clock ?? systemClock
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS
    this.staleMs = opts.staleMs ?? NODE_STALE_MS
    this.retryMs = opts.retryMs ?? HEARTBEAT_RETRY_MS
    this.log = opts.log ?? null
  }

  /**
   * Whether this node's workers may claim: its last heartbeat landed less than half the stale bound ago.
   * Before that bound other nodes still see it alive, so the work it claims is its own.
   */
  claimable(): boolean {
    return this.landedAt !== null && this.clock.now() - this.landedAt < this.staleMs / 2
  }

  /** The logger of this node's warnings (the composition root's, which names the node). */
  logTo(log: Logger): void {
    this.log = log
  }

  /** A new holder id on this node, one per worker. */
  newId(): string {
    return `${this.id}:${randomBytes(4).toString('hex')}`
  }

  /** Holders among `ids` whose node is stale or gone (this node is never judged). */
  async dead(ids: string[]): Promise<string[]> {
    const nodeIds = [...new Set(ids.map(nodeOfHolder))].filter((n) => n !== this.id)
    if (!nodeIds.length) return []
    const { nodes } = this.store.t
    const rows = await this.store.db.select({ id: nodes.id, heartbeatAt: nodes.heartbeatAt, hostname: nodes.hostname, pid: nodes.pid }).from(nodes).where(inArray(nodes.id, nodeIds))
    const now = this.clock.now()
    const since = now - this.staleMs
    const live = new Set(rows.filter((r) => r.heartbeatAt.getTime() > since && !lockAbandoned(this.store, r.id) && !this.goneOnThisHost(r, now)).map((r) => r.id))
    live.add(this.id)
    return ids.filter((id) => !live.has(nodeOfHolder(id)))
  }

  /**
   * A node of this host (same hostname) whose process no longer exists and that missed its last heartbeat
   * is dead now, not only once its heartbeat is stale (20 s): a server restarted after a crash on
   * PostgreSQL resumes the previous process's claimed mail within a heartbeat or two. The missed heartbeat
   * keeps a live node of another machine with the same hostname (whose pid means nothing here) from being
   * judged by this host's processes while it beats.
   */
  private goneOnThisHost(r: { hostname: string; pid: number; heartbeatAt: Date }, now: number): boolean {
    if (r.hostname !== this.hostname || r.pid === this.pid || now - r.heartbeatAt.getTime() <= this.heartbeatMs + 1000) return false
    try {
      process.kill(r.pid, 0)
      return false
    } catch (err) {
      return (err as { code?: string }).code === 'ESRCH'
    }
  }

  /**
   * Inserts or renews this node's row (a node judged dead while paused comes back on its next beat), then
   * counts the live nodes (`liveNodes`).
   */
  async beat(): Promise<void> {
    const { nodes } = this.store.t
    const now = this.clock.date()
    const file = lockFile(this.store, this.id)
    if (file && !this.lock) this.lock = tryLock(file, true)
    await this.store.tx((db) => db.insert(nodes).values({ id: this.id, hostname: this.hostname, pid: this.pid, startedAt: now, heartbeatAt: now })
      .onConflictDoUpdate({ target: nodes.id, set: { heartbeatAt: now } }))
    this.landedAt = now.getTime()
    byId.set(this.id, this)
    const since = new Date(now.getTime() - this.staleMs)
    const [row] = await this.store.db.select({ n: count() }).from(nodes).where(gt(nodes.heartbeatAt, since))
    this.setLive(Math.max(1, Number(row?.n ?? 1)))
  }

  /**
   * How many nodes (processes with workers) beat at this node's last heartbeat, this one included. What
   * one destination may take is divided by it (mail/outbound/throttle.ts), so N nodes together open no
   * more connections to one host than one node would. It is read from the store, not Redis: a Redis
   * outage changes nothing; if the store cannot be reached the last count stays.
   */
  liveNodes(): number {
    return this.live
  }

  /** Calls `fn` with the live-node count now and whenever it changes; returns the function that stops it. */
  onLiveNodes(fn: (n: number) => void): () => void {
    this.liveListeners.add(fn)
    fn(this.live)
    return () => { this.liveListeners.delete(fn) }
  }

  private setLive(n: number) {
    if (n === this.live) return
    this.live = n
    for (const fn of this.liveListeners) fn(n)
  }

  /**
   * Hands back the leases of dead nodes in every table this node's workers use, then deletes the rows
   * of stale nodes (their leases are released; a node that was only paused inserts its row again at its
   * next beat). Returns how many leases it released.
   */
  async sweep(): Promise<number> {
    let n = 0
    for (const t of this.tables) n += await releaseDead(this.store, t, this, this.clock.date())
    const { nodes } = this.store.t
    const since = new Date(this.clock.now() - this.staleMs)
    const gone = await this.store.tx((db) => db.delete(nodes).where(lt(nodes.heartbeatAt, since)).returning({ id: nodes.id }))
    // SQLite: the rows of nodes whose lock is free (their process is gone) go too, with their lock files.
    if (lockFile(this.store, this.id)) {
      const rows = await this.store.db.select({ id: nodes.id }).from(nodes)
      const abandoned = rows.map((r) => r.id).filter((id) => id !== this.id && lockAbandoned(this.store, id))
      if (abandoned.length) await this.store.tx((db) => db.delete(nodes).where(inArray(nodes.id, abandoned)))
      for (const id of [...gone.map((r) => r.id), ...abandoned]) if (id !== this.id && lockAbandoned(this.store, id)) removeLockFile(this.store, id)
    }
    return n
  }

  /**
   * A worker starts using `t`: the first one registers this node and starts the heartbeat. Hands back
   * the leases in `t` of dead nodes now (at `leaseNow`, the worker's clock) and returns how many.
   * When the first heartbeat fails it is retried every `retryMs` until it lands (the worker claims
   * nothing meanwhile, `mayClaim`), and join rejects with the failure.
   */
  async join(t: LeasedTable, leaseNow?: Date): Promise<number> {
    this.users++
    this.tables.add(t)
    byId.set(this.id, this)
    if (this.landedAt === null) {
      this.starting ??= this.beat().finally(() => { this.starting = null })
      try {
        await this.starting
      } finally {
        this.schedule()
      }
    } else this.schedule()
    return releaseDead(this.store, t, this, leaseNow ?? this.clock.date())
  }

  /** Starts the heartbeat unless it runs: the next beat in `heartbeatMs`, or `retryMs` while none lands. */
  private schedule() {
    if (this.timer || !this.users) return
    const ok = this.landedAt !== null && this.claimable()
    this.timer = setTimeout(() => this.tick(), ok ? this.heartbeatMs : Math.min(this.retryMs, this.heartbeatMs))
    this.timer.unref?.()
  }

  /** A worker stopped: when it was the last, the heartbeat stops and the row is deleted (a clean stop). */
  async leave(): Promise<void> {
    this.users = Math.max(0, this.users - 1)
    if (this.users) return
    await this.stop()
  }

  /** Stops the heartbeat and deletes this node's row. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.users = 0
    this.tables.clear()
    this.landedAt = null
    byId.delete(this.id)
    const { nodes } = this.store.t
    try {
      await this.store.tx((db) => db.delete(nodes).where(eq(nodes.id, this.id)))
    } finally {
      if (this.lock) {
        this.lock.close()
        this.lock = null
        removeLockFile(this.store, this.id)
      }
    }
  }

  private tick() {
    this.timer = null
    if (!this.users) return
    let failed = false
    this.beat().then(() => this.sweep(), (err) => {
      failed = true
      throw err
    }).then((n) => {
      if (n) this.log?.info('released the leases of a dead node', { leases: n })
    }, (err) => {
      if (failed) this.log?.warn(this.claimable() ? 'node heartbeat failed; retrying' : 'node heartbeat failed; claiming nothing until it lands', errorFields(err))
      else this.log?.warn('releasing dead nodes\' leases failed', errorFields(err))
    }).finally(() => this.schedule())
  }
}
