/** A private redis-server on a free loopback port, for tests that stop it or need it to themselves. */
import type { Subprocess } from 'bun'
import { freePort } from './ports'

export interface PrivateRedis {
  port: number
  url: string
  /** Stops it the way a crash does (SIGKILL), and waits for the exit. */
  kill(): Promise<void>
  /** Starts it again on the same port (after kill). */
  restart(): void
}

export async function startRedis(): Promise<PrivateRedis> {
  const port = freePort()
  const spawn = (): Subprocess => Bun.spawn(['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
  let server = spawn()
  const url = `redis://127.0.0.1:${port}`
  // Listening once it answers a PING on a raw socket.
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      Bun.connect({ hostname: '127.0.0.1', port, socket: {
        open(s) { s.write('PING\r\n') },
        data(s, d) { s.end(); resolve(d.toString().startsWith('+PONG')) },
        error() { resolve(false) },
        connectError() { resolve(false) },
      } }).catch(() => resolve(false))
    })
    if (ok) break
    await Bun.sleep(10)
  }
  return {
    port, url,
    async kill() { server.kill('SIGKILL'); await server.exited },
    restart() { server = spawn() },
  }
}
