/**
 * Adaptive throttles: a receiver that answers 421 above 2 concurrent connections and 451
 * "rate limited" above 50 messages/s. Every message must arrive, with deferrals a small fraction of the
 * messages and a total time close to what the receiver allows (the ceiling: messages / 50 per second).
 *
 *   node_modules/.bin/bun bench/adaptive-throttle.ts
 *     BENCH_MESSAGES=5000
 *     BENCH_MAX_CONNECTIONS=2  BENCH_MAX_RATE=50
 *     BENCH_DATABASE_URL=pg    a fresh PostgreSQL database (default: a fresh SQLite file)
 *
 * The server (`mailctl serve`, direct MX delivery through a loopback DNS server, DKIM on) and this script,
 * which serves the DNS zone and the limiting receiver. Prints the time, the receiver's refusals (421 at
 * connect, 451 at DATA), the messages deferred at least once, and the ratio of the ceiling's time to the
 * time taken (1: as fast as the receiver allows). Asserts nothing.
 */
import { startTestDns } from '../test/helpers/dns'
import { benchProject, benchStore, runCleanups, serverEnv, startServer } from './_mailctl'

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000)
const MAX_CONNECTIONS = Number(process.env.BENCH_MAX_CONNECTIONS ?? 2)
const MAX_RATE = Number(process.env.BENCH_MAX_RATE ?? 50)

const store = await benchStore('throttle')
const cleanups = store.cleanups

try {
  const dns = await startTestDns()
  cleanups.unshift(() => dns.close())

  // The limiting receiver: counts what it accepts and what it refuses.
  let open = 0
  let accepted = 0
  let refusedConnections = 0
  let refusedRate = 0
  let firstAt = 0
  let lastAt = 0
  const recent: number[] = []
  const deferredIds = new Set<string>()
  interface S { buf: string; data: boolean; tail: string; refused: boolean; rcpt: string }
  const receiver = Bun.listen<S>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: '', data: false, tail: '', refused: false, rcpt: '' }
        open++
        if (open > MAX_CONNECTIONS) {
          refusedConnections++
          s.data.refused = true
          s.write('421 4.7.0 Too many concurrent connections, try again later\r\n')
          s.end()
          return
        }
        s.write('220 limited.bench ESMTP\r\n')
      },
      close() { open-- },
      data(s, chunk) {
        if (s.data.refused) return
        let text = chunk.toString('latin1')
        while (text.length) {
          if (s.data.data) {
            const scan = s.data.tail + text
            const end = scan.indexOf('\r\n.\r\n')
            if (end < 0) { s.data.tail = scan.slice(-4); return }
            text = text.slice(end + 5 - s.data.tail.length)
            s.data.tail = ''
            s.data.data = false
            const now = Date.now()
            while (recent.length && recent[0] <= now - 1000) recent.shift()
            if (recent.length >= MAX_RATE) {
              refusedRate++
              deferredIds.add(s.data.rcpt)
              s.write('451 4.7.1 Rate limited: too many messages, slow down\r\n')
            } else {
              recent.push(now)
              accepted++
              if (!firstAt) firstAt = now
              lastAt = now
              s.write('250 2.0.0 OK\r\n')
            }
            continue
          }
          const nl = text.indexOf('\r\n')
          if (nl < 0) { s.data.buf += text; return }
          const line = (s.data.buf + text.slice(0, nl)).toUpperCase()
          s.data.buf = ''
          text = text.slice(nl + 2)
          if (line.startsWith('EHLO')) s.write('250-limited.bench\r\n250 PIPELINING\r\n')
          else if (line.startsWith('DATA')) { s.data.data = true; s.write('354 go\r\n') }
          else if (line.startsWith('RCPT')) { s.data.rcpt = line; s.write('250 OK\r\n') }
          else if (line.startsWith('QUIT')) { s.write('221 bye\r\n'); s.end() }
          else s.write('250 OK\r\n')
        }
      },
    },
  })
  cleanups.unshift(() => receiver.stop(true))
  dns.set('limited.test', [{ type: 'MX', exchange: 'mx.limited.test', priority: 10 }])
  dns.set('mx.limited.test', [{ type: 'A', address: '127.0.0.1' }])

  const env = await serverEnv(store, dns, receiver.port)
  const { secretKey } = await benchProject(env, dns)
  const server = await startServer(env)
  cleanups.unshift(async () => { server.proc.kill('SIGTERM'); await server.proc.exited })
  const base = server.base
  const headers = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' }
  const start = performance.now()
  for (let i = 0; i < MESSAGES; i += 1000) {
    const to = Array.from({ length: Math.min(1000, MESSAGES - i) }, (_, k) => `u${i + k}@limited.test`)
    const res = await fetch(`${base}/v1/send`, { method: 'POST', headers, body: JSON.stringify({ from: 'hello@bench-sender.test', subject: 'Hello', body: '<p>Hello</p>', to }) })
    if (res.status !== 200) throw new Error(`send: ${res.status} ${await res.text()}`)
  }
  const deadline = Date.now() + 1_800_000
  let shown = Date.now()
  while (accepted < MESSAGES && Date.now() < deadline) {
    await Bun.sleep(50)
    if (Date.now() - shown > 10_000) { shown = Date.now(); process.stderr.write(`bench: ${accepted} of ${MESSAGES} accepted\n`) }
  }
  const seconds = (performance.now() - start) / 1000
  const ceilingSeconds = MESSAGES / MAX_RATE
  console.log(JSON.stringify({
    store: store.kind,
    messages: MESSAGES, accepted, receiverLimits: { connections: MAX_CONNECTIONS, messagesPerSecond: MAX_RATE },
    seconds: Math.round(seconds * 10) / 10,
    acceptingSeconds: Math.round((lastAt - firstAt) / 100) / 10,
    ceilingSeconds,
    ratioCeilingToTime: Math.round((ceilingSeconds / seconds) * 1000) / 1000,
    refusals: { connections421: refusedConnections, rate451: refusedRate },
    messagesDeferredAtLeastOnce: deferredIds.size,
    deferredShare: Math.round((deferredIds.size / MESSAGES) * 10000) / 10000,
    loadAverage: require('node:os').loadavg().map((v: number) => Math.round(v * 100) / 100),
  }, null, 2))
} finally {
  await runCleanups(store)
}
