/**
 * The events' outbox: how committed events reach their consumers (consumers.ts), durably and at least once.
 *
 * - Writing: `appendEvents` (stream.ts) records the new events' ids in the transaction that appends them
 *   (`recordOutbox`): one `event_outbox` row per transaction and project (up to 500 ids a row), written
 *   just before COMMIT (Store.txState). So on the track writer thread a group-committed batch of tracks
 *   costs one more row, not one per track, and a crash after the commit loses nothing. A project where
 *   no consumer could react (interest.ts) gets no row: its events are marked not owed.
 * - Waking: `notifyEvents` (after the commit) wakes this process's drainer soon and, with Redis, the
 *   other nodes'; without a wake-up a drainer polls every POLL_MS.
 * - Draining (`Outbox`, started by `serve` with the worker role on every node): rows are claimed one
 *   project at a time, oldest first, under a lease (repo.claimOutbox: one holder per project, so a
 *   project's batches are delivered in order), their events loaded and handed to every consumer at
 *   once, oldest first. A row delivered to every consumer is deleted by the drainer's next claim, in its
 *   transaction (or within SETTLE_MS when no claim comes): one write transaction per batch, not two. When
 *   a consumer threw, at once and in one transaction, the row is deleted and that consumer gets a row of
 *   its own (consumer = its name) due after a backoff, so it is retried alone and the others go on. A
 *   holder that dies leaves its lease to expire or to be released by the nodes table (jobs/nodes.ts).
 * - `settleEvents()` drains in this process, now, the stores whose events it was told about (tests).
 */
import type { Db, Store } from '../../db/client'
import { ctxFor, type Deps } from '../../deps'
import { leaseEnd, renew, renewAfterMs, Wakeups, type LeasedTable } from '../../jobs/lease'
import { mayClaim } from '../../jobs/nodes'
import { errorFields } from '../../log'
import { eventConsumers, type EventConsumer } from './consumers'
import { projectHasConsumers } from './interest'
import * as repo from './repo'
import type { EventRow } from './stream'

/** Event ids per outbox row. */
const ROW_IDS = 500
/** Outbox rows per claim (a batch: up to ROW_IDS events each, usually far fewer). */
const CLAIM_ROWS = 60
const LEASE_MS = 60_000
/** A consumer that takes longer than this on one batch has failed it (it is retried). */
const HANDLE_TIMEOUT_MS = 30_000
export const POLL_MS = 500
/**
 * Wake-ups closer together than this cost one claim: under a steady stream of commits (the track writer
 * commits every few ms) a claim takes what a few commits wrote, not one commit's row each time.
 */
const WAKE_COALESCE_MS = 60
/**
 * A delivered batch's rows are deleted by the next claim, or after this long when none comes: longer than
 * WAKE_COALESCE_MS, so that the claim a delivery's wake-up brings takes them when more rows came meanwhile.
 */
const SETTLE_MS = 100
/** After this many failed attempts of one consumer on one row, the row is kept for operators and no more tried. */
export const MAX_ATTEMPTS = 20
/** Delay after failed attempt `n`: 1 s doubling, capped at 10 minutes. */
export const outboxBackoffMs = (n: number) => Math.min(600_000, 1000 * 2 ** (n - 1))

/** Wakes drainers: this process's at once, with Redis every node's (channel mailctl:events). */
export const outboxWakeups = new Wakeups('events')

// ---- writing ----------------------------------------------------------------------------------------

const OUTBOX_KEY = {}

/**
 * Events whose transaction wrote no outbox row: no consumer could react to them (interest.ts).
 * `notifyEvents` does not announce them (no wake-up, nothing kept for a drainer). A mark on row objects, not state.
 */
const notOwed = new WeakSet<EventRow>()

/** Whether `row` went to the outbox (false: its project had no consumer when it was appended). */
export function owedToConsumers(row: EventRow): boolean {
  return !notOwed.has(row)
}

/** Marks rows appended with no outbox row (the track writer's main-thread copies of the thread's rows). */
export function markNotOwed(rows: readonly EventRow[]): void {
  for (const r of rows) notOwed.add(r)
}

/**
 * Records, in `db`'s transaction, that the events `rows` of `projectId` are owed to the consumers. The rows
 * are written just before the transaction commits, one per project (per ROW_IDS ids), for each project where
 * some consumer may react (interest.ts); the events of the others are marked not owed. Ids of events a
 * savepoint rolled back stay in the row: delivery skips ids it cannot find. The rows are due at `at` (the
 * clock's time) of the transaction's first call.
 */
export function recordOutbox(store: Store, db: Db, projectId: string, rows: readonly EventRow[], at: Date): void {
  if (!rows.length) return
  const pending = store.txState(db, OUTBOX_KEY, () => new Map<string, { rows: EventRow[]; owed: Promise<boolean> }>(), async (byProject) => {
    const out: repo.NewOutbox[] = []
    for (const [p, { rows: all, owed }] of byProject) {
      if (!(await owed)) {
        markNotOwed(all)
        continue
      }
      for (let i = 0; i < all.length; i += ROW_IDS) out.push({ id: Bun.randomUUIDv7(), projectId: p, eventIds: all.slice(i, i + ROW_IDS).map((r) => r.id) })
    }
    await repo.insertOutbox(store, db, out, at)
  })
  const entry = pending.get(projectId)
  if (entry) {
    for (const r of rows) entry.rows.push(r)
    return
  }
  // Asked now, at the project's first events in the transaction: on PostgreSQL the question goes out with
  // the events' insert when the caller records before awaiting it (appendEvents), one round trip for both.
  // Awaited when the transaction is flushed; if it fails first, the transaction fails with it.
  const owed = projectHasConsumers(store, db, projectId)
  owed.catch(() => {})
  pending.set(projectId, { rows: rows.slice(), owed })
}

// ---- waking -----------------------------------------------------------------------------------------

/** Stores whose events this process was told about since they were last settled (settleEvents). */
const told = new Map<Store, Deps>()
let wakeScheduled = false

/**
 * Events were committed (called by notifyEvents): wakes this process's drainer and, through Redis, the
 * other nodes' (one wake-up and one publish per turn of the event loop, however many commits it had).
 */
export function wakeOutbox(deps: Deps, rows: readonly EventRow[] = []): void {
  told.set(deps.store, deps)
  deps.runtime.outbox.recent.add(rows)
  // Once per turn of the event loop, however many commits it had (under load, one per track otherwise):
  // the drainer coalesces wake-ups over WAKE_COALESCE_MS anyway.
  if (wakeScheduled) return
  wakeScheduled = true
  setImmediate(() => {
    wakeScheduled = false
    outboxWakeups.notify(deps.redis ? { redis: deps.redis, log: deps.log } : undefined)
  })
}

// ---- draining ---------------------------------------------------------------------------------------

/** Events kept for the drainer of this process, at most (about 10 MB). */
const RECENT_MAX = 20_000

/**
 * The events this process committed and announced (notifyEvents), kept by id while a drainer of this
 * process runs on their store (`open` to `close`), so that it hands them to the consumers without reading them back: on
 * SQLite that read was the drainer's largest cost on the event loop. Only an accelerator: an event is
 * taken once (a consumer's retry reads it from the database), and what is not here (another node's, one
 * announced before a restart, one pushed out when the drainer lags) is read from the database as before.
 * One consequence: an event deleted in the few milliseconds between its commit and its delivery may
 * still reach the consumers once (it did happen).
 */
export class RecentEvents {
  private byId = new Map<string, EventRow>()
  /** Drainers of this process running on the store: events are kept only while one runs. */
  private drainers = 0

  /** A drainer started: keep the events announced from now on. */
  open(): void {
    this.drainers++
  }

  /** A drainer stopped: with none left, keep nothing. */
  close(): void {
    this.drainers = Math.max(0, this.drainers - 1)
    if (!this.drainers) this.byId.clear()
  }

  add(rows: readonly EventRow[]): void {
    if (!this.drainers) return
    for (const r of rows) this.byId.set(r.id, r)
    // Oldest first out (a Map iterates in insertion order).
    if (this.byId.size > RECENT_MAX) {
      for (const id of this.byId.keys()) {
        this.byId.delete(id)
        if (this.byId.size <= RECENT_MAX) break
      }
    }
  }

  /** Takes the events of `projectId` among `ids`; returns them and the ids that were not here. */
  take(projectId: string, ids: readonly string[]): { found: EventRow[]; missing: string[] } {
    const found: EventRow[] = []
    const missing: string[] = []
    for (const id of ids) {
      const e = this.byId.get(id)
      if (e && e.projectId === projectId) {
        this.byId.delete(id)
        found.push(e)
      } else {
        missing.push(id)
      }
    }
    return { found, missing }
  }
}

/** A claim (and settlement) for another connection of this process to carry: see OutboxLocal. */
export interface RoutedClaim {
  holder: string
  now: Date
  until: Date
  /** 0: the settlement only. */
  maxRows: number
  candidates: string[]
  settle: string[]
}

/** Carries a claim in a transaction of its own connection; null when it cannot now (the drainer claims itself). */
export type OutboxRoute = (claim: RoutedClaim) => Promise<repo.OutboxRow[]> | null

/**
 * The outbox's part of this process's runtime on one store (Deps.runtime.outbox, built by the composition
 * root): the recent events its drainers take first, and `route`, the other connection of this process
 * that carries the drainers' claims and settlements when there is one: SQLite's track writer thread
 * (writer.ts) puts them in its next commit while it runs. A commit on one connection empties the page
 * cache of every other connection of the file, so the drainer's own transactions made the thread read the
 * pages of each track again through the OS after each claim (bench/track.ts with a consumed project:
 * about 6 µs more system time per track on the thread, 200 claims in a 12 s run).
 */
export class OutboxLocal {
  readonly recent = new RecentEvents()
  constructor(readonly route: OutboxRoute | null) {}
}

/** The leases of `event_outbox`: a released row is due now, for any drainer. */
export function outboxLeases(store: Store): LeasedTable<Store['t']['eventOutbox']> {
  const o = store.t.eventOutbox
  return {
    table: o, key: o.id, lockedBy: o.lockedBy, lockedUntil: o.lockedUntil,
    renewed: (until) => ({ lockedUntil: until }),
    released: (now) => ({ lockedBy: null, lockedUntil: null, dueAt: now }),
  }
}

export interface OutboxOptions {
  /** Projects delivered at once (default 4). */
  concurrency?: number
  pollMs?: number
  /** The consumers (default: the registered ones, eventConsumers()). */
  consumers?: () => readonly EventConsumer[]
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: Timer | undefined
  const t = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms) })
  return Promise.race([p, t]).finally(() => clearTimeout(timer))
}

/**
 * A drainer of one store's outbox. `start()` runs it until `stop()` (serve, on every node with the
 * worker role); `drain()` delivers everything due now and returns (settleEvents, tests).
 */
export class Outbox {
  readonly holder: string
  private readonly consumers: () => readonly EventConsumer[]
  private stopped = true
  private joined = false
  private claiming = false
  private wanted = false
  private wakeTimer: Timer | null = null
  private poll: Timer | null = null
  private offs: Array<() => void> = []
  /** Projects being delivered by this drainer (never claimed twice at once). */
  private active = new Set<string>()
  /**
   * Rows this drainer delivered to every consumer and has not deleted yet: its next claim deletes them in
   * its transaction, or `settle()` within SETTLE_MS when no claim comes (they stay leased meanwhile, so no
   * one else claims them; a crash before the deletion only delivers them again).
   */
  private delivered: string[] = []
  private settleTimer: Timer | null = null
  private inflight = new Set<Promise<void>>()
  /**
   * Events handed to consumers, batches delivered, consumer failures, claims and settlements another
   * connection carried (OutboxLocal.route) (benchmarks, logs, tests).
   */
  readonly stats = { events: 0, batches: 0, failures: 0, routed: 0 }

  constructor(private readonly deps: Deps, private readonly opts: OutboxOptions = {}) {
    this.consumers = opts.consumers ?? eventConsumers
    this.holder = deps.runtime.node.newId()
  }

  async start(): Promise<void> {
    this.stopped = false
    const node = this.deps.runtime.node
    this.joined = true
    try {
      const released = await node.join(outboxLeases(this.deps.store), this.deps.clock.date())
      if (released) this.deps.log.info('released the outbox leases of a dead node', { rows: released })
    } catch (err) {
      this.deps.log.warn('releasing dead outbox leases failed', errorFields(err))
    }
    const { recent } = this.deps.runtime.outbox
    recent.open()
    this.offs.push(() => recent.close())
    this.offs.push(outboxWakeups.on(() => this.wake()))
    if (this.deps.redis) this.offs.push(await outboxWakeups.subscribe(this.deps.redis, this.deps.log, () => this.wake()))
    this.poll = setInterval(() => this.tick(), this.opts.pollMs ?? POLL_MS)
    this.tick()
  }

  async stop(): Promise<void> {
    this.stopped = true
    for (const off of this.offs) off()
    this.offs = []
    if (this.poll) clearInterval(this.poll)
    if (this.wakeTimer) clearTimeout(this.wakeTimer)
    this.poll = this.wakeTimer = null
    while (this.inflight.size) await Promise.allSettled([...this.inflight])
    await this.settle().catch((err) => this.deps.log.warn('outbox settlement failed', errorFields(err)))
    if (this.joined) {
      this.joined = false
      await this.deps.runtime.node.leave().catch((err) => this.deps.log.warn('leaving the nodes table failed', errorFields(err)))
    }
  }

  /** A commit: claim soon (wake-ups within WAKE_COALESCE_MS share one claim). */
  private wake() {
    if (this.stopped || this.wakeTimer) return
    this.wakeTimer = setTimeout(() => { this.wakeTimer = null; this.tick() }, WAKE_COALESCE_MS)
  }

  /** Claims while slots are free and rows come; each claimed batch is delivered without waiting for it. */
  private tick() {
    if (this.stopped) return
    if (this.claiming) { this.wanted = true; return }
    this.claiming = true
    this.wanted = false
    const run = async () => {
      try {
        while (!this.stopped && this.active.size < (this.opts.concurrency ?? 4)) {
          const rows = await this.claim()
          if (!rows.length) break
          // A full claim means a backlog: claim again at once when it is delivered; else as a wake-up does.
          const backlog = rows.length >= CLAIM_ROWS
          const p = this.deliver(rows).catch((err) => this.deps.log.error('event delivery failed', errorFields(err)))
            .finally(() => { this.inflight.delete(p); if (backlog) this.tick(); else this.wake() })
          this.inflight.add(p)
        }
      } catch (err) {
        this.deps.log.error('outbox claim failed', errorFields(err))
      } finally {
        this.claiming = false
        if (this.wanted) queueMicrotask(() => this.tick())
      }
    }
    void run()
  }

  private async claim(): Promise<repo.OutboxRow[]> {
    // Nothing while this node's heartbeat has not landed (jobs/nodes.ts): its settlements wait too.
    if (!mayClaim(this.holder)) return []
    const { store } = this.deps
    const now = this.deps.clock.date()
    const settle = this.takeDelivered()
    try {
      // Read first, outside any transaction: an empty outbox (most wake-ups and polls) costs no write lock.
      const candidates = await repo.outboxCandidates(store, now, this.active)
      if (!candidates.length && !settle.length) return []
      const until = leaseEnd(now, LEASE_MS)
      const routed = this.deps.runtime.outbox.route?.({ holder: this.holder, now, until, maxRows: CLAIM_ROWS, candidates, settle })
      if (routed) this.stats.routed++
      return await (routed ?? repo.claimAmong(store, this.holder, now, until, CLAIM_ROWS, candidates, settle))
    } catch (err) {
      // Not deleted: they are settled with the next claim (they stay leased to this drainer meanwhile).
      this.delivered.unshift(...settle)
      throw err
    }
  }

  private takeDelivered(): string[] {
    if (this.settleTimer) { clearTimeout(this.settleTimer); this.settleTimer = null }
    return this.delivered.splice(0)
  }

  /** Deletes the delivered rows no claim has taken (the timer, stop, the end of drain). */
  private async settle(): Promise<void> {
    const ids = this.takeDelivered()
    if (!ids.length) return
    try {
      const routed = this.deps.runtime.outbox.route?.({ holder: this.holder, now: this.deps.clock.date(), until: this.deps.clock.date(), maxRows: 0, candidates: [], settle: ids })
      if (routed) this.stats.routed++
      await (routed ?? repo.settleOutbox(this.deps.store, this.holder, ids))
    } catch (err) {
      this.delivered.unshift(...ids)
      throw err
    }
  }

  /**
   * Delivers everything due now, batch after batch, and waits for rows other holders of this process or
   * others lease meanwhile (up to `timeoutMs`). Returns the number of batches this call delivered.
   */
  async drain(timeoutMs = 30_000): Promise<number> {
    const node = this.deps.runtime.node
    await node.join(outboxLeases(this.deps.store), this.deps.clock.date())
    const end = Date.now() + timeoutMs
    let n = 0
    try {
      for (;;) {
        const rows = await this.claim()
        if (rows.length) { await this.deliver(rows); n++; continue }
        await this.settle()
        if (!(await repo.outboxDue(this.deps.store, this.deps.clock.date()))) return n
        if (Date.now() > end) throw new Error('outbox: rows still leased by another holder after the settle timeout')
        await Bun.sleep(2)
      }
    } finally {
      await this.settle().catch((err) => this.deps.log.warn('outbox settlement failed', errorFields(err)))
      await node.leave()
    }
  }

  /** Hands the claimed rows (one project's) to their consumers, then records the outcome. */
  private async deliver(rows: repo.OutboxRow[]): Promise<void> {
    const { store, log } = this.deps
    const projectId = rows[0].projectId
    this.active.add(projectId)
    const ids = rows.map((r) => r.id)
    const heartbeat = setInterval(() => {
      renew(store, outboxLeases(store), this.holder, ids, LEASE_MS, this.deps.clock.date()).catch((err) => log.warn('outbox lease renewal failed', errorFields(err)))
    }, renewAfterMs(LEASE_MS))
    heartbeat.unref?.()
    try {
      const wanted = [...new Set(rows.flatMap((r) => r.eventIds))]
      const recent = this.deps.runtime.outbox.recent.take(projectId, wanted)
      const events = recent.missing.length
        ? repo.byTime([...recent.found, ...await repo.eventsByIds(store, projectId, recent.missing)])
        : repo.byTime(recent.found)
      const consumers = this.consumers()
      const known = new Set(consumers.map((c) => c.name))
      // What each consumer is owed: the events of the rows for every consumer and of its own rows (when
      // every row is for every consumer, as without failures, that is all the events, for each).
      const forAll = rows.every((r) => r.consumer === null)
      const owed = new Map<string, Set<string>>()
      if (!forAll) {
        const byId = new Map(events.map((e) => [e.id, e]))
        for (const r of rows) {
          for (const c of r.consumer === null ? consumers : consumers.filter((k) => k.name === r.consumer)) {
            let set = owed.get(c.name)
            if (!set) { set = new Set(); owed.set(c.name, set) }
            for (const id of r.eventIds) if (byId.has(id)) set.add(id)
          }
        }
      }
      const ctx = ctxFor(this.deps, projectId, { kind: 'job', name: 'events.outbox' })
      const errors = new Map<string, string>()
      await Promise.all(consumers.map(async (c) => {
        const want = forAll ? null : owed.get(c.name)
        const batch: EventRow[] = want ? events.filter((e) => want.has(e.id)) : forAll ? events.slice() : []
        if (!batch.length) return
        try {
          await withTimeout(c.handle({ ...ctx, now: this.deps.clock.date() }, batch), HANDLE_TIMEOUT_MS, `event consumer ${c.name}`)
          this.stats.events += batch.length
        } catch (err) {
          this.stats.failures++
          errors.set(c.name, err instanceof Error ? err.message : String(err))
          log.warn('event consumer failed; retried later', { consumer: c.name, projectId, events: batch.length, ...errorFields(err) })
        }
      }))
      if (!errors.size && rows.every((r) => r.consumer === null || known.has(r.consumer))) {
        // Every consumer took its events: the rows are deleted by this drainer's next claim (or settle()).
        for (const r of rows) this.delivered.push(r.id)
        this.settleTimer ??= setTimeout(() => {
          this.settleTimer = null
          this.settle().catch((err) => log.warn('outbox settlement failed', errorFields(err)))
        }, SETTLE_MS)
        this.stats.batches++
        return
      }
      const outcomes: repo.OutboxOutcome[] = rows.map((row) => {
        if (row.consumer === null) return { row, failed: [...errors].map(([consumer, error]) => ({ consumer, error })) }
        if (!known.has(row.consumer)) return { row, failed: [{ consumer: row.consumer, error: `no event consumer named ${row.consumer} on this node` }] }
        const error = errors.get(row.consumer)
        return { row, failed: error === undefined ? [] : [{ consumer: row.consumer, error }] }
      })
      const { givenUp } = await repo.finishOutbox(store, this.holder, outcomes, this.deps.clock.date(), outboxBackoffMs, MAX_ATTEMPTS)
      if (givenUp) log.error('event consumer gave up on events after repeated failures (rows kept in event_outbox with failed_at)', { projectId, rows: givenUp })
      this.stats.batches++
    } finally {
      clearInterval(heartbeat)
      this.active.delete(projectId)
    }
  }
}

/** The drainer `serve` runs on a node with the worker role. */
export async function startOutbox(deps: Deps, opts: OutboxOptions = {}): Promise<Outbox> {
  const outbox = new Outbox(deps, opts)
  await outbox.start()
  return outbox
}

/**
 * Delivers, in this process and now, every event committed so far on the stores this process was told
 * about (notifyEvents), and on `deps`' store when given: when it resolves, those events have reached
 * their consumers (or a consumer failed on them and its retry is due later).
 */
export async function drainOutboxes(deps?: Deps): Promise<void> {
  if (deps) told.set(deps.store, deps)
  for (let round = 0; told.size && round < 100; round++) {
    for (const [store, d] of [...told]) {
      told.delete(store)
      if (store.closed) continue
      await new Outbox(d).drain()
    }
  }
}
