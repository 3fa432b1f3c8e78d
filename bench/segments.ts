/**
 * Segments on a large project: 1,000,000 contacts with 10 data fields and 5,000,000 events.
 * - count of a 3-filter AND segment (data.plan equals, createdAt within 30 days, event triggeredWithin 7 days);
 * - membership of a tracked segment of ~100,000 members computed (first compute: 100,000 member rows and
 *   100,000 entry events), then recomputed with nothing changed, then with 1,000 contacts changed.
 * Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/segments.ts [--sqlite|--pg] [--contacts=N] [--events=N]
 */
import { sql } from 'drizzle-orm'
import { TestEnv } from '../test/helpers/env'
import { ctxFor, type Ctx } from '../src/deps'
import type { Store } from '../src/db/client'
import { countMatching, prepareFilter } from '../src/filters'
import { computeSegment, createSegment } from '../src/modules/segments/service'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const CONTACTS = Number(arg('contacts') ?? 1_000_000)
const EVENTS = Number(arg('events') ?? 5_000_000)
const DAY = 86_400_000
const EVENT_NAMES = ['page_view', 'login', 'purchase', 'signup', 'add_to_cart', 'search', 'logout', 'share', 'review', 'refund']

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`)
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now()
  const r = await fn()
  return [r, performance.now() - t]
}

/** Drops the secondary indexes of the tables, runs `fill`, then rebuilds them (a bulk load, as a restore would). */
async function withoutIndexes(store: Store, tables: string[], fill: () => Promise<void>) {
  const list = sql.join(tables.map((t) => sql`${t}`), sql.raw(', '))
  const defs = store.dialect === 'pg'
    ? await store.rows<{ name: string; def: string }>(sql`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename IN (${list}) AND indexname NOT LIKE '%_pkey'`)
    : await store.rows<{ name: string; def: string }>(sql`SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND tbl_name IN (${list}) AND sql IS NOT NULL`)
  for (const d of defs) await store.script(`DROP INDEX ${d.name}`)
  await fill()
  for (const d of defs) await store.script(d.def)
}

/** Bulk-loads the bench data into `store` for `projectId` (exported for profiling scripts). */
export async function generate(store: Store, projectId: string, now: number) {
  const idOf = (expr: string) => store.dialect === 'pg'
    ? `lpad(to_hex(${expr}), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(${expr}), 12, '0')`
    : `printf('%08x-0000-7000-8000-%012x', ${expr}, ${expr})`
  const names = EVENT_NAMES.map((n) => `'${n}'`).join(', ')
  await withoutIndexes(store, ['contacts', 'events'], async () => {
    if (store.dialect === 'pg') {
      await store.tx(async (db) => {
        await store.exec(sql`SET LOCAL session_replication_role = replica`, db)
        await store.exec(sql.raw(`
          INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
          SELECT ${idOf('i')}, '${projectId}', 'user' || i || '@example.com', i % 5 <> 0,
            jsonb_build_object(
              'plan', (ARRAY['pro', 'free', 'team', 'trial'])[i % 4 + 1], 'age', 18 + i % 60, 'score', (i * 7) % 1000,
              'vip', i % 10 = 0, 'country', (ARRAY['NO', 'SE', 'DE', 'FR', 'US', 'BR', 'JP', 'IN'])[i % 8 + 1],
              'city', 'City ' || (i % 997), 'company', 'Company ' || (i % 5003), 'lang', (ARRAY['en', 'no', 'de', 'fr'])[i % 4 + 1],
              'lastSeen', to_char(to_timestamp((${now} - (i::bigint * 7919) % ${60 * DAY}) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
              'source', (ARRAY['ads', 'organic', 'referral'])[i % 3 + 1]),
            to_timestamp((${now} - (${CONTACTS - 1} - i)::bigint * ${Math.floor(365 * DAY / CONTACTS)}) / 1000.0),
            to_timestamp((${now} - ((${CONTACTS - 1} - i)::bigint * ${Math.floor(365 * DAY / CONTACTS)}) / 2) / 1000.0)
          FROM generate_series(0, ${CONTACTS - 1}) AS i`), db)
        await store.exec(sql.raw(`
          INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)
          SELECT ${idOf(`j + ${1 << 30}`)}, '${projectId}', ${idOf(`(j::bigint * 48271) % ${CONTACTS}`)},
            (ARRAY[${names}])[j % ${EVENT_NAMES.length} + 1], '{}'::jsonb, NULL,
            to_timestamp((${now} - (${EVENTS - 1} - j)::bigint * ${Math.floor(90 * DAY / EVENTS)}) / 1000.0)
          FROM generate_series(0, ${EVENTS - 1}) AS j`), db)
      })
      await store.script('ANALYZE contacts; ANALYZE events')
      return
    }
    await store.tx(async (db) => {
      await store.exec(sql.raw(`
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${CONTACTS - 1})
        INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT ${idOf('i')}, '${projectId}', 'user' || i || '@example.com', i % 5 <> 0,
          json_object(
            'plan', CASE i % 4 WHEN 0 THEN 'pro' WHEN 1 THEN 'free' WHEN 2 THEN 'team' ELSE 'trial' END, 'age', 18 + i % 60,
            'score', (i * 7) % 1000, 'vip', json(CASE WHEN i % 10 = 0 THEN 'true' ELSE 'false' END),
            'country', CASE i % 8 WHEN 0 THEN 'NO' WHEN 1 THEN 'SE' WHEN 2 THEN 'DE' WHEN 3 THEN 'FR' WHEN 4 THEN 'US' WHEN 5 THEN 'BR' WHEN 6 THEN 'JP' ELSE 'IN' END,
            'city', 'City ' || (i % 997), 'company', 'Company ' || (i % 5003),
            'lang', CASE i % 4 WHEN 0 THEN 'en' WHEN 1 THEN 'no' WHEN 2 THEN 'de' ELSE 'fr' END,
            'lastSeen', strftime('%Y-%m-%dT%H:%M:%SZ', (${now} - (i * 7919) % ${60 * DAY}) / 1000, 'unixepoch'),
            'source', CASE i % 3 WHEN 0 THEN 'ads' WHEN 1 THEN 'organic' ELSE 'referral' END),
          ${now} - (${CONTACTS - 1} - i) * ${Math.floor(365 * DAY / CONTACTS)}, ${now} - ((${CONTACTS - 1} - i) * ${Math.floor(365 * DAY / CONTACTS)}) / 2
        FROM n`), db)
      await store.exec(sql.raw(`
        WITH RECURSIVE n(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM n WHERE j < ${EVENTS - 1})
        INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)
        SELECT ${idOf(`j + ${1 << 30}`)}, '${projectId}', ${idOf(`(j * 48271) % ${CONTACTS}`)},
          CASE j % ${EVENT_NAMES.length} ${EVENT_NAMES.map((n, k) => `WHEN ${k} THEN '${n}'`).join(' ')} END, '{}', NULL,
          ${now} - (${EVENTS - 1} - j) * ${Math.floor(90 * DAY / EVENTS)}
        FROM n`), db)
    })
  })
}

const f = (field: string, operator: string, value?: unknown, unit?: string) => ({ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) })

async function run(kind: 'sqlite' | 'pg') {
  const env = new TestEnv(kind)
  await env.start()
  try {
    const p = await env.project()
    const now = Date.now()
    const [, genMs] = await timed(() => generate(env.store, p.id, now))
    if (kind === 'sqlite') await env.store.script('PRAGMA optimize')
    console.log(`${kind}: generated ${CONTACTS.toLocaleString()} contacts and ${EVENTS.toLocaleString()} events in ${fmt(genMs)} (indexes rebuilt after the load)`)
    const ctx: Ctx = ctxFor(env.deps, p.id, { kind: 'cli' })

    // 1. The 3-filter AND count, cold then warm.
    const tree = { logic: 'AND', groups: [{ filters: [
      f('data.plan', 'equals', 'pro'), f('createdAt', 'within', 30, 'days'), f('event.purchase', 'triggeredWithin', 7, 'days'),
    ] }] }
    const counts: number[] = []
    let n = 0
    for (let i = 0; i < 5; i++) {
      const [c, ms] = await timed(async () => countMatching(ctx, await prepareFilter(ctx, tree)))
      n = c
      counts.push(ms)
    }
    const warm = [...counts.slice(1)].sort((a, b) => a - b)
    console.log(`${kind}: count of data.plan=pro AND createdAt within 30 days AND purchase within 7 days = ${n.toLocaleString()}: first ${fmt(counts[0])}, then median ${fmt(warm[Math.floor(warm.length / 2)])} (best ${fmt(warm[0])}, worst ${fmt(warm[warm.length - 1])})`)

    // 2. A tracked segment of ~100,000 members.
    const condition = { logic: 'AND', groups: [{ filters: [f('data.plan', 'equals', 'pro'), f('data.score', 'lessThan', 400)] }] }
    const [seg, createMs] = await timed(() => createSegment(ctx, { name: 'Bench tracked', condition, trackMembership: true }))
    console.log(`${kind}: POST /segments (validation + live count of ${seg.memberCount.toLocaleString()}) ${fmt(createMs)}`)
    const [first, firstMs] = await timed(() => computeSegment({ ...ctx, now: new Date() }, seg.id))
    console.log(`${kind}: first compute of the tracked segment: ${first.entered.toLocaleString()} entered (member rows + entry events written) in ${fmt(firstMs)}`)
    const [again, againMs] = await timed(() => computeSegment({ ...ctx, now: new Date() }, seg.id))
    console.log(`${kind}: recompute with nothing changed: ${again.entered} entered, ${again.exited} exited in ${fmt(againMs)}`)
    // 1,000 members leave (score raised) and 1,000 contacts join (plan becomes pro with a low score).
    await env.store.tx(async (db) => {
      const set = (expr: string) => env.store.dialect === 'pg' ? sql.raw(`data = data || '${expr}'::jsonb`) : sql.raw(`data = json_patch(data, '${expr}')`)
      await env.store.exec(sql`UPDATE contacts SET ${set('{"score": 999}')} WHERE id IN (SELECT contact_id FROM segment_members WHERE segment_id = ${seg.id} ORDER BY contact_id LIMIT 1000)`, db)
      await env.store.exec(sql`UPDATE contacts SET ${set('{"plan": "pro", "score": 1}')} WHERE id IN (SELECT id FROM contacts WHERE project_id = ${p.id} AND id NOT IN (SELECT contact_id FROM segment_members WHERE segment_id = ${seg.id}) ORDER BY id LIMIT 1000)`, db)
    })
    const [third, thirdMs] = await timed(() => computeSegment({ ...ctx, now: new Date() }, seg.id))
    console.log(`${kind}: recompute after 2,000 changes: ${third.entered} entered, ${third.exited} exited in ${fmt(thirdMs)} (memberCount ${third.memberCount.toLocaleString()})`)
  } finally {
    await env.stop()
  }
}

if (import.meta.main) {
  const only = process.argv.includes('--sqlite') ? 'sqlite' : process.argv.includes('--pg') ? 'pg' : null
  for (const kind of ['sqlite', 'pg'] as const) if (!only || only === kind) await run(kind)
}
