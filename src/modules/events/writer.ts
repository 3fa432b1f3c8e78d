import type { Store } from '../../db/client'
import { AppError } from '../../errors'
import { consumersGeneration } from './consumers'
import { declaredInterests } from './interest'
import { eventRow } from './stream'
import { markNotOwed, type RoutedClaim } from './outbox'
import type { OutboxRow } from './repo'
import { eventData, type TrackOutcome, type TrackReused, type TrackWrite } from './track-write'
import { decodeReplies, encodeBatch, type FromWriter, type ToThread, type TrackItem, type TrackReply, type WriterStats } from './writer-protocol'

/**
 * The track writer: on a file-backed SQLite store, the writes of POST /v1/track (Idempotency-Key claim,
 * contact upsert, event row: about half of a track's CPU) run on a thread of their own with its own
 * connection to the database file, so that they use the second core while the main thread serves HTTP.
 *
 * Group commit as in db/group-commit.ts: tracks submitted while the thread commits the previous batch go
 * to it as the next batch, one transaction; each caller is answered after that transaction has committed
 * (as durable as a transaction per track). A write failing in a batch rolls back alone (GroupCommit).
 *
 * Other writes stay on the main thread's connection. SQLite's write lock orders the two writers: each
 * waits for the other's in beginWrite (db/client.ts), retrying without blocking its thread. The one
 * exception: while the thread runs, the outbox drainer's claims go into its commits (`claimOutbox`), so
 * that they do not empty its page cache a few times a second (outbox.ts, OutboxLocal).
 * A second thread checkpoints the WAL, so that the writer's own checkpoints are short (writer-worker.ts).
 * The threads start at the first track and stop after IDLE_MS without tracks (a live worker keeps a
 * process from exiting, and an unref'd one makes Bun's idle main thread spin).
 */

/** The worker's module: next to this file from source; in the executable, by its embedded path. */
const WORKER_ENTRY = import.meta.url.includes('/$bunfs/')
  ? './src/modules/events/writer-worker.ts'
  : new URL('./writer-worker.ts', import.meta.url).href

const IDLE_MS = 2000
const MAX_MESSAGES = 1

interface Job { item: TrackItem; now: Date; resolve(v: TrackOutcome | TrackReused): void; reject(e: Error): void }

/** The event rows of a committed track, from the thread's short answer and what the request had. */
function outcome(job: Job, reply: Extract<TrackReply, { type: 'ok' }>): TrackOutcome {
  const { contactId } = reply
  const row = (id: string, name: string, data: Record<string, unknown>) => eventRow(job.item.projectId, job.now, { contactId, name, data }, id)
  const event = row(reply.eventId, job.item.event, eventData(job.item.data))
  const events = reply.before.length ? [...reply.before.map((e) => row(e.id, e.name, e.data)), event] : [event]
  if (!reply.owed) markNotOwed(events)
  return { contactId, event, events }
}

export class TrackWriter {
  private thread: { worker: Worker; port: MessagePort; checkpointer: { worker: Worker; port: MessagePort } | null } | null = null
  private queue: Job[] = []
  private inflight = new Map<number, Job>()
  private scheduled = false
  /** Batches handed to the thread and not answered yet. */
  private messages = 0
  /** The consumers' generation whose interests the running thread has (-1: none sent yet). */
  private sentInterests = -1
  private nextId = 1
  /** Outbox claims handed to the thread and not answered yet. */
  private claims = new Map<number, { resolve(rows: OutboxRow[]): void; reject(e: Error): void }>()
  private idle: ReturnType<typeof setTimeout> | null = null
  /** stop() was called while outbox claims were pending: it stops once they are answered (shutdown). */
  private stopWanted = false
  /** Batches and writes committed by the thread, and batches rerun with savepoints (benchmarks, tests). */
  stats: WriterStats = { batches: 0, writes: 0, retries: 0 }

  /** `onCommit` runs when the thread reports a commit, before any caller is answered (see Store.refresh). */
  constructor(private readonly url: string, private readonly synchronous: 'FULL' | 'NORMAL', private readonly onCommit: () => void = () => {}) {}

  write(projectId: string, now: Date, t: TrackWrite): Promise<TrackOutcome | TrackReused> {
    if (this.idle) { clearTimeout(this.idle); this.idle = null }
    this.stopWanted = false
    return new Promise<TrackOutcome | TrackReused>((resolve, reject) => {
      const item: TrackItem = { id: this.nextId++, projectId, nowMs: now.getTime(), email: t.email, event: t.event, subscribed: t.subscribed ?? null, data: t.data ?? null, claim: t.claim ?? null }
      this.queue.push({ item, now, resolve, reject })
      if (!this.scheduled && this.messages < MAX_MESSAGES) {
        // Let the requests read in this turn of the loop join the first batch.
        this.scheduled = true
        setImmediate(() => { this.scheduled = false; this.send() })
      }
    })
  }

  /**
   * Has the thread carry an outbox claim (and settlement) in its next commit; null when the thread is not
   * running (no track for IDLE_MS): the drainer then claims on the main thread's connection.
   */
  claimOutbox(c: RoutedClaim): Promise<OutboxRow[]> | null {
    const port = this.thread?.port
    if (!port) return null
    const id = this.nextId++
    return new Promise<OutboxRow[]>((resolve, reject) => {
      this.claims.set(id, { resolve, reject })
      port.postMessage({
        type: 'outbox', id, holder: c.holder, nowMs: c.now.getTime(), untilMs: c.until.getTime(), maxRows: c.maxRows, candidates: c.candidates, settle: c.settle,
      } satisfies ToThread)
    })
  }

  /**
   * Hands everything queued to the thread as one message, unless it is still committing the previous
   * one: tracks arriving meanwhile wait here and go as the next batch, so batches grow with the load.
   */
  private send() {
    if (this.messages >= MAX_MESSAGES || !this.queue.length) return
    const port = this.thread?.port ?? this.start()
    const batch = this.queue
    this.queue = []
    this.messages++
    for (const job of batch) this.inflight.set(job.item.id, job)
    const items = encodeBatch(batch.map((j) => j.item))
    const generation = consumersGeneration()
    const interests = generation === this.sentInterests ? undefined : declaredInterests()
    this.sentInterests = generation
    port.postMessage({ type: 'batch', items, interests } satisfies ToThread, [items])
  }

  private start(): MessagePort {
    this.sentInterests = -1
    // Batches travel on MessageChannels: Worker#postMessage can block the caller for milliseconds while
    // the thread is busy committing (measured on Bun 1.4.5).
    const spawn = (role: 'writer' | 'checkpointer') => {
      const worker = new Worker(WORKER_ENTRY)
      const channel = new MessageChannel()
      const msg: ToThread = role === 'writer'
        ? { type: 'init', role, url: this.url, synchronous: this.synchronous, port: channel.port2 }
        : { type: 'init', role, url: this.url, port: channel.port2 }
      worker.postMessage(msg, [channel.port2])
      return { worker, port: channel.port1 }
    }
    const writer = spawn('writer')
    const checkpointer = spawn('checkpointer')
    writer.port.onmessage = (event: MessageEvent<FromWriter>) => {
      if (event.data.type === 'outbox') {
        const { id, rows, error } = event.data
        const claim = this.claims.get(id)
        this.claims.delete(id)
        this.onCommit()
        if (rows) claim?.resolve(rows)
        else claim?.reject(new Error(`outbox claim on the track writer thread failed: ${error}`))
        // A stop put off for the claims (stop()) happens now; else after the idle delay.
        if (!this.claims.size && !this.messages && !this.queue.length && this.thread) {
          if (this.stopWanted) this.stop()
          else this.idle ??= setTimeout(() => this.stop(), IDLE_MS)
        }
        return
      }
      this.stats = event.data.stats
      this.messages--
      this.onCommit()
      for (const r of decodeReplies(event.data.replies)) {
        const job = this.inflight.get(r.id)
        if (!job) continue
        this.inflight.delete(r.id)
        if (r.type === 'ok') job.resolve(outcome(job, r))
        else if (r.type === 'reused') job.resolve({ reused: r.held })
        else if (r.type === 'refused') job.reject(new AppError(r.code, r.message, r.errors ? { errors: r.errors } : {}))
        else job.reject(new Error(`track write failed: ${r.message}`))
      }
      if (this.queue.length) this.send()
      else if (!this.messages) this.idle = setTimeout(() => this.stop(), IDLE_MS)
    }
    writer.worker.onerror = (event) => this.fail(writer.worker, new Error(`track writer thread failed: ${event.message}`))
    // Without its checkpointer the writer still checkpoints (wal_autocheckpoint), in longer stalls: the
    // writes go on, and the next start of the threads brings a checkpointer back.
    checkpointer.worker.onerror = () => {
      if (this.thread?.checkpointer !== checkpointer) return
      this.thread.checkpointer = null
      checkpointer.port.close()
      checkpointer.worker.terminate()
    }
    this.thread = { worker: writer.worker, port: writer.port, checkpointer }
    return writer.port
  }

  /** The thread died: its batch's outcome is unknown to us, so its callers get an error (a 500). */
  private fail(w: Worker, err: Error) {
    if (this.thread?.worker !== w) return
    const { port, checkpointer } = this.thread
    this.thread = null
    port.close()
    w.terminate()
    checkpointer?.port.close()
    checkpointer?.worker.terminate()
    for (const job of this.inflight.values()) job.reject(err)
    this.inflight.clear()
    for (const claim of this.claims.values()) claim.reject(err)
    this.claims.clear()
    this.messages = 0
    if (this.queue.length) this.send()
  }

  /** Stops the thread once nothing is in flight (it starts again at the next track). */
  stop() {
    if (this.idle) { clearTimeout(this.idle); this.idle = null }
    if (this.claims.size && !this.inflight.size && !this.queue.length) { this.stopWanted = true; return }
    if (this.inflight.size || this.queue.length || this.claims.size || !this.thread) return
    this.stopWanted = false
    // The threads close their connections and exit; a track arriving meanwhile starts new ones.
    const { port, checkpointer } = this.thread
    this.thread = null
    for (const p of checkpointer ? [port, checkpointer.port] : [port]) {
      p.postMessage({ type: 'close' } satisfies ToThread)
      p.close()
    }
  }
}

/**
 * The track writer of `store` (the composition root makes one per store: Deps.runtime.trackWriter): null
 * unless it is a file-backed SQLite database. Its threads start at the first track.
 */
export function openTrackWriter(store: Store, synchronous: 'FULL' | 'NORMAL'): TrackWriter | null {
  // dialect: the track writer thread opens its own connection to a SQLite file
  return store.file !== null ? new TrackWriter(store.url, synchronous, () => store.refresh()) : null
}
