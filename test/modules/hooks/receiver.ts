import { Webhook } from 'standardwebhooks'

/** What a loopback webhook receiver got: the request's headers (lower-case) and body text. */
export interface Received { headers: Record<string, string>; body: string; at: number }

/**
 * A webhook receiver on 127.0.0.1 (the only place the tests send to). `respond` decides each answer and may
 * hang (a dead endpoint) until `releaseAll()`.
 */
export function startReceiver(respond: (n: number, r: Received) => Response | Promise<Response> = () => new Response('ok')) {
  const received: Received[] = []
  const hung: Array<() => void> = []
  const rx = {
    received,
    respond,
    get url() { return `http://127.0.0.1:${server.port}/hook` },
    /** A request that never gets an answer until releaseAll(). */
    hang(): Promise<Response> {
      return new Promise<Response>((resolve) => { hung.push(() => resolve(new Response('late'))) })
    },
    releaseAll() { for (const h of hung.splice(0)) h() },
    stop() { rx.releaseAll(); server.stop(true) },
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const headers: Record<string, string> = {}
      req.headers.forEach((v, k) => { headers[k] = v })
      const r: Received = { headers, body: await req.text(), at: Date.now() }
      received.push(r)
      return rx.respond(received.length, r)
    },
  })
  return rx
}

/** Verifies a received message with the standardwebhooks package, as a receiver would; returns the payload. */
export function verified(secret: string, r: Received): Record<string, unknown> {
  return new Webhook(secret).verify(r.body, r.headers) as Record<string, unknown>
}
