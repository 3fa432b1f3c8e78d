/**
 * The nodes table: which processes are alive, for lease.ts's holders. Each process that runs workers
 * (a job Worker, an outbound pipeline) has one `NodeRegistry` per store: a random node id, a row in
 * `nodes` inserted when its first worker starts, a heartbeat every HEARTBEAT_MS, and the row deleted
 * when its last worker stops. A holder id is `<node id>:<suffix>` (one suffix per worker), and a holder
 * is gone when its node's heartbeat is older than NODE_STALE_MS or its row is gone: liveness is read
 * from the shared store, so it holds across hosts and containers (hostname and pid, kept in the row for
 * operators, prove nothing: two containers may share both).
 *
 * Dead nodes are looked for when a worker starts and then at every heartbeat (a sweep per node every
 * few seconds), never per claim: the claim and delivery hot paths are unchanged.
 */
import { count, eq, gt, inArray, lt } from 'drizzle-orm'
import { randomBytes } from 'node:crypto'
import { hostname as osHostname } from 'node:os'
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

export interface NodeOptions {
  hostname?: string
  pid?: number
  /** The clock of heartbeats and staleness (tests drive it). */
  now?: () => Date
  heartbeatMs?: number
  staleMs?: number
  log?: Logger
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
  private readonly now: () => Date
  private readonly heartbeatMs: number
  private readonly staleMs: number
  private timer: Timer | null = null
  private users = 0
  private starting: Promise<void> | null = null
  private tables = new Set<LeasedTable>()
  private log: Logger | null
  /** Live nodes at the last beat (this one included); 1 before the first. */
  private live = 1
  private liveListeners = new Set<(n: number) => void>()

  constructor(private store: Store, opts: NodeOptions = {}) {
    this.hostname = opts.hostname ?? osHostname()
    this.pid = opts.pid ?? process.pid
    this.now = opts.now ?? (() => new Date())
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS
    this.staleMs = opts.staleMs ?? NODE_STALE_MS
    this.log = opts.log ?? null
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
    const rows = await this.store.db.select({ id: nodes.id, heartbeatAt: nodes.heartbeatAt }).from(nodes).where(inArray(nodes.id, nodeIds))
    const since = this.now().getTime() - this.staleMs
    const live = new Set(rows.filter((r) => r.heartbeatAt.getTime() > since).map((r) => r.id))
    live.add(this.id)
    return ids.filter((id) => !live.has(nodeOfHolder(id)))
  }

  /**
   * Inserts or renews this node's row (a node judged dead while paused comes back on its next beat), then
   * counts the live nodes (`liveNodes`).
   */
  async beat(): Promise<void> {
    const { nodes } = this.store.t
    const now = this.now()
    await this.store.tx((db) => db.insert(nodes).values({ id: this.id, hostname: this.hostname, pid: this.pid, startedAt: now, heartbeatAt: now })
      .onConflictDoUpdate({ target: nodes.id, set: { heartbeatAt: now } }))
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
    for (const t of this.tables) n += await releaseDead(this.store, t, this)
    const { nodes } = this.store.t
    const since = new Date(this.now().getTime() - this.staleMs)
    await this.store.tx((db) => db.delete(nodes).where(lt(nodes.heartbeatAt, since)))
    return n
  }

  /**
   * A worker starts using `t`: the first one registers this node and starts the heartbeat. Hands back
   * the leases in `t` of dead nodes now (at `leaseNow`, the worker's clock) and returns how many.
   */
  async join(t: LeasedTable, leaseNow?: Date): Promise<number> {
    this.users++
    this.tables.add(t)
    if (!this.timer) {
      this.starting ??= this.beat()
      await this.starting
      this.starting = null
      this.timer ??= setInterval(() => this.tick(), this.heartbeatMs)
      this.timer.unref?.()
    }
    return releaseDead(this.store, t, this, leaseNow)
  }

  /** A worker stopped: when it was the last, the heartbeat stops and the row is deleted (a clean stop). */
  async leave(): Promise<void> {
    this.users = Math.max(0, this.users - 1)
    if (this.users) return
    await this.stop()
  }

  /** Stops the heartbeat and deletes this node's row. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.tables.clear()
    const { nodes } = this.store.t
    await this.store.tx((db) => db.delete(nodes).where(eq(nodes.id, this.id)))
  }

  private tick() {
    this.beat().then(() => this.sweep()).then((n) => {
      if (n) this.log?.info('released the leases of a dead node', { leases: n })
    }, (err) => this.log?.warn('node heartbeat failed', errorFields(err)))
  }
}

const registries = new WeakMap<Store, NodeRegistry>()

/** This process's registry on `store` (one per store, created on first use). */
export function nodeOf(store: Store, log?: Logger): NodeRegistry {
  let r = registries.get(store)
  if (!r) {
    r = new NodeRegistry(store, { log })
    registries.set(store, r)
  }
  return r
}
