/**
 * Worker thread of the signer pool (src/mail/signer.ts): builds and DKIM-signs messages off the main
 * thread. It is also an entry point of `bun build --compile` (package.json "build"), so it exists inside
 * the compiled executable.
 */
import { buildMessage } from './mime'
import type { SignRequest, SignResponse } from './signer'

declare const self: Worker

self.onmessage = async (event: MessageEvent<SignRequest>) => {
  const { id, message, key } = event.data
  try {
    const buf = await buildMessage(message, key)
    // A fresh ArrayBuffer of exactly the message, so it can be transferred (Buffers may share a pool).
    const out = new Uint8Array(buf.length)
    out.set(buf)
    const res: SignResponse = { id, raw: out }
    self.postMessage(res, [out.buffer])
  } catch (err) {
    const res: SignResponse = { id, error: err instanceof Error ? err.message : String(err) }
    self.postMessage(res)
  }
}
