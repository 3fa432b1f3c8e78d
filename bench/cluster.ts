/**
 * Several nodes on PostgreSQL: /v1/track and campaign delivery with 1 node and with 2 nodes
 * (real `mailctl serve` processes on one fresh PostgreSQL database and one private Redis), with the CPU
 * per request or per message of the nodes, so that the coordination overhead shows even where 2 nodes on
 * 2 cores cannot go faster.
 *
 *   node_modules/.bin/bun bench/cluster.ts   (BENCH_SECONDS=10 BENCH_CONNECTIONS=32 BENCH_RECIPIENTS=5000
 *   BENCH_WARMUP_SECONDS=15 BENCH_WARMUP_RECIPIENTS=1000 BENCH_ROUNDS=3 BENCH_PHASES=track,campaign)
 *
 * The track phase also runs the stack's ceiling the same way: one, then two bare Elysia + postgres.js
 * servers (one INSERT per request, no coordination), so the ratio the machine alone charges for a second
 * process on its 2 cores is printed next to mailctl's.
 *
 * Track: the load generator spreads its keep-alive connections over the nodes' HTTP ports. Campaign: a
 * campaign to BENCH_RECIPIENTS contacts is sent and timed from the send request to the last message
 * recorded as delivered at a local sink (DNS on loopback points the recipients' MX at it). Prints
 * figures; asserts nothing. The machine is shared: wall-clock figures move with other work, CPU per
 * request much less; so the two set-ups run side by side (each on its own database and Redis) and are
 * measured alternately, BENCH_ROUNDS rounds of each phase, and the ratio is given per round and as the median.
 *
 * Measured in the steady state: every process compiles its hot code once (the JIT), so before each
 * measured phase every node gets the same warm-up as the one node does: BENCH_WARMUP_SECONDS of track
 * load per node, and a warm-up campaign of BENCH_WARMUP_RECIPIENTS per node. Without it, two nodes pay two
 * compilations over the same run and the ratio measures the JIT rather than coordination. 15 s: on
 * PostgreSQL a node's JIT threads spent 63, 45, 15 and 10 µs per track in its first four 5-s windows of
 * full load (bench/track.ts), so 4 s left most of the compiling inside the measured rounds, twice for two nodes.
 * The campaign's warm-up comes first, then the track's; after it, more 5-s windows of track load (per node)
 * follow until the nodes' JIT threads spend less than BENCH_JIT_SETTLED_TRACK_US (5) per request in two windows in a row, at most
 * BENCH_WARMUP_MAX_SECONDS (120) of track load per node; each window's figure is printed. The contacts the
 * track phase created are unsubscribed before the campaigns, so a campaign's audience is exactly its own.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { cpuMs, fmt, runLoad, startChild, threadCpuMs, type LoadResult, type Req } from './_load'
import { freshPgDatabase } from '../test/helpers/env'
import { startRedis } from '../test/helpers/redis'
import { startSink } from '../test/helpers/smtp'
import { startTestDns, splitTxt } from '../test/helpers/dns'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 5000)
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 15)
const WARMUP_RECIPIENTS = Number(process.env.BENCH_WARMUP_RECIPIENTS ?? 1000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** Track warm-up goes on until the nodes' JIT threads spend less than this per request (µs)... */
const JIT_SETTLED_TRACK_US = Number(process.env.BENCH_JIT_SETTLED_TRACK_US ?? 5)
/** ...or until this many seconds of track load per node. */
const WARMUP_MAX_SECONDS = Number(process.env.BENCH_WARMUP_MAX_SECONDS ?? 120)
const PHASES = (process.env.BENCH_PHASES ?? 'track,campaign').split(',').map((p) => p.trim())
for (const p of PHASES) if (p !== 'track' && p !== 'campaign') throw new Error(`BENCH_PHASES: unknown phase ${p} (track, campaign)`)
const CLI = join(import.meta.dir, '..', 'cli', 'mailctl.ts')
const CEILING_SERVER = join(import.meta.dir, '_pg-ceiling-server.ts')
const SECRET = 'bench-cluster-secret-0123456789abcdefghij'
const METRICS_TOKEN = 'bench-cluster-metrics-token'
/** The machine's load average, printed with every figure (the machine is shared). */
const loadAverageNow = () => `load average ${loadavg().map((v) => v.toFixed(2)).join(' ')}`

const dns = await startTestDns()
const sink = await startSink({})
dns.add('bench.test', { type: 'MX', exchange: 'mx.bench.test', priority: 10 })
dns.set('mx.bench.test', [{ type: 'A', address: '127.0.0.1' }])

interface Node { proc: ReturnType<typeof Bun.spawn>; port: number; dir: string }

async function startNode(databaseUrl: string, redisUrl: string): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-node-'))
  const proc = Bun.spawn([process.execPath, CLI, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, MAILCTL_SECRET: SECRET, MAILCTL_DATA_DIR: dir,
      MAILCTL_HOSTNAME: 'mx.mailctl-bench.test', MAILCTL_HTTP_HOST: '127.0.0.1', MAILCTL_HTTP_PORT: '0', MAILCTL_HTTP_REUSE_PORT: 'false',
      MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_OUTBOUND: 'direct', MAILCTL_MX_PORT: String(sink.port), MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8',
      MAILCTL_DNS_SERVERS: dns.server, MAILCTL_RATE_LIMIT_PER_MINUTE: '100000000', MAILCTL_LOG_LEVEL: 'info',
      MAILCTL_METRICS_TOKEN: METRICS_TOKEN,
    },
    stdin: 'ignore', stdout: 'pipe', stderr: 'ignore',
  })
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const dec = new TextDecoder()
  let buf = ''
  let port = 0
  while (!port) {
    const { value, done } = await reader.read()
    if (done) throw new Error('a node exited before listening')
    buf += dec.decode(value, { stream: true })
    const m = /"msg":"http listening"[^\n]*"port":(\d+)/.exec(buf)
    if (m) port = Number(m[1])
  }
  // Drain the logs (one line per request and per delivery) so the node never blocks on the pipe.
  void (async () => { for (;;) { const { done } = await reader.read(); if (done) break } })()
  return { proc, port, dir }
}

async function stopNode(n: Node) {
  n.proc.kill('SIGTERM')
  await n.proc.exited
  rmSync(n.dir, { recursive: true, force: true })
}

async function cli(databaseUrl: string, args: string[]): Promise<unknown> {
  const p = Bun.spawn([process.execPath, CLI, ...args, '--json'], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, MAILCTL_SECRET: SECRET, MAILCTL_HOSTNAME: 'mx.mailctl-bench.test', MAILCTL_DNS_SERVERS: dns.server }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`mailctl ${args.join(' ')}: ${err}`)
  return JSON.parse(out)
}

/** Batches and writes group-committed so far, summed over the nodes (their /metrics). */
async function commitsOf(nodes: Node[]): Promise<{ batches: number; writes: number }> {
  const out = { batches: 0, writes: 0 }
  for (const n of nodes) {
    const text = await (await fetch(`http://127.0.0.1:${n.port}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
    for (const count of ['batches', 'writes'] as const) {
      const m = new RegExp(`^mailctl_group_commit\\{count="${count}"\\} (\\d+)`, 'm').exec(text)
      out[count] += Number(m?.[1] ?? NaN)
    }
  }
  return out
}

const cpuOf = (nodes: Node[]) => nodes.reduce((ms, n) => ms + cpuMs(n.proc.pid ?? 0), 0)
/** CPU so far (ms) of the nodes' threads, summed over the nodes by thread name ("main" for each node's main thread). */
function threadsOf(nodes: Node[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const n of nodes) {
    const pid = n.proc.pid ?? 0
    for (const [tid, t] of threadCpuMs(pid)) {
      const name = tid === String(pid) ? 'main' : t.name
      out.set(name, (out.get(name) ?? 0) + t.ms)
    }
  }
  return out
}
/**
 * The nodes' JIT threads (JSC's compiler threads: JITWorker), to be read again after some work: their CPU
 * since, in ms. By thread id, since these threads end when idle and start again (an ended one's time is lost:
 * a lower bound).
 */
function jitSince(nodes: Node[]): () => number {
  const jitThreads = () => new Map(nodes.flatMap((n) => [...threadCpuMs(n.proc.pid ?? 0)].filter(([, t]) => t.name.startsWith('JIT')).map(([tid, t]) => [`${n.proc.pid} ${tid}`, t.ms] as const)))
  const before = jitThreads()
  return () => [...jitThreads()].reduce((ms, [id, t]) => ms + t - (before.get(id) ?? 0), 0)
}
/** Per unit, in µs, by thread name: the largest first. */
function threadLine(before: Map<string, number>, after: Map<string, number>, units: number): string {
  return [...after].map(([name, ms]) => [name, ((ms - (before.get(name) ?? 0)) * 1000) / units] as const)
    .filter(([, us]) => us >= 1).sort((a, b) => b[1] - a[1]).map(([name, us]) => `${name} ${us.toFixed(0)}`).join(', ')
}

/**
 * `connections` keep-alive connections of POST /v1/track spread evenly over `ports` (the nodes, or the bare
 * servers), each port's contacts tagged apart, for `seconds`; the results summed (p50 and p90 are the
 * first port's, p99 and max the worst port's). `authorization`: the project's key (the bare servers take none).
 */
async function spreadTrack(ports: number[], seconds: number, tag: string, connections: number, authorization?: string): Promise<LoadResult> {
  const per = Math.ceil(connections / ports.length)
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }
  const results = await Promise.all(ports.map((port, k) => runLoad({
    port, connections: per, seconds,
    next: (conn, i): Req => ({ method: 'POST', path: '/v1/track', headers, body: JSON.stringify({ email: `${tag}${k}-${conn}-${i % 500}@example.com`, event: 'page.viewed', data: { plan: 'pro' } }) }),
  })))
  const requests = results.reduce((n, r) => n + r.requests, 0)
  return {
    requests, errors: results.reduce((n, r) => n + r.errors, 0), seconds, rps: requests / seconds,
    p50: results[0].p50, p90: results[0].p90, p99: Math.max(...results.map((r) => r.p99)), max: Math.max(...results.map((r) => r.max)),
  }
}

interface Stack {
  count: number
  /** One measured track phase with `connections` in all: requests/s and node CPU per request (ms). */
  track(tag: string, connections?: number): Promise<{ rps: number; cpuMs: number }>
  /** One measured campaign to RECIPIENTS new contacts: messages/s and node CPU per message (ms). */
  campaign(tag: string): Promise<{ rate: number; cpuMs: number }>
  stop(): Promise<void>
}

/** `count` nodes on a fresh database and a Redis of their own, with a project, a verified domain and warmed up. */
async function stack(count: number): Promise<Stack> {
  const db = await freshPgDatabase()
  const redis = await startRedis()
  const sql = postgres(db.url, { max: 2, onnotice: () => {} })
  const nodes: Node[] = []
  const label = `${count} node${count > 1 ? 's' : ''}`
  const stop = async () => {
    for (const n of nodes) await stopNode(n)
    await sql.end()
    await db.drop()
    await redis.kill()
  }
  try {
    for (let i = 0; i < count; i++) nodes.push(await startNode(db.url, redis.url))
    const project = await cli(db.url, ['project', 'create', '--name', 'bench']) as { id: string; publicKey: string; secretKey: string }
    const domain = await cli(db.url, ['domain', 'add', project.id, `sender${count}.bench.test`]) as { records: Array<{ type: string; name: string; value: string; priority?: number }> }
    for (const r of domain.records) {
      if (r.type === 'TXT') dns.add(r.name, { type: 'TXT', data: splitTxt(r.value) })
      else dns.add(r.name, { type: 'MX', exchange: r.value, priority: r.priority ?? 10 })
    }
    const verified = await cli(db.url, ['domain', 'verify', project.id, `sender${count}.bench.test`]) as { verified?: boolean; status?: string }
    if (verified.verified === false) throw new Error(`the bench domain did not verify: ${JSON.stringify(verified)}`)

    const ports = nodes.map((n) => n.port)
    const load = (seconds: number, tag: string, connections = CONNECTIONS) => spreadTrack(ports, seconds, tag, connections, `Bearer ${project.publicKey}`)
    const api = (method: string, path: string, body?: unknown) => fetch(`http://127.0.0.1:${ports[0]}${path}`, { method, headers: { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    /** A campaign to `size` new contacts (the previous audience, and the track phases' contacts, unsubscribed first), sent and awaited until every message is delivered. */
    const campaign = async (name: string, size: number) => {
      await sql`UPDATE contacts SET subscribed = false WHERE project_id = ${project.id} AND subscribed`
      const contacts = Array.from({ length: size }, (_, i) => `${name}${i}@bench.test`)
      for (let i = 0; i < contacts.length; i += 1000) {
        await sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) SELECT gen_random_uuid(), ${project.id}, e, true, '{}'::jsonb, now(), now() FROM unnest(${contacts.slice(i, i + 1000)}::text[]) AS e`
      }
      const created = await (await api('POST', '/campaigns', { name, subject: 'Hello', body: '<p>Hello from the bench</p>', from: `news@sender${count}.bench.test`, audienceType: 'ALL' })).json() as { data: { id: string } }
      const base = sink.accepted
      const cpu1 = cpuOf(nodes)
      const th1 = threadsOf(nodes)
      const t0 = performance.now()
      const sent = await api('POST', `/campaigns/${created.data.id}/send`, {})
      if (sent.status !== 200) throw new Error(`campaign send answered ${sent.status} ${await sent.text()}`)
      for (;;) {
        const [{ n }] = await sql`SELECT count(*)::int AS n FROM emails WHERE campaign_id = ${created.data.id} AND status = 'DELIVERED'`
        if (n >= size) break
        await Bun.sleep(100)
      }
      const [{ all }] = await sql`SELECT count(*)::int AS all FROM emails WHERE campaign_id = ${created.data.id}`
      if (all !== size) throw new Error(`the campaign has ${all} emails, not ${size}`)
      return { secs: (performance.now() - t0) / 1000, cpu: cpuOf(nodes) - cpu1, threads: threadLine(th1, threadsOf(nodes), size), accepted: sink.accepted - base }
    }
    // The same warm-up per node as the one node gets: a campaign, then track load, then more track load
    // until the JIT has settled: a node that runs for days compiles its code once, so the steady state is
    // the figure. Two nodes see half the requests each and get there later; measured before they had, their
    // JIT threads spent 28-48 µs per track against 8-16 for the one node (2026-11-28 22:03). Track comes
    // last because it is measured first: a campaign run after it had the track code compiled again (the
    // JIT threads 34-87 µs per track in the next round). Campaigns do not settle so: 6 warm-up campaigns of
    // 1,000 messages kept the JIT threads at 110-390 µs per message, each node for each campaign.
    if (PHASES.includes('campaign')) await campaign('w', WARMUP_RECIPIENTS * count)
    if (PHASES.includes('track')) {
      await load(WARMUP_SECONDS * count, 'w')
      // The same contacts again (tag w): new ones each window made the campaigns' unsubscribe of them take minutes.
      for (let spent = WARMUP_SECONDS, under = 0; spent < WARMUP_MAX_SECONDS && under < 2; spent += 5) {
        const jit = jitSince(nodes)
        const r = await load(5 * count, 'w')
        const us = (jit() * 1000) / r.requests
        console.log(`warm-up, track, ${label}: JIT threads ${us.toFixed(1)} µs/request`)
        // Two windows in a row: the JIT threads end and start again, and an ended one's time is not counted.
        under = us < JIT_SETTLED_TRACK_US ? under + 1 : 0
      }
    }
    return {
      count,
      async track(tag, connections = CONNECTIONS) {
        const commits0 = await commitsOf(nodes)
        const cpu0 = cpuOf(nodes)
        const th0 = threadsOf(nodes)
        const r = await load(SECONDS, tag, connections)
        const cpu = cpuOf(nodes) - cpu0
        const th1 = threadsOf(nodes)
        const commits1 = await commitsOf(nodes)
        const perBatch = (commits1.writes - commits0.writes) / (commits1.batches - commits0.batches)
        console.log(`${fmt(`track, ${label}, ${connections} conn.`, r)}; node CPU ${(cpu * 1000 / r.requests).toFixed(0)} µs/request (${threadLine(th0, th1, r.requests)}); ${perBatch.toFixed(1)} writes a batch; ${loadAverageNow()}`)
        return { rps: r.rps, cpuMs: cpu / r.requests }
      },
      async campaign(tag) {
        const { secs, cpu, threads, accepted } = await campaign(tag, RECIPIENTS)
        console.log(`campaign, ${label}: ${RECIPIENTS} messages in ${secs.toFixed(1)} s = ${(RECIPIENTS / secs).toFixed(0)} messages/s (sink accepted ${accepted}); node CPU ${(cpu * 1000 / RECIPIENTS).toFixed(0)} µs/message (${threads}); ${loadAverageNow()}`)
        return { rate: RECIPIENTS / secs, cpuMs: cpu / RECIPIENTS }
      },
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}

/**
 * The stack's own ceiling for the same question: `count` bare Elysia + postgres.js servers (one INSERT per
 * request, bench/_pg-ceiling-server.ts, no coordination at all) on a fresh database, the same load spread
 * the same way. What one more server costs per request there is what the machine charges for splitting the
 * load over two processes on 2 cores (each wakes for half the requests: fewer requests per turn of its
 * event loop, more switches between processes), not mailctl's coordination.
 */
async function ceilingStack(count: number): Promise<{ track(tag: string): Promise<number>; stop(): Promise<void> }> {
  const db = await freshPgDatabase()
  const servers: Array<ReturnType<typeof Bun.spawn>> = []
  const ports: number[] = []
  const stop = async () => {
    for (const s of servers) { s.kill('SIGTERM'); await s.exited }
    await db.drop()
  }
  try {
    for (let i = 0; i < count; i++) {
      const { proc, info } = await startChild<{ port: number }>(CEILING_SERVER, [db.url])
      servers.push(proc)
      ports.push(info.port)
    }
    const load = async (seconds: number, tag: string) => {
      const r = await spreadTrack(ports, seconds, tag, CONNECTIONS)
      if (r.errors) throw new Error(`the bare servers answered ${r.errors} errors`)
      return r.requests
    }
    await load(WARMUP_SECONDS * count, 'w')
    const cpu = () => servers.reduce((ms, s) => ms + cpuMs(s.pid ?? 0), 0)
    return {
      async track(tag) {
        const cpu0 = cpu()
        const requests = await load(SECONDS, tag)
        const us = ((cpu() - cpu0) * 1000) / requests
        console.log(`ceiling, ${count} bare server${count > 1 ? 's' : ''}, ${CONNECTIONS} conn.: ${(requests / SECONDS).toFixed(0)} req/s; server CPU ${us.toFixed(0)} µs/request; ${loadAverageNow()}`)
        return us
      },
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const ratios = (xs: number[]) => xs.map((x) => `${x.toFixed(2)}x`).join(', ')

const stacks: Array<{ stop(): Promise<void> }> = []
try {
  const one = await stack(1)
  stacks.push(one)
  const two = await stack(2)
  stacks.push(two)
  // The bare servers only for the track phase (they answer nothing else).
  const bareOne = PHASES.includes('track') ? await ceilingStack(1) : null
  if (bareOne) stacks.push(bareOne)
  const bareTwo = PHASES.includes('track') ? await ceilingStack(2) : null
  if (bareTwo) stacks.push(bareTwo)
  // Alternated, so that other work on the machine weighs on both alike: each round measures one node,
  // then two (the idle stack's nodes only poll).
  // Track also on the one node with as many connections as each of the two nodes gets: a node's batches
  // are as large as the requests waiting on it, so that comparison leaves out the halved batches and
  // shows the nodes' coordination alone.
  // The bare servers' ratio in the same round is what the machine charges for two processes (ceilingStack).
  const track: Array<{ rps: number; cpu: number; perNode: number; bare: number }> = []
  for (let round = 1; round <= ROUNDS && PHASES.includes('track'); round++) {
    const a = await one.track(`m${round}a`)
    const half = await one.track(`m${round}h`, Math.ceil(CONNECTIONS / 2))
    const b = await two.track(`m${round}b`)
    const bareA = await (bareOne as NonNullable<typeof bareOne>).track(`c${round}a`)
    const bareB = await (bareTwo as NonNullable<typeof bareTwo>).track(`c${round}b`)
    track.push({ rps: b.rps / a.rps, cpu: b.cpuMs / a.cpuMs, perNode: b.cpuMs / half.cpuMs, bare: bareB / bareA })
  }
  const campaign: Array<{ rate: number; cpu: number }> = []
  for (let round = 1; round <= ROUNDS && PHASES.includes('campaign'); round++) {
    const a = await one.campaign(`r${round}a`)
    const b = await two.campaign(`r${round}b`)
    campaign.push({ rate: b.rate / a.rate, cpu: b.cpuMs / a.cpuMs })
  }
  console.log(`2 nodes / 1 node, ${ROUNDS} alternated rounds: track CPU per request ${ratios(track.map((r) => r.cpu))} (median ${median(track.map((r) => r.cpu)).toFixed(2)}x; requests/s ${ratios(track.map((r) => r.rps))}); against the one node with ${Math.ceil(CONNECTIONS / 2)} connections, as many as each of the two has: ${ratios(track.map((r) => r.perNode))} (median ${median(track.map((r) => r.perNode)).toFixed(2)}x); the bare servers (the stack's ceiling), 2 / 1: ${ratios(track.map((r) => r.bare))} (median ${median(track.map((r) => r.bare)).toFixed(2)}x); campaign CPU per message ${ratios(campaign.map((r) => r.cpu))} (median ${median(campaign.map((r) => r.cpu)).toFixed(2)}x; messages/s ${ratios(campaign.map((r) => r.rate))}); ${loadAverageNow()}`)
} finally {
  for (const st of stacks) await st.stop()
  await sink.close()
  dns.close?.()
}
process.exit(0)
