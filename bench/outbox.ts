/**
 * The events' outbox (src/modules/events/outbox.ts), on a fresh store:
 * - drain throughput: EVENTS events committed in transactions of BATCH (one outbox row each, as the track
 *   writer's group commits write them), then delivered by one drainer to a consumer that does nothing:
 *   events per second, and batches (claims) per second;
 * - latency: a running drainer (as `serve` starts it) while single-event transactions commit at RATE per
 *   second for SECONDS, each followed by notifyEvents (the wake-up): from the commit to the consumer's
 *   call, p50 / p99 / max.
 * Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/outbox.ts [--sqlite|--pg] [--events=N] [--batch=N] [--rate=N] [--seconds=N]
 */
import { TestEnv } from '../test/helpers/env'
import { ctxFor } from '../src/deps'
import type { EventConsumer } from '../src/modules/events/consumers'
import { Outbox } from '../src/modules/events/outbox'
import { appendEvents, notifyEvents } from '../src/modules/events/stream'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const EVENTS = Number(arg('events') ?? 100_000)
const BATCH = Number(arg('batch') ?? 32)
const RATE = Number(arg('rate') ?? 200)
const SECONDS = Number(arg('seconds') ?? 5)
const kinds = process.argv.includes('--pg') ? ['pg' as const] : process.argv.includes('--sqlite') ? ['sqlite' as const] : ['sqlite' as const, 'pg' as const]

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0

for (const kind of kinds) {
  const env = new TestEnv(kind)
  await env.start()
  try {
    const p = await env.consumedProject()
    const ctx = ctxFor(env.deps, p.id, { kind: 'cli' })

    // Throughput.
    for (let i = 0; i < EVENTS; i += BATCH) {
      const n = Math.min(BATCH, EVENTS - i)
      await env.store.tx((db) => appendEvents(ctx, db, Array.from({ length: n }, (_, k) => ({ contactId: null, name: 'bench', data: { i: i + k } }))))
    }
    let delivered = 0
    const noop: EventConsumer = { name: 'bench.noop', interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0", async handle(_c, events) { delivered += events.length } }
    const drainer = new Outbox(env.deps, { consumers: () => [noop] })
    const t0 = performance.now()
    await drainer.drain(600_000)
    const s = (performance.now() - t0) / 1000
    console.log(`${kind}: drained ${delivered} events (${Math.ceil(EVENTS / BATCH)} outbox rows of ${BATCH}) in ${s.toFixed(2)} s: ${Math.round(delivered / s)} events/s, ${Math.round(drainer.stats.batches / s)} claims/s`)

    // Latency from commit to consumer, with a running drainer woken by notifyEvents.
    const committedAt = new Map<string, number>()
    const lat: number[] = []
    const timing: EventConsumer = {
      name: 'bench.latency',
      interest: "SELECT 1 FROM projects WHERE id = $1 AND 1 = 0",
      async handle(_c, events) {
        const now = performance.now()
        for (const e of events) {
          const at = committedAt.get(e.id)
          if (at !== undefined) { lat.push(now - at); committedAt.delete(e.id) }
        }
      },
    }
    const running = new Outbox(env.deps, { consumers: () => [timing] })
    await running.start()
    const total = RATE * SECONDS
    const start = performance.now()
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE
      const wait = due - performance.now()
      if (wait > 0) await Bun.sleep(wait)
      const rows = await env.store.tx((db) => appendEvents(ctx, db, [{ contactId: null, name: 'latency' }]))
      const row = rows[0]
      if (row) committedAt.set(row.id, performance.now())
      await notifyEvents(ctx, rows)
    }
    const end = performance.now() + 10_000
    while (committedAt.size && performance.now() < end) await Bun.sleep(5)
    await running.stop()
    lat.sort((a, b) => a - b)
    console.log(`${kind}: ${RATE} commits/s for ${SECONDS} s, commit to consumer: p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${(lat[lat.length - 1] ?? 0).toFixed(1)} ms (${lat.length} of ${total} seen)`)
  } finally {
    await env.stop()
  }
}
