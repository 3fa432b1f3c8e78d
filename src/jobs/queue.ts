import { and, asc, eq, inArray, lt, lte, or, sql } from 'drizzle-orm'
import { EventEmitter } from 'node:events'
import { hostname } from 'node:os'
import type { Db, Store } from '../db/client'
import type { Deps } from '../deps'
import { errorFields } from '../log'

/**
 * The one durable job queue (STYLE.md "Jobs"): rows in `jobs`, claimed atomically (PostgreSQL
 * FOR UPDATE SKIP LOCKED, SQLite the single writer), retried with exponential backoff, and leased:
 * a job whose worker died is claimed again once its lease expires. Payloads carry ids only.
 */

export type JobRow = typeof import('../db/schema').pgSchema.jobs.$inferSelect

export interface JobContext {
  deps: Deps
  job: JobRow
  /** Records progress (and extends the lease) for pollable jobs such as imports. */
  progress(processed: number, total?: number): Promise<void>
}

export interface JobDef<P = Record<string, unknown>> {
  name: string
  run(ctx: JobContext, payload: P): Promise<Record<string, unknown> | void>
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

export interface EnqueueOptions {
  projectId?: string | null
  runAt?: Date
  /** At most one queued or running job per (name, uniqueKey); a duplicate enqueue returns null. */
  uniqueKey?: string | null
  maxAttempts?: number
  total?: number
}

/** Wakes local workers when a job is queued (other nodes poll, or listen on Redis when configured). */
export const wakeups = new EventEmitter()
wakeups.setMaxListeners(100)

/** Queues a job; pass `db` to queue inside the caller's transaction (it commits with the caller's rows). */
export async function enqueue(store: Store, name: string, payload: Record<string, unknown>, opts: EnqueueOptions = {}, db?: Db): Promise<string | null> {
  const { jobs } = store.t
  const now = new Date()
  const id = Bun.randomUUIDv7()
  const insert = (d: Db) => d.insert(jobs).values({
    id, projectId: opts.projectId ?? null, name, uniqueKey: opts.uniqueKey ?? null, payload, status: 'queued',
    attempts: 0, maxAttempts: opts.maxAttempts ?? 5, runAt: opts.runAt ?? now, lockedUntil: null, lockedBy: null,
    lastError: null, total: opts.total ?? 0, processed: 0, result: null, createdAt: now, updatedAt: now, finishedAt: null,
  }).onConflictDoNothing().returning({ id: jobs.id })
  const rows = db ? await insert(db) : await store.tx(insert)
  if (rows.length) queueMicrotask(() => wakeups.emit('job', name))
  return rows.length ? id : null
}

export async function getJob(store: Store, projectId: string, id: string, names?: string[]): Promise<JobRow | null> {
  const { jobs } = store.t
  const conds = [eq(jobs.id, id), eq(jobs.projectId, projectId)]
  if (names?.length) conds.push(inArray(jobs.name, names))
  const [row] = await store.db.select().from(jobs).where(and(...conds)).limit(1)
  return row ?? null
}

const defaultBackoff = (attempt: number) => Math.min(3600_000, 1000 * 2 ** attempt)

/** Claims up to `limit` due jobs of the given kinds for `workerId`. */
export async function claim(store: Store, names: string[], workerId: string, limit: number, leaseMs: number): Promise<JobRow[]> {
  if (!names.length || limit <= 0) return []
  const { jobs } = store.t
  const now = new Date()
  return store.tx(async (db) => {
    let due = db.select({ id: jobs.id }).from(jobs).where(and(
      inArray(jobs.name, names),
      or(
        and(eq(jobs.status, 'queued'), lte(jobs.runAt, now)),
        and(eq(jobs.status, 'running'), lt(jobs.lockedUntil, now)),
      ),
    )).orderBy(asc(jobs.runAt)).limit(limit)
    if (store.dialect === 'pg') due = due.for('update', { skipLocked: true }) as typeof due
    return db.update(jobs).set({
      status: 'running', lockedBy: workerId, lockedUntil: new Date(now.getTime() + leaseMs),
      attempts: sql`${jobs.attempts} + 1`, updatedAt: now,
    }).where(inArray(jobs.id, due)).returning()
  })
}

/** Runs jobs of the registered kinds until stopped. `drain()` runs everything due now (tests, CLI). */
export class Worker {
  private defs = new Map<string, JobDef<any>>()
  private running = 0
  private timer: Timer | null = null
  private stopped = true
  private inflight = new Set<Promise<void>>()
  private readonly id = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`
  private readonly onWake = () => this.tick()

  constructor(private deps: Deps, defs: JobDef<any>[], private opts: { concurrency?: number; pollMs?: number } = {}) {
    for (const d of defs) this.defs.set(d.name, d)
  }

  register(def: JobDef<any>) { this.defs.set(def.name, def) }

  /** Makes sure each recurring job has one queued row (safe on every node at every start). */
  async ensureRecurring() {
    for (const d of this.defs.values()) {
      if (d.everyMs) await enqueue(this.deps.store, d.name, {}, { uniqueKey: d.name, maxAttempts: d.maxAttempts ?? 3 })
    }
  }

  async start() {
    this.stopped = false
    await this.ensureRecurring()
    wakeups.on('job', this.onWake)
    this.timer = setInterval(() => this.tick(), this.opts.pollMs ?? 1000)
    this.tick()
  }

  async stop() {
    this.stopped = true
    wakeups.off('job', this.onWake)
    if (this.timer) clearInterval(this.timer)
    await Promise.allSettled([...this.inflight])
  }

  private tick() {
    if (this.stopped) return
    const free = (this.opts.concurrency ?? 4) - this.running
    if (free <= 0) return
    const p: Promise<void> = this.claimAndRun(free).then(
      () => undefined,
      (err) => this.deps.log.error('job claim failed', errorFields(err)),
    )
    this.inflight.add(p)
    p.finally(() => this.inflight.delete(p))
  }

  /** Claims and runs due jobs until none is left; returns how many ran. */
  async drain(max = 10_000): Promise<number> {
    let n = 0
    while (n < max) {
      const batch = await this.claimAndRun(this.opts.concurrency ?? 4)
      if (!batch) break
      n += batch
    }
    return n
  }

  private async claimAndRun(limit: number): Promise<number> {
    const lease = Math.max(...[...this.defs.values()].map((d) => d.leaseMs ?? 60_000))
    this.running += limit
    let rows: JobRow[] = []
    try {
      rows = await claim(this.deps.store, [...this.defs.keys()], this.id, limit, lease)
    } finally {
      this.running -= limit - rows.length
    }
    await Promise.all(rows.map(async (row) => {
      try { await this.execute(row) } finally { this.running-- }
    }))
    if (rows.length && !this.stopped) queueMicrotask(() => this.tick())
    return rows.length
  }

  private async execute(row: JobRow) {
    const def = this.defs.get(row.name)!
    const { store, log } = this.deps
    const { jobs } = store.t
    const mine = and(eq(jobs.id, row.id), eq(jobs.lockedBy, this.id))
    const leaseMs = def.leaseMs ?? 60_000
    let lastBeat = Date.now()
    const ctx: JobContext = {
      deps: this.deps,
      job: row,
      progress: async (processed, total) => {
        const now = new Date()
        const beat = now.getTime() - lastBeat > leaseMs / 3
        if (beat) lastBeat = now.getTime()
        await store.tx((db) => db.update(jobs).set({
          processed, ...(total !== undefined ? { total } : {}), updatedAt: now,
          ...(beat ? { lockedUntil: new Date(now.getTime() + leaseMs) } : {}),
        }).where(mine))
      },
    }
    if (row.attempts > row.maxAttempts) {
      await store.tx((db) => db.update(jobs).set({ status: 'failed', lastError: row.lastError ?? 'lease expired too many times', finishedAt: new Date(), lockedBy: null, lockedUntil: null }).where(mine))
      return
    }
    try {
      const result = await def.run(ctx, row.payload as never)
      const now = new Date()
      await store.tx(async (db) => {
        await db.update(jobs).set({
          status: 'completed', result: result ?? row.result, finishedAt: now, updatedAt: now, lockedBy: null, lockedUntil: null,
        }).where(mine)
        if (def.everyMs) {
          await enqueue(store, def.name, {}, { uniqueKey: def.name, runAt: new Date(now.getTime() + def.everyMs), maxAttempts: def.maxAttempts ?? 3 }, db)
        }
      })
    } catch (err) {
      const now = new Date()
      const message = err instanceof Error ? err.message : String(err)
      const final = row.attempts >= row.maxAttempts
      log.warn('job failed', { job: row.name, jobId: row.id, attempt: row.attempts, final, ...errorFields(err) })
      await store.tx(async (db) => {
        await db.update(jobs).set(final
          ? { status: 'failed', lastError: message, finishedAt: now, updatedAt: now, lockedBy: null, lockedUntil: null }
          : { status: 'queued', lastError: message, runAt: new Date(now.getTime() + (def.backoffMs ?? defaultBackoff)(row.attempts)), updatedAt: now, lockedBy: null, lockedUntil: null },
        ).where(mine)
        if (final && def.everyMs) {
          await enqueue(store, def.name, {}, { uniqueKey: def.name, runAt: new Date(now.getTime() + def.everyMs), maxAttempts: def.maxAttempts ?? 3 }, db)
        }
      })
    }
  }
}
