/**
 * The cost of one group-committed batch of tracks (events/track-write.ts, trackBatch) by its size, in the
 * writing process alone: no HTTP, no load generator. Batches of 1, 4, 8 and 16 tracks (half to new
 * contacts, half to existing ones whose data sometimes changes) are written one after another through
 * GroupCommit.runMany; for each size the main thread's and the process's CPU per batch and per track, and
 * the wall time per batch; on PostgreSQL also the CPU of the database's backends (from /proc). A batch's fixed cost is what a node pays more per write when its batches are
 * smaller (fewer requests waiting on it: bench/cluster.ts). Prints figures; asserts nothing.
 *
 *   node_modules/.bin/bun bench/track-batch.ts   (BENCH_DATABASE_URL=pg: a fresh PostgreSQL database;
 *   default a fresh SQLite file; BENCH_BATCHES=500 per size and round, BENCH_SIZES=1,4,8,16)
 */
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { sql } from 'drizzle-orm'
import { GroupCommit } from '../src/db/group-commit'
import { trackBatch } from '../src/modules/events/track-write'
import { migratedStore } from '../test/helpers/env'
import { backendCpu } from './_load'

const BATCHES = Number(process.env.BENCH_BATCHES ?? 500)
const SIZES = (process.env.BENCH_SIZES ?? '1,4,8,16').split(',').map(Number)
const SEED = 2000
const kind = process.env.BENCH_DATABASE_URL === 'pg' ? 'pg' : 'sqlite'

/** CPU time (ms) of this process's main thread so far (Linux /proc). */
function mainThreadMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100
}

const { store, cleanup } = await migratedStore(kind, 'bench-track-batch')
try {
  const projectId = Bun.randomUUIDv7()
  await store.tx(async (db) => {
    await store.exec(sql`INSERT INTO projects (id, name, public_key, secret_key_hash, created_at, updated_at) VALUES (${projectId}, 'bench', ${`pk_${projectId}`}, ${`sk_${projectId}`}, ${kind === 'pg' ? new Date().toISOString() : Date.now()}, ${kind === 'pg' ? new Date().toISOString() : Date.now()})`, db)
  })
  const commits = new GroupCommit(store)
  const plans = ['free', 'pro', 'team']
  let n = 0
  const batch = async (size: number) => {
    const writes = []
    for (let k = 0; k < size; k++) {
      n++
      const email = n > SEED && Math.random() < 0.5 ? `c${Math.floor(Math.random() * SEED)}@example.com` : `c${n}@example.com`
      writes.push(commits.runMany(trackBatch, { ctx: { store, projectId, now: new Date() }, write: { email, event: n % 5 ? 'page.viewed' : 'order.placed', data: { plan: plans[n % 3], source: { value: 'bench', persistent: false } }, claim: null } }))
    }
    await Promise.all(writes)
  }
  for (let i = 0; i < SEED / 16; i++) await batch(16)
  console.log(`trackBatch on ${kind}, ${BATCHES} batches per size and round; load average ${loadavg().map((v) => v.toFixed(2)).join(' ')}`)
  for (let round = 1; round <= 2; round++) {
    for (const size of SIZES) {
      for (let i = 0; i < 50; i++) await batch(size)
      // The probe's own connection runs on this thread: opened before the main thread's count starts.
      const backends = store.url.startsWith('postgres') ? await backendCpu(store.url) : null
      const main0 = mainThreadMs()
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      for (let i = 0; i < BATCHES; i++) await batch(size)
      const wall = ((performance.now() - t0) * 1000) / BATCHES
      const cpu = process.cpuUsage(cpu0)
      const all = (cpu.user + cpu.system) / BATCHES
      const main = ((mainThreadMs() - main0) * 1000) / BATCHES
      const backend = backends ? ((await backends()) * 1000) / BATCHES : null
      const backendPart = backend === null ? '' : `, PostgreSQL backends ${backend.toFixed(0)} µs/batch (${(backend / size).toFixed(0)} per track)`
      console.log(`round ${round}, ${String(size).padStart(2)} per batch: main thread ${main.toFixed(0)} µs/batch (${(main / size).toFixed(0)} per track), process ${all.toFixed(0)} µs/batch (${(all / size).toFixed(0)} per track), wall ${wall.toFixed(0)} µs/batch${backendPart}; load average ${loadavg()[0].toFixed(2)}`)
    }
  }
  console.log(JSON.stringify({ store: kind, groupCommit: commits.stats }))
} finally {
  await cleanup()
}
