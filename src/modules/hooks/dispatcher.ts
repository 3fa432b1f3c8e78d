import type { Deps } from '../../deps'
import { errorFields } from '../../log'
import { release, renew, renewAfterMs } from '../../jobs/lease'
import type { NodeRegistry } from '../../jobs/nodes'
import { safeFetch, SafeFetchError, safeFetchOptions, type SafeFetchOptions } from '../../net/safe-fetch'
import * as repo from './repo'
import { DISABLE_AFTER_MS, hookWakeups, nextAttemptAt } from './schedule'
import { signingSecrets } from './service'
import { signatureHeaders } from './signing'

/**
 * The delivery queue of customer webhooks: claims due rows of `webhook_deliveries` (leased like the
 * outbound queue, jobs/lease.ts), posts each to its endpoint through the SSRF guard (src/net/safe-fetch.ts)
 * with the Standard Webhooks headers, and records the outcome. Any node with the worker role runs one.
 *
 * - **Per-endpoint cap**: a node sends at most `perEndpoint` requests to one endpoint at a time, and
 *   holds (has claimed, not yet recorded) at most `prefetch` times that many of its deliveries; a claim
 *   skips endpoints that are full. A slow or dead endpoint therefore occupies a fixed share of the node
 *   (each attempt ends within the 10 s timeout), and every other endpoint's deliveries are claimed past
 *   its backlog. Claims made soon after outcomes are coalesced (a few ms), so that they carry many rows.
 * - **Outcomes** are written in batches (one transaction for the outcomes that finished meanwhile): the
 *   attempt's log row, the delivery's new state (delivered, due again per schedule.ts, or failed), and
 *   the endpoint's run of failures. 410 Gone disables the endpoint at once; failing for 5 days disables it.
 * - **Why not the job queue** (src/jobs/queue.ts): a delivery is one row per (endpoint, event), made in
 *   batches by the event consumer and claimed with a per-endpoint limit; a job row (payload, result,
 *   progress, one statement per enqueue) would cost more per delivery and cannot be claimed per endpoint.
 *   Both queues share jobs/lease.ts (leases, dead nodes, wake-ups), as the outbound queue does.
 * - **Crashes**: a claimed row's `next_attempt_at` is its lease end, so a dead node's deliveries become
 *   due again (at once when its node row is judged dead): at least once, with the same id and body.
 */

export interface DispatcherOptions {
  /** Requests to one endpoint in flight at once on this node. Default 16. */
  perEndpoint?: number
  /** Deliveries of one endpoint a node may hold (claimed, waiting for a slot), as a multiple of perEndpoint. Default 4. */
  prefetch?: number
  /** Deliveries held by this node in all. Default 1,024. */
  concurrency?: number
  /** Default 60 s, renewed every third (an attempt lasts at most the 10 s timeout). */
  leaseMs?: number
  /** Poll when no wake-up comes. Default 1 s. */
  pollMs?: number
  /** safeFetch's options beyond the configuration's (tests: a short timeout, a CA). */
  fetch?: Partial<SafeFetchOptions>
}

const RESPONSE_LOG_BYTES = 1024
/** How long the first outcome of a batch waits for others before they are written together. */
const FLUSH_WAIT_MS = 10

interface Finished extends repo.Outcome {
  endpointId: string
  /** The request was made: true on 2xx. */
  ok: boolean | null
  gone: boolean
  done: () => void
}

export class Dispatcher {
  readonly id: string
  private readonly node: NodeRegistry
  private readonly perEndpoint: number
  private readonly maxHeld: number
  private readonly concurrency: number
  private readonly leaseMs: number
  private readonly fetchOpts: SafeFetchOptions
  /** Claimed and not yet recorded, per endpoint. */
  private held = new Map<string, number>()
  private heldIds = new Set<string>()
  /** Per endpoint: claimed deliveries waiting for a slot, and requests in flight. */
  private waiting = new Map<string, Array<() => Promise<void>>>()
  private sending = new Map<string, number>()
  private soon: Timer | null = null
  private flushTimer: Timer | null = null
  /** stop() was called: claimed deliveries still waiting for a slot are not started but handed back. */
  private closing = false
  private runs = new Set<Promise<void>>()
  private stopped = true
  private joined = false
  private claiming: Promise<number> | null = null
  private wanted = false
  private timers: Timer[] = []
  private unlisten: Array<() => void> = []
  private queue: Finished[] = []
  private flushing: Promise<void> | null = null

  constructor(private deps: Deps, opts: DispatcherOptions = {}) {
    this.node = deps.runtime.node
    this.id = this.node.newId()
    this.perEndpoint = opts.perEndpoint ?? 16
    this.maxHeld = this.perEndpoint * (opts.prefetch ?? 4)
    this.concurrency = opts.concurrency ?? 1024
    this.leaseMs = opts.leaseMs ?? 60_000
    this.fetchOpts = { ...safeFetchOptions(deps.config), maxBodyBytes: RESPONSE_LOG_BYTES, ...opts.fetch }
    this.pollMs = opts.pollMs ?? 1000
  }

  private readonly pollMs: number

  /** Deliveries this node holds now (claimed, outcome not yet written). */
  get held_(): number { return this.heldIds.size }

  /** Requests in flight now. */
  get inFlight(): number { let n = 0; for (const v of this.sending.values()) n += v; return n }

  async start(): Promise<void> {
    this.stopped = false
    this.closing = false
    await this.join()
    this.unlisten.push(hookWakeups.on(() => this.tick()))
    if (this.deps.redis) this.unlisten.push(await hookWakeups.subscribe(this.deps.redis, this.deps.log, () => this.tick()))
    this.timers.push(setInterval(() => this.tick(), this.pollMs))
    this.timers.push(setInterval(() => this.renewLeases(), Math.max(1000, renewAfterMs(this.leaseMs))))
    for (const t of this.timers) t.unref?.()
    this.tick()
  }

  /** Claims nothing more, lets the attempts in flight end and be written, and hands back what is still held. */
  async stop(): Promise<void> {
    this.stopped = true
    this.closing = true
    for (const off of this.unlisten) off()
    this.unlisten = []
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    if (this.soon) clearTimeout(this.soon)
    this.soon = null
    await this.claiming
    this.waiting.clear()
    await this.settle()
    try {
      await release(this.deps.store, repo.deliveryLeases(this.deps.store), this.id, undefined, this.deps.clock.date())
    } catch (err) {
      this.deps.log.warn('releasing webhook delivery leases failed', errorFields(err))
    }
    this.held.clear()
    this.heldIds.clear()
    await this.leave()
  }

  /** Runs every delivery due now (and those that become due while it runs) and writes the outcomes; returns how many attempts ran (tests, CLI). */
  async drain(max = 1_000_000): Promise<number> {
    const join = !this.joined
    if (join) await this.join()
    try {
      let n = 0
      while (n < max) {
        const claimed = await this.claimOnce()
        await this.settle()
        if (!claimed) break
        n += claimed
      }
      return n
    } finally {
      if (join) await this.leave()
    }
  }

  private async join() {
    if (this.joined) return
    this.joined = true
    try {
      const released = await this.node.join(repo.deliveryLeases(this.deps.store), this.deps.clock.date())
      if (released) this.deps.log.info('released the webhook deliveries of a dead node', { deliveries: released })
    } catch (err) {
      this.deps.log.warn('releasing dead webhook delivery leases failed', errorFields(err))
    }
  }

  private async leave() {
    if (!this.joined) return
    this.joined = false
    await this.node.leave().catch((err) => this.deps.log.warn('leaving the nodes table failed', errorFields(err)))
  }

  /** Waits until every attempt started has ended and its outcome is written. */
  private async settle() {
    while (this.runs.size || this.queue.length || this.flushing) {
      await Promise.allSettled([...this.runs])
      await this.flushing
      if (this.queue.length && !this.flushing) this.flush()
    }
  }

  private tick() {
    if (this.stopped) return
    if (this.claiming) { this.wanted = true; return }
    this.wanted = false
    const p = this.claimOnce().catch((err) => { this.deps.log.error('webhook delivery claim failed', errorFields(err)); return 0 })
    this.claiming = p
    p.then((n) => {
      this.claiming = null
      // A full claim may leave more due rows; a wake-up during the claim may have queued some.
      if ((n > 0 || this.wanted) && !this.stopped) queueMicrotask(() => this.tick())
    })
  }

  private async claimOnce(): Promise<number> {
    const free = this.concurrency - this.heldIds.size
    if (free <= 0) return 0
    const skip = [...this.held].filter(([, n]) => n >= this.maxHeld).map(([id]) => id)
    const rows = await repo.claimDue(this.deps.store, this.id, Math.min(free, 200), (ep) => this.maxHeld - (this.held.get(ep) ?? 0), this.leaseMs, this.deps.clock.date(), skip)
    if (!rows.length) return 0
    for (const r of rows) {
      this.held.set(r.endpointId, (this.held.get(r.endpointId) ?? 0) + 1)
      this.heldIds.add(r.id)
    }
    const endpoints = new Map((await repo.endpointsByIds(this.deps.store, [...new Set(rows.map((r) => r.endpointId))]).catch((err) => {
      this.deps.log.warn('loading webhook endpoints failed', errorFields(err))
      return []
    })).map((e) => [e.id, e]))
    const secrets = new Map<string, string[]>()
    for (const r of rows) {
      const e = endpoints.get(r.endpointId)
      let s: string[] | undefined
      if (e && !secrets.has(e.id)) {
        try { secrets.set(e.id, signingSecrets(this.deps.config, e, this.deps.clock.date())) } catch (err) { this.deps.log.error('a webhook secret could not be decrypted', { endpointId: e.id, ...errorFields(err) }) }
      }
      if (e) s = secrets.get(e.id)
      const run = () => this.attempt(r, e ?? null, s ?? null).catch((err) => {
        this.deps.log.error('webhook delivery failed unexpectedly', { deliveryId: r.id, ...errorFields(err) })
        this.releaseSlot(r)
      })
      const q = this.waiting.get(r.endpointId)
      if (q) q.push(run)
      else this.waiting.set(r.endpointId, [run])
    }
    for (const ep of new Set(rows.map((r) => r.endpointId))) this.pump(ep)
    return rows.length
  }

  /** Starts waiting deliveries of an endpoint while it has free slots. */
  private pump(endpointId: string) {
    if (this.closing) return
    const q = this.waiting.get(endpointId)
    let n = this.sending.get(endpointId) ?? 0
    while (q?.length && n < this.perEndpoint) {
      const run = q.shift() as () => Promise<void>
      n++
      const p = run().finally(() => {
        this.runs.delete(p)
        const left = (this.sending.get(endpointId) ?? 1) - 1
        if (left > 0) this.sending.set(endpointId, left)
        else this.sending.delete(endpointId)
        this.pump(endpointId)
      })
      this.runs.add(p)
    }
    if (n) this.sending.set(endpointId, n)
    if (q && !q.length) this.waiting.delete(endpointId)
  }

  /** A claim a few ms from now, so that the outcomes arriving meanwhile free their rows for one claim. */
  private tickSoon() {
    if (this.soon || this.stopped) return
    this.soon = setTimeout(() => { this.soon = null; this.tick() }, 5)
  }

  private releaseSlot(r: repo.DeliveryRow) {
    if (!this.heldIds.delete(r.id)) return
    const n = (this.held.get(r.endpointId) ?? 1) - 1
    if (n > 0) this.held.set(r.endpointId, n)
    else this.held.delete(r.endpointId)
  }

  /** One attempt of one delivery; resolves when the request has ended (its outcome is queued for writing). */
  private async attempt(r: repo.DeliveryRow, e: repo.EndpointRow | null, secrets: string[] | null): Promise<void> {
    const started = this.deps.clock.date()
    const attempts = r.attempts + 1
    const firstAttemptAt = r.firstAttemptAt ?? started
    if (!e?.enabled || !secrets) {
      const why = !e ? 'The endpoint was deleted' : !e.enabled ? 'The endpoint is disabled' : 'The signing secret could not be decrypted'
      void this.finish({
        delivery: r, holder: this.id, attempt: null, endpointId: r.endpointId, ok: null, gone: false,
        set: { status: 'failed', nextAttemptAt: null, lastStatus: r.lastStatus, lastError: why, deliveredAt: null, attempts: r.attempts, firstAttemptAt: r.firstAttemptAt },
      })
      return
    }
    const timestamp = Math.floor(Date.now() / 1000)
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'mailctl-webhooks/1',
      ...signatureHeaders(secrets, r.id, timestamp, r.body),
    }
    const t0 = performance.now()
    let outcome: string
    let status: number | null = null
    let response: string | null
    try {
      const res = await safeFetch(e.url, { method: 'POST', headers, body: r.body }, { ...this.fetchOpts, pool: r.projectId })
      status = res.status
      outcome = status >= 200 && status < 300 ? 'success' : 'http_error'
      response = res.truncated ? `${res.body}…` : res.body
    } catch (err) {
      outcome = err instanceof SafeFetchError ? err.code : 'connect'
      response = err instanceof Error ? err.message.slice(0, RESPONSE_LOG_BYTES) : String(err)
    }
    const latencyMs = Math.round(performance.now() - t0)
    const now = this.deps.clock.date()
    const ok = outcome === 'success'
    const next = ok ? null : nextAttemptAt(firstAttemptAt, attempts, now)
    const lastError = ok ? null : status !== null ? `HTTP ${status}` : response
    // The slot is free once the answer is in; the outcome is written with the others of its batch.
    void this.finish({
      delivery: r, holder: this.id, endpointId: e.id, ok, gone: status === 410,
      attempt: { id: Bun.randomUUIDv7(), projectId: r.projectId, endpointId: e.id, deliveryId: r.id, attempt: attempts, outcome, status, latencyMs, response, createdAt: now },
      set: {
        status: ok ? 'delivered' : next ? 'pending' : 'failed', nextAttemptAt: next, lastStatus: status, lastError,
        deliveredAt: ok ? now : null, attempts, firstAttemptAt,
      },
    })
  }

  private finish(o: Omit<Finished, 'done'>): Promise<void> {
    return new Promise<void>((resolve) => {
      this.queue.push({ ...o, done: resolve })
      // Outcomes that end within a few ms of each other share one transaction.
      if (!this.flushing && !this.flushTimer) this.flushTimer = setTimeout(() => { this.flushTimer = null; if (!this.flushing) this.flush() }, FLUSH_WAIT_MS)
    })
  }

  /** Writes every outcome queued so far in one transaction, then frees their slots. */
  private flush() {
    if (this.flushTimer) clearTimeout(this.flushTimer)
    this.flushTimer = null
    const batch = this.queue
    this.queue = []
    this.flushing = this.write(batch).finally(() => {
      for (const o of batch) {
        this.releaseSlot(o.delivery)
        o.done()
      }
      this.flushing = null
      if (this.queue.length) this.flush()
      else this.tickSoon()
    })
  }

  private async write(batch: Finished[]) {
    const { store, log } = this.deps
    const now = this.deps.clock.date()
    try {
      await store.tx(async (db) => {
        const written = await repo.recordOutcomes(store, db, batch, now)
        // Per endpoint, the last outcome of the batch decides whether it is failing.
        const last = new Map<string, Finished>()
        for (const o of batch) if (o.ok !== null && written.has(o.delivery.id)) last.set(o.endpointId, o)
        const succeeded = [...last.values()].filter((o) => o.ok).map((o) => o.endpointId)
        const failed = [...last.values()].filter((o) => !o.ok)
        await repo.markSucceeded(store, db, succeeded)
        const failing = await repo.markFailing(store, db, failed.map((o) => o.endpointId), now)
        for (const e of failing) {
          if (!e.enabled) continue
          const o = last.get(e.id)
          if (o?.gone) {
            if (await repo.disableEndpoint(store, db, e.id, 'The endpoint answered 410 Gone', now)) log.info('webhook endpoint disabled: 410 Gone', { endpointId: e.id, projectId: e.projectId })
          } else if (e.failingSince && now.getTime() - e.failingSince.getTime() >= DISABLE_AFTER_MS) {
            const reason = `Every attempt failed for 5 days (since ${e.failingSince.toISOString()}); the last: ${o?.set.lastError ?? 'unknown'}`
            if (await repo.disableEndpoint(store, db, e.id, reason, now)) log.info('webhook endpoint disabled: failing for 5 days', { endpointId: e.id, projectId: e.projectId })
          }
        }
      })
    } catch (err) {
      // The rows stay leased: their leases run out and they are tried again (at least once).
      log.error('recording webhook outcomes failed', { deliveries: batch.length, ...errorFields(err) })
    }
  }

  private renewLeases() {
    if (!this.heldIds.size) return
    renew(this.deps.store, repo.deliveryLeases(this.deps.store), this.id, [...this.heldIds], this.leaseMs, this.deps.clock.date())
      .catch((err) => this.deps.log.warn('webhook delivery lease renewal failed', errorFields(err)))
  }
}

/** The worker role's dispatcher (src/main.ts, serve). */
export async function startHookDispatcher(deps: Deps, opts: DispatcherOptions = {}): Promise<Dispatcher> {
  const d = new Dispatcher(deps, opts)
  await d.start()
  return d
}
