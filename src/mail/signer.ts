/**
 * A pool of worker threads that build and DKIM-sign outbound messages, so signing (about 0.6-0.7 ms of
 * CPU per RSA-2048 signature, plus MIME building, plus rendering for campaign mail) uses every core while
 * the main thread serves HTTP, the database and SMTP. With `size: 0` messages are built inline (tests,
 * tiny installs).
 */
import { availableParallelism } from 'node:os'
import { ContentError, renderCampaignContent } from './render/campaign'
import type { DkimKey } from './dkim'
import type { LinkDeps } from './links'
import { buildMessage, type OutboundMessage } from './mime'
import { messageOfData } from './outbound/data-content'

export interface SignRequest { id: number; message: OutboundMessage; key: DkimKey | null }
/** The pool's first message to a thread: its heap keeper, and what campaign messages' links are signed with. */
export interface SignerInit { heapGrowthBytes: number; links: LinkDeps | null }
/**
 * `raw`: the message; or, with `messageLength`, its DATA content (`dataContent`), whose first
 * `messageLength` bytes are the message (no line needed a dot doubled). `content`: the error is a campaign
 * message that cannot be rendered (ContentError), its message the reason as is.
 */
export type SignResponse = { id: number; raw: Uint8Array; messageLength?: number; error?: undefined } | { id: number; error: string; content?: boolean; raw?: undefined }

/**
 * Builds one message. A campaign message's HTML and text are rendered first, here: in a signer thread
 * this takes the rendering, its link signatures and its garbage off the main thread, and the thread is
 * posted the contact's data instead of the rendered body (the campaign's body, shared by the messages of
 * a batch, is copied once per post).
 */
export function buildOutbound(message: OutboundMessage, key: DkimKey | null, links: LinkDeps | null): Promise<Buffer> {
  if (message.campaign) {
    if (!links) return Promise.reject(new ContentError('The campaign could not be rendered: the message builder has no link secret'))
    try {
      const { html, text, htmlEncoded } = renderCampaignContent(links, message.campaign)
      message = { ...message, html, text, htmlEncoded, campaign: null }
    } catch (err) {
      return Promise.reject(err)
    }
  }
  return buildMessage(message, key)
}

/**
 * The worker's module. From source, next to this file. In the executable (`npm run build` gives
 * src/mail/signer-worker.ts as a second entry point), embedded entry points are named by their path
 * under the entry points' common directory (the project root), so the path is spelled from there.
 */
const WORKER_ENTRY = import.meta.url.includes('/$bunfs/')
  ? './src/mail/signer-worker.ts'
  : new URL('./signer-worker.ts', import.meta.url).href

export interface MessageBuilder {
  build(message: OutboundMessage, key: DkimKey | null): Promise<Buffer>
  close(): Promise<void>
  /**
   * Messages the builder takes in at once (being built, or posted to a thread and waiting their turn
   * there): a destination's share of the pipeline covers these on top of what its connections carry
   * (deliver.ts), or the share runs out while the threads still have room.
   */
  readonly holds: number
}

/** Builds messages on the calling thread. */
export function inlineBuilder(links: LinkDeps | null): MessageBuilder {
  return {
    build: (message, key) => buildOutbound(message, key, links),
    async close() {},
    holds: 0,
  }
}

/** Batches posted to one thread and not answered yet, at most. */
const BATCHES_PER_THREAD = 2

interface Job { id: number; message: OutboundMessage; key: DkimKey | null; resolve(b: Buffer): void; reject(e: Error): void }

class WorkerSlot {
  readonly worker: Worker
  /** Jobs handed to this worker and not answered yet. */
  readonly pending = new Map<number, Job>()
  /** Batches posted to this worker and not answered yet. */
  batches = 0
  constructor(onReply: (slot: WorkerSlot) => void, onDead: (slot: WorkerSlot, err: Error) => void, init: SignerInit) {
    this.worker = new Worker(WORKER_ENTRY)
    this.worker.postMessage(init)
    this.worker.onmessage = (event: MessageEvent<SignResponse[]>) => {
      this.batches--
      for (const res of event.data) {
        const job = this.pending.get(res.id)
        if (!job) continue
        this.pending.delete(res.id)
        if (res.error !== undefined) job.reject(res.content ? new ContentError(res.error) : new Error(`message build failed: ${res.error}`))
        else {
          const buf = Buffer.from(res.raw.buffer, res.raw.byteOffset, res.raw.byteLength)
          job.resolve(res.messageLength === undefined ? buf : messageOfData(buf, res.messageLength))
        }
      }
      onReply(this)
    }
    this.worker.onerror = (event) => onDead(this, new Error(`signer worker crashed: ${event.message}`))
    // Not unref()'d: on Bun 1.4 a process whose only pending work is an unref'd worker spins its main
    // thread at 100% CPU while waiting. The owner closes the pool (OutboundPipeline.stop).
  }
}

/**
 * A pool of `size` worker threads (default: one per core). Jobs wait in one queue and go to the threads
 * in batches of up to 32 (~15-30 ms of signing). Each thread has up to two batches posted: while it
 * builds one, the next waits in its inbox, so a thread that answers starts again at once instead of
 * waiting for the main thread to get to its reply (a turn of the main thread's event loop: HTTP, commits,
 * collections). With one batch per thread, the threads waited that way about 13 % of their time during a
 * campaign (30,000 recipients, about 1.5 s of each thread's 11 s).
 */
export class SignerPool implements MessageBuilder {
  private slots: WorkerSlot[] = []
  private queue: Job[] = []
  private seq = 0
  private closed = false
  readonly holds: number

  /**
   * `heapGrowthBytes`: each thread's heap keeper (src/heap.ts; 0: none). `links`: the secret and public URL
   * campaign messages' links are signed with (null: a campaign message is refused with a ContentError).
   */
  constructor(readonly size = availableParallelism(), private readonly batch = 32, private readonly heapGrowthBytes = 0, private readonly links: LinkDeps | null = null) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn())
    this.holds = size * batch * BATCHES_PER_THREAD
  }

  private spawn(): WorkerSlot {
    return new WorkerSlot((slot) => this.feed(slot), (slot, err) => {
      for (const job of slot.pending.values()) job.reject(err)
      slot.pending.clear()
      const i = this.slots.indexOf(slot)
      if (i >= 0 && !this.closed) {
        this.slots[i] = this.spawn()
        this.feed(this.slots[i])
      }
    }, { heapGrowthBytes: this.heapGrowthBytes, links: this.links })
  }

  /** Hands the next batch of queued jobs to a worker that has room for one. */
  private feed(slot: WorkerSlot) {
    if (slot.batches >= BATCHES_PER_THREAD || !this.queue.length || this.closed) return
    const jobs = this.queue.splice(0, Math.max(1, Math.ceil(Math.min(this.batch, this.queue.length / this.slots.length))))
    const reqs: SignRequest[] = jobs.map((j) => ({ id: j.id, message: j.message, key: j.key }))
    for (const j of jobs) slot.pending.set(j.id, j)
    slot.batches++
    slot.worker.postMessage(reqs)
  }

  /** Batches posted to each thread and not answered yet (diagnostics, tests). */
  get posted(): number[] {
    return this.slots.map((s) => s.batches)
  }

  build(message: OutboundMessage, key: DkimKey | null): Promise<Buffer> {
    if (this.closed || !this.slots.length) return buildOutbound(message, key, this.links)
    return new Promise<Buffer>((resolve, reject) => {
      this.queue.push({ id: ++this.seq, message, key, resolve, reject })
      // An idle thread starts at once. A busy one is given its next batch once a whole batch waits (or
      // when it answers): posting each message as it comes would make batches of one.
      let best: WorkerSlot | null = null
      for (const slot of this.slots) if (slot.batches < BATCHES_PER_THREAD && (!best || slot.batches < best.batches)) best = slot
      if (best && (best.batches === 0 || this.queue.length >= this.batch)) this.feed(best)
    })
  }

  async close(): Promise<void> {
    this.closed = true
    const closed = new Error('signer pool closed')
    for (const job of this.queue.splice(0)) job.reject(closed)
    for (const s of this.slots) {
      for (const job of s.pending.values()) job.reject(closed)
      s.pending.clear()
      s.worker.terminate()
    }
    this.slots = []
  }
}
