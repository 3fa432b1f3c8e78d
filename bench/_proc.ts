import { createServer } from 'node:net'

/** Helpers of the benches that drive child processes (send, campaign, workflows). */

/** A TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** Reads JSON lines from a child's stdout, calling `on` for each. */
export function lines(stream: ReadableStream<Uint8Array>, on: (rec: Record<string, unknown>) => void) {
  const reader = stream.getReader()
  const dec = new TextDecoder()
  let buf = ''
  return (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buf += dec.decode(value, { stream: true })
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        try { on(JSON.parse(line) as Record<string, unknown>) } catch { /* not JSON */ }
      }
    }
  })()
}
