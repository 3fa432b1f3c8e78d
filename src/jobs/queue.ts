import { AsyncResource } from 'node:async_hooks'
import { and, asc, count, eq, inArray, lte, min, or, sql } from 'drizzle-orm'
import type { Db, Store } from '../db/client'
import { skipLocked } from '../db/dialect'
import type { Deps } from '../deps'
import { errorFields } from '../log'
import { counter, histogram } from '../metrics'
import { storableCopy } from '../storable'
import { expiredLease, heldBy, leaseEnd, release, renew, renewAfterMs, Wakeups, type LeasedTable, type WakeupRemote } from './lease'
import { mayClaim, type NodeRegistry } from './nodes'

/**
 * The durable job queue (docs/architecture.md, The queues): rows in `jobs`, claimed atomically (PostgreSQL
 * FOR UPDATE SKIP LOCKED, SQLite the single writer), retried with exponential backoff, and leased
 * (lease.ts): a job whose worker died is claimed again once its lease expires, or at once when a worker
 * of this host starts and finds its process gone. Payloads carry ids only. Outbound mail has its own
 * queue (mail/outbound/queue-repo.ts says why) on the same leases.
 */

export type JobRow = typeof import('../db/schema').pgSchema.jobs.$inferSelect
type JobsTable = Store['t']['jobs']

export interface JobContext {
  deps: Deps
  job: JobRow
  /** Records progress (and extends the lease) for pollable jobs such as imports. */
  progress(processed: number, total?: number): Promise<void>
}

export interface JobDef<P = Record<string, unknown>> {
  name: string
  run(ctx: JobContext, payload: P): Promise<Record<string, unknown>> | Promise<void>
  maxAttempts?: number
  /** Delay before retry number `attempt` (1-based), in ms. Default: 2^attempt seconds, capped at 1 hour. */
  backoffMs?(attempt: number): number
  leaseMs?: number
  /** For recurring jobs: the next run is queued this long after each run ends. */
  everyMs?: number
}

export function defineJob<P = Record<string, unknown>>(def: JobDef<P>): JobDef<P> {
  return def
}

/** A job of any payload type (lists of jobs, the Worker). */
export type AnyJob = JobDef<never>

export interface EnqueueOptions {
  /**
   * Who publishes the wake-up to other nodes: the deps (`wake: deps`), whose Redis (REDIS_URL) carries it;
   * null or no Redis: only this process's workers wake at once, other nodes find the job at their next poll.
   */
  wake: WakeupRemote | null
  /** The clock's time (`deps.clock`): the job's creation time, and when it is due unless `runAt` says. */
  now: Date
  projectId?: string | null
  runAt?: Date
  /** At most one queued or running job per (name, uniqueKey); a duplicate enqueue returns null. */
  uniqueKey?: string | null
  maxAttempts?: number
  total?: number
}

/**
 * Wakes this process's workers when a job is queued and, with Redis (EnqueueOptions.wake), other nodes'
 * (without it they find the job at their next poll).
 */
export const jobWakeups = new Wakeups('jobs')

/** The leases of `jobs`: a released job is queued again, due now. */
export function jobLeases(store: Store): LeasedTable<JobsTable> {
  const { jobs } = store.t
  return {
    table: jobs, key: jobs.id, lockedBy: jobs.lockedBy, lockedUntil: jobs.lockedUntil,
    renewed: (until) => ({ lockedUntil: until }),
    released: (now) => ({ status: 'queued', runAt: now, lockedBy: null, lockedUntil: null, updatedAt: now }),
  }
}

/** Queues a job; pass `db` to queue inside the caller's transaction (it commits with the caller's rows). */
export async function enqueue(store: Store, name: string, payload: Record<string, unknown>, opts: EnqueueOptions, db?: Db): Promise<string | null> {
  const { jobs } = store.t
  const { now } = opts
  const id = Bun.randomUUIDv7()
  const insert = (d: Db) => d.insert(jobs).values({
    id, projectId: opts.projectId ?? null, name, uniqueKey: opts.uniqueKey ?? null, payload, status: 'queued',
    attempts: 0, maxAttempts: opts.maxAttempts ?? 5, runAt: opts.runAt ?? now, lockedUntil: null, lockedBy: null,
    lastError: null, total: opts.total ?? 0, processed: 0, result: null, createdAt: now, updatedAt: now, finishedAt: null,
  }).onConflictDoNothing().returning({ id: jobs.id })
  const rows = db ? await insert(db) : await store.tx(insert)
  // Once the job is visible to every claim: after the caller's transaction commits (at once without one).
  if (rows.length) store.afterCommit(db ?? store.db, () => jobWakeups.notify(opts.wake ?? undefined))
  return rows.length ? id : null
}

/** Jobs queued or running, and the creation time of the oldest of them (GET /metrics). */
export async function jobDepth(store: Store): Promise<{ depth: number; oldestAt: Date | null }> {
  const { jobs } = store.t
  const [row] = await store.db.select({ n: count(), oldest: min(jobs.createdAt) }).from(jobs).where(inArray(jobs.status, ['queued', 'running']))
  const v = row?.oldest as unknown
  const oldestAt = v === null || v === undefined ? null : v instanceof Date ? v : new Date(typeof v === 'number' ? v : String(v))
  return { depth: Number(row?.n ?? 0), oldestAt }
}

export async function getJob(store: Store, projectId: string, id: string, names?: string[]): Promise<JobRow | null> {
  const { jobs } = store.t
  const conds = [eq(jobs.id, id), eq(jobs.projectId, projectId)]
  if (names?.length) conds.push(inArray(jobs.name, names))
  const [row] = await store.db.select().from(jobs).where(and(...conds)).limit(1)
  return row ?? null
}

const jobRuns = () => counter('mailctl_job_runs_total', 'Job runs by kind and outcome (completed, retried, failed)', ['job', 'outcome'])
const jobSeconds = () => histogram('mailctl_job_duration_seconds', 'Job run time by kind', ['job'], [0.01, 0.05, 0.25, 1, 5, 30, 120, 600])

const defaultBackoff = (attempt: number) => Math.min(3600_000, 1000 * 2 ** attempt)

/**
 * Claims up to `limit` jobs of the given kinds for `workerId`: queued jobs that are due, and running
 * jobs whose lease has expired at `now`. Nothing while the holder's node has no recent heartbeat
 * (jobs/nodes.ts, mayClaim).
 */
export async function claim(store: Store, names: string[], workerId: string, limit: number, leaseMs: number, now: Date): Promise<JobRow[]> {
  if (!names.length || limit <= 0 || !mayClaim(workerId)) return []
  const { jobs } = store.t
  return store.tx(async (db) => {
    const due = db.select({ id: jobs.id }).from(jobs).where(and(
      inArray(jobs.name, names),
      or(
        and(eq(jobs.status, 'queued'), lte(jobs.runAt, now)),
        and(eq(jobs.status, 'running'), expiredLease(jobLeases(store), now)),
      ),
    )).orderBy(asc(jobs.runAt)).limit(limit)
    return db.update(jobs).set({
      status: 'running', lockedBy: workerId, lockedUntil: leaseEnd(now, leaseMs),
      attempts: sql`${jobs.attempts} + 1`, updatedAt: now,
    }).where(inArray(jobs.id, skipLocked(store, due))).returning()
    // Lost in a crash, a claim is only a due job claimed again (jobs run at least once).
  }, { durable: false })
}

export interface WorkerOptions {
  /** Jobs run at once (default 4). */
  concurrency?: number
  /** Poll interval when no wake-up comes (default 1 s). */
  pollMs?: number
}

/**
 * Runs jobs of the registered kinds until stopped. `drain()` runs everything due now (tests, CLI).
 * `stop()` claims nothing more, lets the jobs in flight finish, and hands back any lease still held.
 */
export class Worker {
  /** This worker's holder id (lease.ts): its node's id and a suffix. */
  readonly id: string
  /** This process's node on the store (jobs/nodes.ts), joined while the worker runs. */
  private readonly node: NodeRegistry
  private joined = false
  private defs = new Map<string, AnyJob>()
  private running = 0
  private timer: Timer | null = null
  private stopped = true
  /** A wake-up came while no slot was free: claim again once the current claim or jobs end. */
  private wanted = false
  private inflight = new Set<Promise<void>>()
  private unlisten: (() => void) | null = null
  private unsubscribe: (() => void) | null = null
  /** Jobs running now: id -> kind (the shutdown's warning names them). */
  private current = new Map<string, string>()
  /** Recurring jobs claimed or running now (each has its own slot: tickRecurring). */
  private recurringRunning = new Set<string>()
  constructor(private deps: Deps, defs: AnyJob[], private opts: WorkerOptions = {}) {
    for (const d of defs) this.defs.set(d.name, d)
    this.node = deps.runtime.node
    this.id = this.node.newId()
  }

  register(def: AnyJob) { this.defs.set(def.name, def) }

  /** Makes sure each recurring job has one queued row (safe on every node at every start). */
  async ensureRecurring() {
    for (const d of this.defs.values()) {
      if (d.everyMs) await enqueue(this.deps.store, d.name, {}, { wake: this.deps, now: this.deps.clock.date(), uniqueKey: d.name, maxAttempts: d.maxAttempts ?? 3 })
    }
  }

  async start() {
    this.stopped = false
    // Registers this node (heartbeat) and makes the jobs of a dead node due now, not at lease expiry.
    try {
      this.joined = true
      const released = await this.node.join(jobLeases(this.deps.store), this.deps.clock.date())
      if (released) this.deps.log.info('released the job leases of a dead node', { jobs: released })
    } catch (err) {
      this.deps.log.warn('releasing dead job leases failed', errorFields(err))
    }
    await this.ensureRecurring()
    // A wake-up is emitted where the job was queued, often inside that caller's transaction (a recurring
    // job re-queued as its run commits). The claim it starts must not join that transaction (store.tx
    // joins the transaction of its async context): on PostgreSQL it then ran on a finished transaction
    // and never resolved, holding the worker's slots. So wake-ups run in the context of start().
    const wake = AsyncResource.bind(() => this.tick())
    this.unlisten = jobWakeups.on(wake)
    // With Redis, a job queued on another node wakes this worker at once instead of at its next poll.
    if (this.deps.redis) this.unsubscribe = await jobWakeups.subscribe(this.deps.redis, this.deps.log, wake)
    this.timer = setInterval(() => { this.tick(); this.tickRecurring() }, this.opts.pollMs ?? 1000)
    this.tick()
    this.tickRecurring()
  }

  /**
   * Claims nothing more and waits for the jobs in flight, for at most `graceMs` when given (shutdown,
   * MAILCTL_SHUTDOWN_GRACE_SECONDS). Then every lease this worker still holds is handed back, due now:
   * a job still running past the grace is run again by another node (its later writes are refused, as
   * they name a holder that no longer holds the row).
   */
  async stop(graceMs?: number) {
    this.stopped = true
    this.unlisten?.()
    this.unlisten = null
    this.unsubscribe?.()
    this.unsubscribe = null
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    let timer: Timer | null = null
    const all = Promise.allSettled([...this.inflight]).then(() => true)
    const done = graceMs === undefined ? await all : await Promise.race([all, new Promise<false>((r) => { timer = setTimeout(() => r(false), graceMs) })])
    if (timer) clearTimeout(timer)
    if (!done) this.deps.log.warn('jobs still running at the end of the shutdown grace; their leases are handed back', { jobs: [...this.current.values()] })
    // Nothing runs any more: a lease still held (a job whose last write failed) is handed back now.
    try {
      const released = await release(this.deps.store, jobLeases(this.deps.store), this.id, undefined, this.deps.clock.date())
      if (released) this.deps.log.info('released job leases at stop', { jobs: released })
    } catch (err) {
      this.deps.log.warn('releasing job leases at stop failed', errorFields(err))
    }
    if (this.joined) {
      this.joined = false
      await this.node.leave().catch((err) => this.deps.log.warn('leaving the nodes table failed', errorFields(err)))
    }
  }

  private tick() {
    if (this.stopped) return
    const free = (this.opts.concurrency ?? 4) - this.running
    // No slot now (a claim or jobs in progress): claim again when they end, or a job queued meanwhile
    // would wait for the next poll (its wake-up came while the running claim's snapshot could not see it).
    if (free <= 0) { this.wanted = true; return }
    this.wanted = false
    this.track(this.claimAndRun(free, this.workNames()))
  }

  /**
   * The recurring jobs (`everyMs`: the workflow wake-up, the campaign scheduler, rollups, sweeps) have a
   * slot each of their own, claimed at every poll: a backlog of queued work (10,000 workflow runs, an
   * import) that fills the worker's slots and is older than their next run would otherwise hold them back,
   * and with them the due times they keep (a DELAY woken a minute late).
   */
  private tickRecurring() {
    if (this.stopped) return
    const names = this.recurringNames().filter((n) => !this.recurringRunning.has(n))
    if (!names.length) return
    for (const n of names) this.recurringRunning.add(n)
    this.track(claim(this.deps.store, names, this.id, names.length, this.leaseMs(), this.deps.clock.date()).then(async (rows) => {
      const claimed = new Set(rows.map((r) => r.name))
      for (const n of names) if (!claimed.has(n)) this.recurringRunning.delete(n)
      await Promise.all(rows.map(async (row) => {
        try { await this.execute(row) } finally { this.recurringRunning.delete(row.name) }
      }))
    }, (err) => {
      for (const n of names) this.recurringRunning.delete(n)
      throw err
    }))
  }

  private track(run: Promise<unknown>) {
    const p: Promise<void> = run.then(
      () => undefined,
      (err) => this.deps.log.error('job claim failed', errorFields(err)),
    )
    this.inflight.add(p)
    p.finally(() => this.inflight.delete(p))
  }

  private recurringNames(): string[] { return [...this.defs.values()].filter((d) => d.everyMs).map((d) => d.name) }
  private workNames(): string[] { return [...this.defs.values()].filter((d) => !d.everyMs).map((d) => d.name) }
  private leaseMs(): number { return Math.max(...[...this.defs.values()].map((d) => d.leaseMs ?? 60_000)) }

  /**
   * Claims and runs due jobs until none is left; returns how many ran. A worker not started joins its
   * node meanwhile: a lease must name a node with a heartbeat, or another node hands it back.
   */
  async drain(max = 10_000): Promise<number> {
    const join = !this.joined
    if (join) await this.node.join(jobLeases(this.deps.store), this.deps.clock.date())
    try {
      let n = 0
      while (n < max) {
        const batch = await this.claimAndRun(this.opts.concurrency ?? 4, [...this.defs.keys()])
        if (!batch) break
        n += batch
      }
      return n
    } finally {
      if (join) await this.node.leave()
    }
  }

  private async claimAndRun(limit: number, names: string[]): Promise<number> {
    this.running += limit
    let rows: JobRow[] = []
    try {
      rows = await claim(this.deps.store, names, this.id, limit, this.leaseMs(), this.deps.clock.date())
    } finally {
      this.running -= limit - rows.length
    }
    await Promise.all(rows.map(async (row) => {
      try { await this.execute(row) } finally { this.running-- }
    }))
    if ((rows.length || this.wanted) && !this.stopped) queueMicrotask(() => this.tick())
    return rows.length
  }

  private async execute(row: JobRow) {
    const def = this.defs.get(row.name)
    if (!def) throw new Error(`job ${row.id} of unregistered kind ${row.name} was claimed`)
    const { store, log } = this.deps
    const { jobs } = store.t
    const leases = jobLeases(store)
    const mine = heldBy(leases, this.id, [row.id])
    const leaseMs = def.leaseMs ?? 60_000
    let lastBeat = this.deps.clock.date().getTime()
    const ctx: JobContext = {
      deps: this.deps,
      job: row,
      progress: async (processed, total) => {
        const now = this.deps.clock.date()
        const fields = { processed, ...(total !== undefined ? { total } : {}), updatedAt: now }
        if (now.getTime() - lastBeat > renewAfterMs(leaseMs)) {
          lastBeat = now.getTime()
          await renew(store, leases, this.id, [row.id], leaseMs, now, fields)
        } else {
          await store.tx((db) => db.update(jobs).set(fields).where(mine))
        }
      },
    }
    if (row.attempts > row.maxAttempts) {
      await store.tx((db) => db.update(jobs).set({ status: 'failed', lastError: row.lastError ?? 'lease expired too many times', finishedAt: this.deps.clock.date(), lockedBy: null, lockedUntil: null }).where(mine))
      return
    }
    // A job that reports no progress (a segment computation, a domain check) still keeps its lease while
    // it runs, as the outbound pipeline does: renewed on a timer, so another node does not run it too.
    const heartbeat = setInterval(() => {
      const now = this.deps.clock.date()
      if (now.getTime() - lastBeat <= renewAfterMs(leaseMs)) return
      lastBeat = now.getTime()
      renew(store, leases, this.id, [row.id], leaseMs, now).catch((err) => log.warn('job lease renewal failed', { job: row.name, jobId: row.id, ...errorFields(err) }))
    }, renewAfterMs(leaseMs))
    heartbeat.unref?.()
    this.current.set(row.id, row.name)
    const t0 = performance.now()
    const ran = (outcome: 'completed' | 'retried' | 'failed') => {
      jobRuns().inc({ job: row.name, outcome })
      jobSeconds().observe({ job: row.name }, (performance.now() - t0) / 1000)
    }
    try {
      // The payload is what enqueue stored for this kind of job: its shape is the job's own contract.
      const result = await def.run(ctx, row.payload as never)
      const now = this.deps.clock.date()
      await store.tx(async (db) => {
        await db.update(jobs).set({
          status: 'completed', result: result ?? row.result, finishedAt: now, updatedAt: now, lockedBy: null, lockedUntil: null,
        }).where(mine)
        if (def.everyMs) {
          await enqueue(store, def.name, {}, { wake: this.deps, now, uniqueKey: def.name, runAt: new Date(now.getTime() + def.everyMs), maxAttempts: def.maxAttempts ?? 3 }, db)
        }
      })
      ran('completed')
    } catch (err) {
      const now = this.deps.clock.date()
      // Storable (src/storable.ts): a message may quote what PostgreSQL refused (a NUL in a failed query's
      // parameters), and a failure that cannot be recorded would leave the job running until its lease ends.
      const message = storableCopy(err instanceof Error ? err.message : String(err))
      const final = row.attempts >= row.maxAttempts
      ran(final ? 'failed' : 'retried')
      log.warn('job failed', { job: row.name, jobId: row.id, attempt: row.attempts, final, ...errorFields(err) })
      await store.tx(async (db) => {
        await db.update(jobs).set(final
          ? { status: 'failed', lastError: message, finishedAt: now, updatedAt: now, lockedBy: null, lockedUntil: null }
          : { status: 'queued', lastError: message, runAt: new Date(now.getTime() + (def.backoffMs ?? defaultBackoff)(row.attempts)), updatedAt: now, lockedBy: null, lockedUntil: null },
        ).where(mine)
        if (final && def.everyMs) {
          await enqueue(store, def.name, {}, { wake: this.deps, now, uniqueKey: def.name, runAt: new Date(now.getTime() + def.everyMs), maxAttempts: def.maxAttempts ?? 3 }, db)
        }
      })
    } finally {
      clearInterval(heartbeat)
      this.current.delete(row.id)
    }
  }
}
