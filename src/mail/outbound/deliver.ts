/**
 * The one outbound pipeline (send, campaigns, workflows, the relay): claim due messages from the
 * outbound queue in batches, build and DKIM-sign each (signer pool), hand it to the transport with a VERP
 * return-path, and record each outcome durably (recorder.ts) before its connection carries anything else.
 *
 * Crash safety: a message is in the queue until the transaction recording its final outcome deletes it;
 * a claim is a lease (run_at moves to the lease's end), so after a crash every unfinished message becomes
 * due again and is delivered by whichever node claims it. Only messages whose 250 had not been recorded
 * when the process died (at most one per open connection) can reach their host a second time.
 */
import { ctxFor, type Deps } from '../../deps'
import { errorFields, type Logger } from '../../log'
import { signingKeyFor, type VerifiedDomain } from '../../modules/domains/service'
import * as emailsRepo from '../../modules/emails/repo'
import type { DeliveryEmail } from '../../modules/emails/repo'
import { listUnsubscribeHeaders } from '../links'
import { domainOf, type OutboundMessage } from '../mime'
import type { MessageBuilder } from '../signer'
import { holders, release, releaseDead, renew, renewAfterMs, Wakeups } from '../../jobs/lease'
import { claimDue, outboundLeases, type QueueRow } from './queue'
import { OutcomeRecorder, type Outcome } from './recorder'
import { parseReply } from './replies'
import type { Delivery, Transport } from './types'
import { verpAddress } from './verp'

/** The largest message accepted for delivery (API.md Limits: 40 MB). */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024

/** "Mail was queued": wakes this process's pipelines at once, and other nodes' through Redis. */
export const outboundWakeups = new Wakeups('outbound')

export interface PipelineOptions {
  transport: Transport
  builder: MessageBuilder
  workerId?: string
  /** Messages claimed per query. */
  batchSize?: number
  /** Messages being built, sent or recorded at once (across destinations). */
  maxInFlight?: number
  leaseMs?: number
  /** Poll interval when idle (wake-ups make queued mail go at once). */
  pollMs?: number
  throttleDelayMs?: number
  log?: Logger
}

interface DomainEntry { at: number; value: Promise<VerifiedDomain | null> }

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
  /** Counters since start (tests, diagnostics). */
  readonly stats = { claimed: 0, settled: 0 }

  constructor(private deps: Deps, private opts: PipelineOptions) {
    this.workerId = opts.workerId ?? holders.newId()
    const onWire = opts.transport.onWire?.bind(opts.transport)
    this.recorder = new OutcomeRecorder(deps, { workerId: this.workerId, throttleDelayMs: opts.throttleDelayMs, onWire })
    this.log = opts.log ?? deps.log
  }

  get transport(): Transport { return this.opts.transport }

  private get leaseMs(): number { return this.opts.leaseMs ?? 5 * 60_000 }

  start(): void {
    if (this.running) return
    this.running = true
    this.unlisten = outboundWakeups.on(() => this.wake())
    const leases = outboundLeases(this.deps.store)
    this.heartbeat = setInterval(() => {
      renew(this.deps.store, leases, this.workerId, [...this.claimedIds], this.leaseMs)
        .catch((err) => this.log.error('outbound lease renewal failed', errorFields(err)))
    }, Math.max(1000, Math.floor(renewAfterMs(this.leaseMs))))
    this.loopDone = (async () => {
      // Messages a crashed process on this host had claimed are due again now, not at lease expiry.
      try {
        const released = await releaseDead(this.deps.store, leases)
        if (released) this.log.info('released the leases of a dead process', { messages: released })
      } catch (err) {
        this.log.warn('releasing dead leases failed', errorFields(err))
      }
      await this.loop()
    })()
  }

  /**
   * Stops claiming, lets in-flight messages finish and be recorded, hands back any lease still held (a
   * message whose outcome could not be recorded), then closes the transport.
   */
  async stop(): Promise<void> {
    this.running = false
    this.unlisten?.()
    this.unlisten = null
    this.wake()
    this.slotFreed?.()
    await this.loopDone
    await Promise.allSettled([...this.inFlight])
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.heartbeat = null
    await this.recorder.idle()
    try {
      const released = await release(this.deps.store, outboundLeases(this.deps.store), this.workerId)
      if (released) this.log.info('released outbound leases at stop', { messages: released })
    } catch (err) {
      this.log.warn('releasing outbound leases at stop failed', errorFields(err))
    }
    await this.opts.transport.close()
    await this.opts.builder.close()
  }

  wake(): void {
    const r = this.wakeResolve
    this.wakeResolve = null
    r?.()
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.wakeResolve = null; resolve() }, ms)
      this.wakeResolve = () => { clearTimeout(timer); resolve() }
    })
  }

  private async loop(): Promise<void> {
    const max = this.opts.maxInFlight ?? 1000
    const batch = this.opts.batchSize ?? 100
    while (this.running) {
      const free = max - this.inFlight.size
      if (free < Math.min(batch, max) / 2) {
        await new Promise<void>((resolve) => { this.slotFreed = resolve })
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
    let n = 0
    for (;;) {
      const claimed = await this.claimAndStart(this.opts.batchSize ?? 100)
      n += claimed
      if (!claimed && !this.inFlight.size) break
      if (this.inFlight.size) await Promise.allSettled([...this.inFlight])
    }
    await this.recorder.idle()
    return n
  }

  private async claimAndStart(limit: number): Promise<number> {
    const rows = await claimDue(this.deps.store, this.workerId, limit, this.leaseMs)
    if (!rows.length) return 0
    this.stats.claimed += rows.length
    for (const r of rows) this.claimedIds.add(r.emailId)
    const emails = new Map((await emailsRepo.loadForDelivery(this.deps.store, rows.map((r) => r.emailId))).map((e) => [e.id, e]))
    for (const row of rows) {
      const email = emails.get(row.emailId)
      // The email row is gone only if its project was deleted between claim and load: nothing to send.
      if (!email) { this.claimedIds.delete(row.emailId); continue }
      const p: Promise<void> = this.process(row, email).catch((err) => {
        this.log.error('outbound delivery failed unexpectedly', { emailId: row.emailId, ...errorFields(err) })
      }).finally(() => {
        this.inFlight.delete(p)
        this.claimedIds.delete(row.emailId)
        const r = this.slotFreed
        this.slotFreed = null
        r?.()
      })
      this.inFlight.add(p)
    }
    return rows.length
  }

  private async senderDomain(projectId: string, from: string): Promise<VerifiedDomain | null> {
    const key = `${projectId}\0${domainOf(from)}`
    const hit = this.domains.get(key)
    if (hit && Date.now() - hit.at < DOMAIN_TTL_MS) return hit.value
    // The promise is cached, so a batch of messages from one sender looks the domain up once.
    const value = signingKeyFor(ctxFor(this.deps, projectId, { kind: 'job', name: 'outbound' }), domainOf(from))
    if (this.domains.size > 10_000) this.domains.clear()
    this.domains.set(key, { at: Date.now(), value })
    value.catch(() => this.domains.delete(key))
    return value
  }

  private async message(email: DeliveryEmail): Promise<OutboundMessage> {
    const attachments = email.hasAttachments ? await emailsRepo.loadAttachments(this.deps.store, email.id) : []
    return {
      messageId: email.messageId,
      date: email.createdAt.getTime(),
      from: { name: email.fromName, address: email.fromAddress },
      to: { name: email.toName, address: email.toAddress },
      replyTo: email.replyTo,
      subject: email.subject,
      html: email.html,
      text: email.text,
      headers: email.headers,
      attachments: attachments.filter((a) => a.content !== null).map((a) => ({
        filename: a.filename, content: a.content as string, contentType: a.contentType, disposition: a.disposition,
        ...(a.contentId ? { contentId: a.contentId } : {}),
      })),
      listUnsubscribe: email.listUnsubscribe && email.contactId
        ? listUnsubscribeHeaders(this.deps, { projectId: email.projectId, contactId: email.contactId, emailId: email.id })
        : null,
      feedbackId: `${email.campaignId ?? email.sourceType}:${email.projectId}:mailctl`,
    }
  }

  private async process(row: QueueRow, email: DeliveryEmail): Promise<void> {
    let settled = false
    let envelopeFrom = ''
    let size: number | null = null
    const settle = async (delivery: Delivery) => {
      if (settled) throw new Error(`outcome of ${email.id} settled twice`)
      settled = true
      const outcome: Outcome = { email, queue: row, delivery, envelopeFrom, size, at: new Date() }
      await this.recorder.record(outcome)
      this.stats.settled++
    }
    const vd = await this.senderDomain(email.projectId, email.fromAddress)
    if (!vd) return settle({ kind: 'failed', reason: `The sender domain ${domainOf(email.fromAddress)} is no longer verified for this project` })
    envelopeFrom = verpAddress(this.deps, email.id, vd.returnPathDomain)
    let raw: Buffer
    try {
      raw = await this.opts.builder.build(await this.message(email), { domain: vd.domain, selector: vd.selector, privateKeyPem: vd.privateKeyPem })
    } catch (err) {
      return settle({ kind: 'failed', reason: `The message could not be built: ${err instanceof Error ? err.message : String(err)}` })
    }
    size = raw.length
    if (raw.length > MAX_MESSAGE_BYTES) return settle({ kind: 'failed', reason: `The message is ${raw.length} bytes, above the ${MAX_MESSAGE_BYTES}-byte limit` })
    try {
      await this.opts.transport.deliver({ from: envelopeFrom, to: email.toAddress, domain: row.domain }, raw, settle)
    } catch (err) {
      if (settled) throw err
      this.log.warn('delivery attempt failed', { emailId: email.id, ...errorFields(err) })
      await settle({ kind: 'deferred', reply: parseReply(`451 4.3.0 ${err instanceof Error ? err.message : String(err)}`), host: null, throttle: false })
    }
  }
}
