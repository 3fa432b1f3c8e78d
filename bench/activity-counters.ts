/**
 * What the activity counters (migration 0024: triggers on emails and events) cost the write path: N event
 * inserts of a campaign email (email.open, one per transaction, as a track writes them) with the triggers,
 * alternately with the counter and campaign triggers and without them; prints the median time per event of each.
 * Asserts nothing; on a shared machine, compare the two lines of one run only.
 *
 *   node_modules/.bin/bun bench/activity-counters.ts [--sqlite|--pg] [--events=N]
 */
import { sql } from 'drizzle-orm'
import { insertEvents } from '../src/modules/events/repo'
import { TestEnv } from '../test/helpers/env'
import { queueTestEmail } from '../test/modules/tracking/fixture'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const EVENTS = Number(arg('events') ?? 2000)
const ROUNDS = 3

async function run(kind: 'sqlite' | 'pg') {
  const env = new TestEnv(kind)
  await env.start()
  try {
    const p = await env.project()
    const email = await queueTestEmail(env, p.id, { to: 'bench@dest.test', campaignId: '0190f5a0-0000-7000-8000-00000000be0c' })
    const insertAll = async () => {
      const t = performance.now()
      for (let i = 0; i < EVENTS; i++) {
        await env.store.tx((db) => insertEvents(env.store, db, [{
          id: Bun.randomUUIDv7(), projectId: p.id, contactId: email.contactId, name: 'email.open', data: { isFirstOpen: false }, emailId: email.id, createdAt: new Date(),
        }]))
      }
      return ((performance.now() - t) * 1000) / EVENTS
    }
    const names = ['activity_counts_events_ai', kind === 'pg' ? 'events_campaign_bi' : 'events_campaign_ai']
    const defs = kind === 'pg'
      ? await env.store.rows<{ name: string; def: string }>(sql`SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgname IN (${names[0]}, ${names[1]})`)
      : await env.store.rows<{ name: string; def: string }>(sql`SELECT name, sql AS def FROM sqlite_master WHERE type = 'trigger' AND name IN (${names[0]}, ${names[1]})`)
    const drop = async () => { for (const d of defs) await env.store.script(`DROP TRIGGER ${d.name}${kind === 'pg' ? ' ON events' : ''}`) }
    const create = async () => { for (const d of defs) await env.store.script(d.def) }
    await insertAll() // warm-up
    // Alternated, ROUNDS each, so that load on the machine and the table's growth fall on both alike.
    const w: number[] = []
    const wo: number[] = []
    for (let r = 0; r < ROUNDS; r++) {
      w.push(await insertAll())
      await drop()
      wo.push(await insertAll())
      await create()
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    const withTriggers = median(w)
    const without = median(wo)
    const [{ n }] = await env.store.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM events`)
    console.log(`${kind}: ${EVENTS} email.open inserts, one per transaction, ${ROUNDS} rounds each way, medians (${Number(n)} events in the table at the end)`)
    console.log(`${kind}:   with the counter and campaign triggers: ${withTriggers.toFixed(1)} us per event`)
    console.log(`${kind}:   without them:                           ${without.toFixed(1)} us per event`)
  } finally {
    await env.stop()
  }
}

if (import.meta.main) {
  const only = process.argv.includes('--sqlite') ? 'sqlite' : process.argv.includes('--pg') ? 'pg' : null
  for (const kind of ['sqlite', 'pg'] as const) if (!only || only === kind) await run(kind)
}
