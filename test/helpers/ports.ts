/**
 * A loopback port free at the time of the call, for a server a test starts in another process. The port
 * is the kernel's pick (bind to 0), so it does not clash with other tests' servers as a random pick can;
 * it is released before it is returned, so another process could still take it in between.
 */
export function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}
