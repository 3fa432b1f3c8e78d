/**
 * The one outbound pipeline (send, campaigns, workflows, the relay): claim due messages from the
 * outbound queue in batches, build and DKIM-sign each (signer pool), hand it to the transport with a VERP
 * return-path, and record each outcome durably (recorder.ts) before its connection carries anything else.
 *
 * Crash safety: a message is in the queue until the transaction recording its final outcome deletes it;
 * a claim is a lease (run_at moves to the lease's end), so after a crash every unfinished message becomes
 * due again and is delivered by whichever node claims it. Only messages whose 250 had not been recorded
 * when the process died (at most one per open connection) can reach their host a second time.
 *
 * Shares: the pipeline's slots (`maxInFlight`) are shared out among destinations. A destination (the MX
 * host mail to a recipient domain goes to, or the smart host: Transport.destinationOf) is given at most
 * what its connections can carry (Transport.capacityOf: its connection limit times a few messages per
 * connection), and never more than half the slots. Claimed messages beyond a destination's share wait in
 * its `held` list (leased, with their emails loaded) and start as its messages finish; while any wait,
 * the claim skips the recipient domains they were claimed for, so the next batches reach the other
 * destinations. A destination that stalls (a server that never answers) thus holds its share and no
 * more, whatever its backlog, and a busy healthy destination keeps its connections fed from `held`
 * without a round trip to the database.
 */
import type { StoredAttachment } from '../../db/schema/sending'
import type { Deps } from '../../deps'
import { errorFields, type Logger } from '../../log'
import { ContentError } from '../render/campaign'
import { listUnsubscribeHeaders } from '../links'
import { domainOf, type OutboundMessage } from '../mime'
import type { MessageBuilder } from '../signer'
import { release, renew, renewAfterMs, Wakeups } from '../../jobs/lease'
import type { NodeRegistry } from '../../jobs/nodes'
import { claimDue, outboundLeases, type QueueRow } from './queue-repo'
import { OutcomeRecorder } from './recorder'
import { parseReply } from './replies'
import type { DeliveryEmail, DeliveryStore, Outcome, SigningDomain } from './store'
import type { Delivery, Transport } from './types'
import { unsubscribeAddress, verpAddress } from './verp'
import { TLS_REPORT_SOURCE } from '../tlsrpt/results'

/** The largest message accepted for delivery (docs/decisions.md, Limits: 40 MB). */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024

/**
 * After a claim that skipped full destinations' domains and found nothing else due, the next claim waits
 * at least this long (or until a destination has room again): claiming at every wake-up would scan the
 * skipped backlog for nothing. The gap grows with the time that claim took (20 times), up to the maximum.
 */
const MIN_CLAIM_GAP_MS = 50
const MAX_CLAIM_GAP_MS = 5000

/** A claimed message with its email, not yet started. */
interface Claimed { row: QueueRow; email: DeliveryEmail }

/**
 * One destination's part of the pipeline: messages being processed for it (`active`, at most its
 * capacity), claimed ones waiting for room (`held`, in claim order), the recipient domains its messages
 * were claimed for (skipped by the claim while the share is full: `skipping`), when a message of it last
 * finished (`lastDone`), and whether it stalled (no message finished for `stallMs` while some were in
 * progress: its share is then only its connections, and the rest goes back to the queue).
 */
interface Share { key: string; active: number; held: Claimed[]; domains: Set<string>; skipping: boolean; lastDone: number; stalled: boolean }

/** A destination whose messages in progress have not moved for this long is stalled (PipelineOptions.stallMs). */
const DEFAULT_STALL_MS = 10_000

/** "Mail was queued": wakes this process's pipelines at once, and other nodes' through Redis. */
export const outboundWakeups = new Wakeups('outbound')

export interface PipelineOptions {
  /** What the pipeline reads and records (store.ts), built on the modules by the composition root. */
  store: DeliveryStore
  transport: Transport
  builder: MessageBuilder
  workerId?: string
  /** Messages claimed per query. */
  batchSize?: number
  /**
   * Messages being built, sent or recorded at once (across destinations; default 1,000). One destination
   * gets at most its capacity and at most half of them.
   */
  maxInFlight?: number
  leaseMs?: number
  /** Poll interval when idle (wake-ups make queued mail go at once). */
  pollMs?: number
  throttleDelayMs?: number
  /**
   * How long stop() waits for messages in progress (default 10 s, MAILCTL_SHUTDOWN_GRACE_SECONDS, README.md Configuration)
   * before it closes the transport's connections: a server that never answers cannot hold a shutdown.
   * The messages cut off are deferred, as after a lost connection.
   */
  stopGraceMs?: number
  /**
   * A destination none of whose messages in progress has finished for this long is stalled (default
   * 10 s): it keeps what its connections carry, and its other messages go back to the queue, unclaimed
   * until it moves again (one stalled destination must not hold the pipeline).
   */
  stallMs?: number
  log?: Logger
}

interface DomainEntry { at: number; value: Promise<SigningDomain | null> }

const DOMAIN_TTL_MS = 30_000

export class OutboundPipeline {
  readonly workerId: string
  private recorder: OutcomeRecorder
  private inFlight = new Set<Promise<void>>()
  private running = false
  private loopDone: Promise<void> | null = null
  private wakeResolve: (() => void) | null = null
  /** Resolved when an in-flight message finishes (the claim loop waits on it when full). */
  private slotFreed: (() => void) | null = null
  private domains = new Map<string, DomainEntry>()
  private log: Logger
  private unlisten: (() => void) | null = null
  /** Emails claimed by this pipeline and not yet recorded (their leases are renewed). */
  private claimedIds = new Set<string>()
  private heartbeat: Timer | null = null
  /** Destinations with messages in progress or held, by key. */
  private shares = new Map<string, Share>()
  /** Recipient domains whose destination is being looked up, with the messages claimed for them. */
  private lookups = new Map<string, Claimed[]>()
  private lookupsDone = new Set<Promise<void>>()
  /** Claimed messages not started yet (held by a share, or waiting for a look-up). */
  private waiting = 0
  private stopping = false
  /** No claim before this time (ms) unless a destination has room again (see MIN_CLAIM_GAP_MS). */
  private claimAfter = 0
  private pauseEnd: (() => void) | null = null
  /**
   * Set by wake() and cleared as a claim starts: a wake-up that arrives while a claim runs (nobody is
   * asleep to take it) makes the loop claim again instead of sleeping for the poll interval.
   */
  private woken = false
  /**
   * Counts the times a destination stopped holding messages (its domains are claimed again). A claim that
   * started before such a change does not set the claim gap: the domains it skipped are due again.
   */
  private skipEpoch = 0
  /** Counters since start (tests, diagnostics). */
  readonly stats = { claimed: 0, settled: 0, handedBack: 0, givenBack: 0 }
  private stallWatch: Timer | null = null
  /** Messages shed by a stalled destination, whose leases are released together (giveBack). */
  private toGiveBack: string[] = []
  /** This process's node on the store (jobs/nodes.ts), joined while the pipeline runs. */
  private readonly node: NodeRegistry
  private joined = false
  private offLive: (() => void) | null = null

  constructor(private deps: Deps, private opts: PipelineOptions) {
    this.node = deps.runtime.node
    this.workerId = opts.workerId ?? this.node.newId()
    const onWire = opts.transport.onWire?.bind(opts.transport)
    this.recorder = new OutcomeRecorder(deps, opts.store, { workerId: this.workerId, throttleDelayMs: opts.throttleDelayMs, onWire })
    this.log = opts.log ?? deps.log
  }

  get transport(): Transport { return this.opts.transport }

  private get leaseMs(): number { return this.opts.leaseMs ?? 5 * 60_000 }

  private get maxInFlight(): number { return this.opts.maxInFlight ?? 1000 }

  private get stallMs(): number { return this.opts.stallMs ?? DEFAULT_STALL_MS }

  start(): void {
    if (this.running) return
    this.running = true
    this.stopping = false
    this.unlisten = outboundWakeups.on(() => this.wake())
    const leases = outboundLeases(this.deps.store)
    this.heartbeat = setInterval(() => {
      renew(this.deps.store, leases, this.workerId, [...this.claimedIds], this.leaseMs, this.deps.clock.date())
        .catch((err) => this.log.error('outbound lease renewal failed', errorFields(err)))
    }, Math.max(1000, Math.floor(renewAfterMs(this.leaseMs))))
    this.stallWatch = setInterval(() => this.checkStalls(), Math.max(100, Math.min(1000, Math.floor(this.stallMs / 2))))
    this.loopDone = (async () => {
      // Registers this node (heartbeat); messages a dead node had claimed are due now, not at lease expiry.
      try {
        this.joined = true
        const released = await this.node.join(leases)
        if (released) this.log.info('released the leases of a dead node', { messages: released })
        // Each destination's connection limit is shared among the live nodes (mail/outbound/throttle.ts).
        this.offLive = this.node.onLiveNodes((n) => this.opts.transport.shareAmong?.(n))
      } catch (err) {
        this.log.warn('releasing dead leases failed', errorFields(err))
      }
      await this.loop()
    })()
  }

  /**
   * Stops claiming and starts nothing more: claimed messages not yet on the wire (held, being built, or
   * waiting for a slot of their destination) are not sent. Messages on the wire finish and are recorded
   * (for up to `stopGraceMs`, then their connections are closed and they are recorded as deferred). Then
   * every lease still held is handed back (due now, for any node), and the transport is closed.
   */
  async stop(): Promise<void> {
    this.running = false
    this.stopping = true
    // Outcomes the store cannot write now are tried again for the grace period, not for ever.
    this.recorder.keepFor(this.opts.stopGraceMs ?? 10_000)
    this.unlisten?.()
    this.unlisten = null
    this.opts.transport.stopStarting?.()
    this.wake()
    this.slotFreed?.()
    this.pauseEnd?.()
    await this.loopDone
    // Held messages are not started any more; they are handed back below with the other leases.
    if (!(await this.settled(this.opts.stopGraceMs ?? 10_000))) {
      this.log.warn('closing outbound connections at stop', { messages: this.inFlight.size })
      await this.opts.transport.close()
      await this.settled()
    }
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.heartbeat = null
    if (this.stallWatch) clearInterval(this.stallWatch)
    this.stallWatch = null
    await this.recorder.idle()
    try {
      const released = await release(this.deps.store, outboundLeases(this.deps.store), this.workerId, undefined, this.deps.clock.date())
      if (released) this.log.info('released outbound leases at stop', { messages: released })
    } catch (err) {
      this.log.warn('releasing outbound leases at stop failed', errorFields(err))
    }
    this.offLive?.()
    this.offLive = null
    if (this.joined) {
      this.joined = false
      await this.node.leave().catch((err) => this.log.warn('leaving the nodes table failed', errorFields(err)))
    }
    this.shares.clear()
    this.lookups.clear()
    this.claimedIds.clear()
    this.waiting = 0
    await this.opts.transport.close()
    await this.opts.builder.close()
  }

  /** Waits until no message is in progress (or `ms` has passed: false). */
  private async settled(ms?: number): Promise<boolean> {
    let timer: Timer | null = null
    const timeout = ms === undefined ? null : new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms) })
    try {
      while (this.inFlight.size || this.lookupsDone.size) {
        const all = Promise.allSettled([...this.inFlight, ...this.lookupsDone]).then(() => true)
        if (!(await (timeout ? Promise.race([all, timeout]) : all))) return false
      }
      return true
    } finally {
      if (timer) clearTimeout(timer)
    }
  }

  wake(): void {
    this.woken = true
    const r = this.wakeResolve
    this.wakeResolve = null
    r?.()
  }

  /** Waits `ms`, or until a wake-up; at once when one came since the last claim started. */
  private sleep(ms: number): Promise<void> {
    if (this.woken) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.wakeResolve = null; resolve() }, ms)
      this.wakeResolve = () => { clearTimeout(timer); resolve() }
    })
  }

  /** Waits until `claimAfter`, or until a destination has room again (or the pipeline stops). */
  private pause(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.pauseEnd = null; resolve() }, Math.max(0, this.claimAfter - Date.now()))
      this.pauseEnd = () => { clearTimeout(timer); this.pauseEnd = null; resolve() }
    })
  }

  private async loop(): Promise<void> {
    const max = this.maxInFlight
    const batch = this.opts.batchSize ?? 100
    while (this.running) {
      const free = max - this.inFlight.size
      if (free < Math.min(batch, max) / 2) {
        await new Promise<void>((resolve) => { this.slotFreed = resolve })
        continue
      }
      if (this.claimAfter > Date.now()) {
        await this.pause()
        continue
      }
      let claimed = 0
      try {
        claimed = await this.claimAndStart(Math.min(batch, free))
      } catch (err) {
        this.log.error('outbound claim failed', errorFields(err))
        await this.sleep(this.opts.pollMs ?? 1000)
        continue
      }
      if (!claimed) await this.sleep(this.opts.pollMs ?? 1000)
    }
  }

  /**
   * Delivers everything due now and waits for the outcomes (tests and one-shot tools). Deferred mail is
   * not waited for. Returns the number of messages handled.
   */
  async drain(): Promise<number> {
    // Not started: this pipeline's node joins meanwhile (a lease must name a node with a heartbeat).
    const join = !this.joined
    if (join) await this.node.join(outboundLeases(this.deps.store))
    try {
      let n = 0
      for (;;) {
        const claimed = await this.claimAndStart(this.opts.batchSize ?? 100)
        n += claimed
        if (!claimed && !this.inFlight.size && !this.lookupsDone.size && !this.waiting) break
        if (this.inFlight.size || this.lookupsDone.size) await Promise.allSettled([...this.inFlight, ...this.lookupsDone])
        else for (const share of [...this.shares.values()]) this.refill(share)
      }
      await this.recorder.idle()
      return n
    } finally {
      if (join) await this.node.leave()
    }
  }

  /**
   * The recipient domains the claim skips: those being looked up, and those of full destinations (holding
   * messages that wait for room, or stalled with their connections taken).
   */
  private skippedDomains(): string[] {
    const out = [...this.lookups.keys()]
    for (const share of this.shares.values()) if (share.skipping) for (const d of share.domains) out.push(d)
    return out
  }

  /** What a destination may have in progress: its share, or only its connections while it is stalled. */
  private capOf(share: Share): number {
    if (!share.stalled) return this.shareOf(share.key)
    return Math.max(1, Math.min(this.shareOf(share.key), this.opts.transport.connectionsOf?.(share.key) ?? Number.POSITIVE_INFINITY))
  }

  /** Messages in progress or held, by destination (diagnostics and tests). */
  destinationsHeld(): Record<string, number> {
    return Object.fromEntries([...this.shares.values()].map((s) => [s.key, s.active + s.held.length]))
  }

  /**
   * Finds destinations none of whose messages in progress has finished for `stallMs` (a server that
   * accepts the connection and then never answers). Such a destination keeps what is on its connections:
   * what it held and what waited for one of its connections goes back to the queue, due now, and its
   * domains are skipped by the claim until one of its messages finishes. Its mail thus waits unclaimed in
   * the queue rather than in this pipeline's slots, however large its backlog.
   */
  private checkStalls(): void {
    if (this.stopping) return
    const now = Date.now()
    for (const share of this.shares.values()) {
      if (share.stalled || !share.active || now - share.lastDone < this.stallMs) continue
      share.stalled = true
      share.skipping = true
      const held = share.held.length
      if (held) this.handBack(share, held)
      const shed = this.opts.transport.shed?.(share.key) ?? 0
      this.log.warn('destination stalled: keeping its connections, giving the rest back to the queue', {
        destination: share.key, inProgress: share.active, givenBack: held + shed, connections: this.capOf(share),
      })
    }
  }

  /** Releases the leases of messages a stalled destination shed (due now; its domains stay skipped). */
  private giveBack(emailId: string): void {
    this.stats.givenBack++
    this.toGiveBack.push(emailId)
    if (this.toGiveBack.length > 1) return
    queueMicrotask(() => {
      const ids = this.toGiveBack.splice(0)
      release(this.deps.store, outboundLeases(this.deps.store), this.workerId, ids, this.deps.clock.date())
        .catch((err) => this.log.warn('giving back a stalled destination\'s messages failed', { messages: ids.length, ...errorFields(err) }))
    })
  }

  private async claimAndStart(limit: number): Promise<number> {
    this.woken = false
    const epoch = this.skipEpoch
    const skip = this.skippedDomains()
    const t0 = performance.now()
    const rows = await claimDue(this.deps.store, this.workerId, limit, this.leaseMs, this.deps.clock.date(), skip)
    // No gap when a destination freed up meanwhile: the domains this claim skipped are claimable now.
    if (skip.length && rows.length < limit && epoch === this.skipEpoch) {
      // All that is due outside the skipped domains is taken: wait before scanning past them again.
      const gap = Math.min(MAX_CLAIM_GAP_MS, Math.max(MIN_CLAIM_GAP_MS, 20 * (performance.now() - t0)))
      this.claimAfter = Date.now() + gap
    }
    if (!rows.length) return 0
    this.stats.claimed += rows.length
    const inProgress = new Set(rows.filter((r) => this.claimedIds.has(r.emailId)).map((r) => r.emailId))
    for (const r of rows) this.claimedIds.add(r.emailId)
    // Campaign mail comes with what its body's rendering needs (a signer thread renders it: store.ts).
    const loaded = await this.opts.store.load(this.deps, rows.map((r) => r.emailId))
    const emails = new Map(loaded.map((e) => [e.id, e]))
    // The claim's order (priority, then age) is the order in which a destination's held messages start.
    rows.sort((a, b) => a.priority - b.priority || a.createdAt.getTime() - b.createdAt.getTime())
    const destinationOf = this.opts.transport.destinationOf?.bind(this.opts.transport)
    const byDomain = new Map<string, Claimed[]>()
    for (const row of rows) {
      // Already in progress here: its lease ran out while its outcome waited for the store (recorder.ts),
      // and this claim took it again. It is not started twice; the outcome's write deletes the row.
      if (inProgress.has(row.emailId)) continue
      const email = emails.get(row.emailId)
      // The email row is gone only if its project was deleted between claim and load: nothing to send.
      if (!email) { this.claimedIds.delete(row.emailId); continue }
      // A transport without connections (capture) has no destinations to share the slots among.
      if (!destinationOf) { this.dispatch(null, { row, email }); continue }
      const list = byDomain.get(row.domain)
      if (list) list.push({ row, email })
      else byDomain.set(row.domain, [{ row, email }])
    }
    if (destinationOf) for (const [domain, list] of byDomain) this.route(destinationOf, domain, list)
    return rows.length
  }

  /**
   * A destination's share: its capacity (what its connections carry) plus what the builder holds at
   * once, and never more than half the pipeline (at least one). Without the builder's part, one busy
   * destination's share was used up by messages waiting in the signer threads' inboxes while its
   * connections waited for them (docs/adr/0010-signer-threads-build-messages.md). Public for
   * diagnostics and tests.
   */
  shareOf(key: string): number {
    const cap = (this.opts.transport.capacityOf?.(key) ?? Number.POSITIVE_INFINITY) + this.opts.builder.holds
    return Math.max(1, Math.min(cap, Math.floor(this.maxInFlight / 2)))
  }

  /** Finds the destination of a recipient domain's messages, then places them. */
  private route(destinationOf: (domain: string) => Promise<string>, domain: string, list: Claimed[]): void {
    this.waiting += list.length
    const pending = this.lookups.get(domain)
    if (pending) { pending.push(...list); return }
    this.lookups.set(domain, list)
    const done: Promise<void> = destinationOf(domain).catch(() => domain).then((key) => {
      const claimed = this.lookups.get(domain) ?? []
      this.lookups.delete(domain)
      this.waiting -= claimed.length
      this.place(key, domain, claimed)
      // The domain was skipped while it was looked up: unless its destination now holds messages, it is
      // claimable again, and a claim that ran meanwhile must not wait out a gap that counted it skipped.
      if (!this.shares.get(key)?.skipping) this.unskipped()
    }).catch((err) => {
      this.log.error('outbound routing failed unexpectedly', { domain, ...errorFields(err) })
    }).finally(() => { this.lookupsDone.delete(done) })
    this.lookupsDone.add(done)
  }

  /** Starts what fits in the destination's share and holds the rest. */
  private place(key: string, domain: string, list: Claimed[]): void {
    if (this.stopping) return
    let share = this.shares.get(key)
    if (!share) {
      share = { key, active: 0, held: [], domains: new Set(), skipping: false, lastDone: Date.now(), stalled: false }
      this.shares.set(key, share)
    }
    share.domains.add(domain)
    const cap = this.capOf(share)
    for (const c of list) {
      if (!share.held.length && share.active < cap) {
        this.dispatch(share, c)
      } else {
        share.held.push(c)
        share.skipping = true
        this.waiting++
      }
    }
    if (this.waiting > this.maxInFlight) this.handBack(share, this.waiting - this.maxInFlight)
    if (!share.held.length && !share.active) this.shares.delete(key)
  }

  /**
   * More messages held than the pipeline has slots (many full destinations at once): the newest `n` of
   * this share go back to the queue, due now. Their domains stay skipped while the share holds any.
   */
  private handBack(share: Share, n: number): void {
    const back = share.held.splice(Math.max(0, share.held.length - n))
    if (!back.length) return
    this.waiting -= back.length
    const ids = back.map((c) => c.row.emailId)
    for (const id of ids) this.claimedIds.delete(id)
    release(this.deps.store, outboundLeases(this.deps.store), this.workerId, ids, this.deps.clock.date())
      .catch((err) => this.log.warn('handing back held messages failed', { messages: ids.length, ...errorFields(err) }))
    if (!share.held.length) this.refill(share)
  }

  /**
   * Starts held messages while the share has room; once none is held (and a stalled destination has a
   * connection free), its domains are claimed again.
   */
  private refill(share: Share): void {
    const cap = this.capOf(share)
    if (!this.stopping) {
      while (share.held.length && share.active < cap) {
        const c = share.held.shift() as Claimed
        this.waiting--
        this.dispatch(share, c)
      }
    }
    if (share.held.length || (share.stalled && share.active >= cap)) return
    if (share.skipping) {
      share.skipping = false
      this.unskipped()
    }
    if (!share.active) this.shares.delete(share.key)
  }

  /** Domains the claim skipped are claimable again: no claim gap, and the loop claims now. */
  private unskipped(): void {
    this.skipEpoch++
    this.claimAfter = 0
    this.pauseEnd?.()
    this.wake()
  }

  private dispatch(share: Share | null, { row, email }: Claimed): void {
    if (share) share.active++
    const p: Promise<void> = this.process(row, email).then((outcome) => {
      // Not settled while running: shed by its stalled destination (given back) or stopping (handed back at stop).
      if (outcome === 'not-started' && !this.stopping) this.giveBack(row.emailId)
      else if (share) {
        // A message of the destination finished: it moves (again).
        share.lastDone = Date.now()
        share.stalled = false
      }
    }, (err) => {
      this.log.error('outbound delivery failed unexpectedly', { emailId: row.emailId, ...errorFields(err) })
    }).finally(() => {
      this.inFlight.delete(p)
      this.claimedIds.delete(row.emailId)
      if (share) {
        share.active--
        this.refill(share)
      }
      const r = this.slotFreed
      this.slotFreed = null
      r?.()
    })
    this.inFlight.add(p)
  }

  private async senderDomain(projectId: string, from: string): Promise<SigningDomain | null> {
    const key = `${projectId}\0${domainOf(from)}`
    const hit = this.domains.get(key)
    if (hit && Date.now() - hit.at < DOMAIN_TTL_MS) return hit.value
    // The promise is cached, so a batch of messages from one sender looks the domain up once.
    const value = this.opts.store.signingKey(this.deps, projectId, domainOf(from))
    if (this.domains.size > 10_000) this.domains.clear()
    this.domains.set(key, { at: Date.now(), value })
    value.catch(() => this.domains.delete(key))
    return value
  }

  private async message(email: DeliveryEmail, returnPathDomain: string): Promise<OutboundMessage> {
    const attachments = email.hasAttachments ? await this.opts.store.attachments(this.deps, email.id) : []
    return outboundMessage(this.deps, email, attachments, returnPathDomain)
  }

  /** Builds and delivers one message; 'not-started' when it was handed back without an outcome. */
  private async process(row: QueueRow, email: DeliveryEmail): Promise<'settled' | 'not-started'> {
    let settled = false
    let envelopeFrom = ''
    let size: number | null = null
    const settle = async (delivery: Delivery) => {
      if (settled) throw new Error(`outcome of ${email.id} settled twice`)
      settled = true
      const outcome: Outcome = { email, queue: row, delivery, envelopeFrom, size, at: this.deps.clock.date() }
      await this.recorder.record(outcome)
      this.stats.settled++
    }
    const run = async (): Promise<void> => {
      // Stopping: a message not started yet is handed back (its lease is released at the end of stop).
      if (this.stopping) return
      if (email.contentError) return settle({ kind: 'failed', reason: email.contentError })
      const vd = await this.senderDomain(email.projectId, email.fromAddress)
      if (!vd) return settle({ kind: 'failed', reason: `The sender domain ${domainOf(email.fromAddress)} is no longer verified for this project` })
      envelopeFrom = verpAddress(this.deps, email.id, vd.returnPathDomain)
      let raw: Buffer
      try {
        raw = await this.opts.builder.build(await this.message(email, vd.returnPathDomain), { domain: vd.domain, selector: vd.selector, privateKeyPem: vd.privateKeyPem })
      } catch (err) {
        return settle({ kind: 'failed', reason: err instanceof ContentError ? err.message : `The message could not be built: ${err instanceof Error ? err.message : String(err)}` })
      }
      size = raw.length
      if (this.stopping) return
      if (raw.length > MAX_MESSAGE_BYTES) return settle({ kind: 'failed', reason: `The message is ${raw.length} bytes, above the ${MAX_MESSAGE_BYTES}-byte limit` })
      try {
        await this.opts.transport.deliver({ from: envelopeFrom, to: email.toAddress, domain: row.domain }, raw, settle)
        // Not settled: the transport did not start it (stopping: Transport.stopStarting; or shed: Transport.shed).
        if (!settled && this.stopping) this.stats.handedBack++
      } catch (err) {
        if (settled) throw err
        this.log.warn('delivery attempt failed', { emailId: email.id, ...errorFields(err) })
        await settle({ kind: 'deferred', reply: parseReply(`451 4.3.0 ${err instanceof Error ? err.message : String(err)}`), host: null, throttle: false })
      }
    }
    await run()
    return settled ? 'settled' : 'not-started'
  }
}

/**
 * The message of an email as the pipeline builds it (before DKIM signing); also used by GET /emails/:id/headers
 * to show the headers an email went out with.
 */
export function outboundMessage(deps: Pick<Deps, 'config' | 'secret'>, email: DeliveryEmail, attachments: StoredAttachment[], returnPathDomain: string): OutboundMessage {
  return {
    messageId: email.messageId,
    date: email.createdAt.getTime(),
    from: { name: email.fromName, address: email.fromAddress },
    to: { name: email.toName, address: email.toAddress },
    replyTo: email.replyTo,
    subject: email.subject,
    html: email.html,
    text: email.text,
    campaign: email.campaignContent ?? null,
    headers: email.headers,
    attachments: attachments.filter((a) => a.content !== null).map((a) => ({
      filename: a.filename, content: a.content as string, contentType: a.contentType, disposition: a.disposition,
      ...(a.contentId ? { contentId: a.contentId } : {}),
    })),
    listUnsubscribe: email.listUnsubscribe && email.contactId
      ? listUnsubscribeHeaders(deps, { projectId: email.projectId, contactId: email.contactId, emailId: email.id }, unsubscribeAddress(deps, email.id, returnPathDomain))
      : null,
    feedbackId: `${email.campaignId ?? email.sourceType}:${email.projectId}:mailctl`,
    ...(email.sourceType === 'system' && email.sourceId === TLS_REPORT_SOURCE ? { reportType: 'tlsrpt' } : {}),
  }
}
