/**
 * A loopback TCP proxy in front of a server (the shared PostgreSQL), whose connections a test cuts at the
 * moment it chooses: the way to lose a database connection at an exact point without stopping the server
 * that other tests use. It keeps listening after a cut, so new connections reach the server again.
 */
import { createServer, type Server, Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /** Connections made through the proxy so far. */
  readonly accepted: number
  /**
   * Cuts every open connection: `end` closes both sides cleanly (FIN, as a server that exits),
   * `reset` aborts the client's side (RST: the client's socket fails with ECONNRESET).
   * Resolves once the client's side of each is closed at the proxy.
   */
  cut(how: 'end' | 'reset'): Promise<void>
  /**
   * Cuts every open connection as `cut` does at the moment a client sends `text` (a statement's SQL): the
   * data that holds it never reaches the server. Resolves once cut.
   */
  cutAt(text: string, how: 'end' | 'reset'): Promise<void>
  /** From now on, what clients send never reaches the server (a server that stopped answering), on every connection. */
  freeze(): void
  close(): Promise<void>
}

export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; server: Socket }>()
  let accepted = 0
  /** The text a client's data is watched for (cutAt), and what to do when it is seen. */
  let watch: { text: Buffer; seen: () => void } | null = null
  let frozen = false
  const server: Server = createServer((client) => {
    accepted++
    const upstream = new Socket()
    const pair = { client, server: upstream }
    pairs.add(pair)
    const drop = () => { pairs.delete(pair); client.destroy(); upstream.destroy() }
    client.on('error', drop)
    upstream.on('error', drop)
    client.on('close', drop)
    upstream.on('close', drop)
    upstream.connect(port, host, () => {
      // The end of the previous chunk, so that a text split between two chunks is seen too.
      let tail = Buffer.alloc(0)
      client.on('data', (chunk: Buffer) => {
        if (frozen) return
        if (watch) {
          const data = Buffer.concat([tail, chunk])
          if (data.includes(watch.text)) {
            const seen = watch.seen
            watch = null
            seen()
            return
          }
          tail = data.subarray(Math.max(0, data.length - watch.text.length + 1))
        }
        if (!upstream.write(chunk)) {
          client.pause()
          upstream.once('drain', () => client.resume())
        }
      })
      client.on('end', () => upstream.end())
      upstream.pipe(client)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  async function cut(how: 'end' | 'reset') {
    const closed: Array<Promise<void>> = []
    for (const { client, server: upstream } of pairs) {
      closed.push(new Promise<void>((resolve) => {
        if (client.destroyed) resolve()
        else client.once('close', () => resolve())
      }))
      upstream.unpipe(client)
      client.removeAllListeners('data')
      upstream.destroy()
      if (how === 'reset') client.resetAndDestroy()
      else client.end()
    }
    pairs.clear()
    await Promise.all(closed)
  }
  return {
    port: (server.address() as { port: number }).port,
    get accepted() { return accepted },
    cut,
    freeze: () => { frozen = true },
    cutAt: (text, how) => new Promise<void>((resolve, reject) => {
      watch = { text: Buffer.from(text), seen: () => { cut(how).then(resolve, reject) } }
    }),
    close: () => new Promise<void>((resolve) => {
      for (const { client, server: upstream } of pairs) { client.destroy(); upstream.destroy() }
      server.close(() => resolve())
    }),
  }
}
