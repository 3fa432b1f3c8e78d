/**
 * Worker thread of the signer pool (src/mail/signer.ts): builds and DKIM-signs messages off the main
 * thread. It is also an entry point of `bun build --compile` (package.json "build"), so it exists inside
 * the compiled executable.
 */
import { setPriority } from 'node:os'
import { keepHeapSmall } from '../heap'
import { ContentError } from './render/campaign'
import type { LinkDeps } from './links'
import { dataContent } from './outbound/data-content'
import { buildOutbound, type SignerInit, type SignRequest, type SignResponse } from './signer'

declare const self: Worker

/** The signer threads' nice value (0 to 19; higher yields more). */
const SIGNER_NICE = 5

// Signing is throughput work that queues up ahead of delivery; the main thread (HTTP, the database, the
// SMTP sessions, commits) is on every message's critical path and is a single thread. On Linux a nice
// value set with pid 0 applies to the calling thread only, so this thread yields the CPU to the main
// thread when both want it, and uses every idle moment otherwise. Elsewhere it may apply to the whole
// process or fail: then it is not done.
if (process.platform === 'linux') {
  try { setPriority(0, SIGNER_NICE) } catch { /* not permitted: same priority as the main thread */ }
}

let links: LinkDeps | null = null

self.onmessage = async (event: MessageEvent<SignRequest[] | SignerInit>) => {
  if (!Array.isArray(event.data)) {
    // The pool's first message: this thread's heap is kept small like the main thread's (src/heap.ts).
    keepHeapSmall({ growthBytes: event.data.heapGrowthBytes })
    links = event.data.links
    return
  }
  const out: SignResponse[] = []
  const transfer: ArrayBuffer[] = []
  for (const { id, message, key } of event.data) {
    try {
      const built = await buildOutbound(message, key, links)
      // Its DATA content too, when the message is its start (no line needed a dot doubled): the main thread
      // then sends it as it is (messageOfData in src/mail/outbound/data-content.ts).
      const data = dataContent(built)
      const prepared = data.length > built.length && data.subarray(0, built.length).equals(built)
      const buf = prepared ? data : built
      // An ArrayBuffer of exactly that, so it can be transferred (small Buffers share a pool).
      let raw: Uint8Array<ArrayBuffer>
      if (buf.byteOffset === 0 && buf.buffer.byteLength === buf.length && buf.buffer instanceof ArrayBuffer) raw = new Uint8Array(buf.buffer)
      else { raw = new Uint8Array(buf.length); raw.set(buf) }
      out.push(prepared ? { id, raw, messageLength: built.length } : { id, raw })
      transfer.push(raw.buffer)
    } catch (err) {
      out.push({ id, error: err instanceof Error ? err.message : String(err), ...(err instanceof ContentError ? { content: true } : {}) })
    }
  }
  // One reply per batch: the main thread is answered once, when every message of the batch is built.
  self.postMessage(out, transfer)
}
