/**
 * A pool of worker threads that build and DKIM-sign outbound messages, so signing (about 0.7 ms of CPU
 * per RSA-2048 signature, plus MIME building) uses every core while the main thread serves HTTP, the
 * database and SMTP. With `size: 0` messages are built inline (tests, tiny installs).
 */
import { availableParallelism } from 'node:os'
import type { DkimKey } from './dkim'
import { buildMessage, type OutboundMessage } from './mime'

export interface SignRequest { id: number; message: OutboundMessage; key: DkimKey | null }
export type SignResponse = { id: number; raw: Uint8Array; error?: undefined } | { id: number; error: string; raw?: undefined }

interface Pending { resolve(b: Buffer): void; reject(e: Error): void }

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
}

/** Builds messages on the calling thread. */
export const inlineBuilder: MessageBuilder = {
  build: (message, key) => buildMessage(message, key),
  async close() {},
}

class WorkerSlot {
  readonly worker: Worker
  readonly pending = new Map<number, Pending>()
  constructor(onDead: (slot: WorkerSlot, err: Error) => void) {
    this.worker = new Worker(WORKER_ENTRY)
    this.worker.onmessage = (event: MessageEvent<SignResponse>) => {
      const res = event.data
      const p = this.pending.get(res.id)
      if (!p) return
      this.pending.delete(res.id)
      if (res.error !== undefined) p.reject(new Error(`message build failed: ${res.error}`))
      else p.resolve(Buffer.from(res.raw.buffer, res.raw.byteOffset, res.raw.byteLength))
    }
    this.worker.onerror = (event) => onDead(this, new Error(`signer worker crashed: ${event.message}`))
    ;(this.worker as unknown as { unref(): void }).unref()
  }
}

/** A pool of `size` worker threads (default: one per core). Requests go to the least busy worker. */
export class SignerPool implements MessageBuilder {
  private slots: WorkerSlot[] = []
  private seq = 0
  private closed = false

  constructor(readonly size = availableParallelism()) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn())
  }

  private spawn(): WorkerSlot {
    return new WorkerSlot((slot, err) => {
      for (const p of slot.pending.values()) p.reject(err)
      slot.pending.clear()
      const i = this.slots.indexOf(slot)
      if (i >= 0 && !this.closed) this.slots[i] = this.spawn()
    })
  }

  build(message: OutboundMessage, key: DkimKey | null): Promise<Buffer> {
    if (this.closed || !this.slots.length) return buildMessage(message, key)
    let slot = this.slots[0]
    for (const s of this.slots) if (s.pending.size < slot.pending.size) slot = s
    const id = ++this.seq
    return new Promise<Buffer>((resolve, reject) => {
      slot.pending.set(id, { resolve, reject })
      const req: SignRequest = { id, message, key }
      slot.worker.postMessage(req)
    })
  }

  async close(): Promise<void> {
    this.closed = true
    for (const s of this.slots) {
      for (const p of s.pending.values()) p.reject(new Error('signer pool closed'))
      s.pending.clear()
      s.worker.terminate()
    }
    this.slots = []
  }
}
