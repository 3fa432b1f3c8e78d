/**
 * Worker thread of the signer pool (src/mail/signer.ts): builds and DKIM-signs messages off the main
 * thread. It is also an entry point of `bun build --compile` (package.json "build"), so it exists inside
 * the compiled executable.
 */
import { buildMessage } from './mime'
import type { SignRequest, SignResponse } from './signer'

declare const self: Worker

self.onmessage = async (event: MessageEvent<SignRequest[]>) => {
  const out: SignResponse[] = []
  const transfer: ArrayBuffer[] = []
  for (const { id, message, key } of event.data) {
    try {
      const buf = await buildMessage(message, key)
      // An ArrayBuffer of exactly the message, so it can be transferred (small Buffers share a pool).
      let raw: Uint8Array<ArrayBuffer>
      if (buf.byteOffset === 0 && buf.buffer.byteLength === buf.length && buf.buffer instanceof ArrayBuffer) raw = new Uint8Array(buf.buffer)
      else { raw = new Uint8Array(buf.length); raw.set(buf) }
      out.push({ id, raw })
      transfer.push(raw.buffer)
    } catch (err) {
      out.push({ id, error: err instanceof Error ? err.message : String(err) })
    }
  }
  // One reply per batch: the main thread is answered once, when every message of the batch is built.
  self.postMessage(out, transfer)
}
