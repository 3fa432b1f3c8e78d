/**
 * Analytics and activity on a large project: EMAILS emails (default 10,000,000) over 90 days, 70% of them in
 * 200 campaigns, with their events (sent, delivered 95%, opened 30% and again 10%, clicked 8%, bounced 3%,
 * complained 0.1%, unsubscribed 0.2%) and 1,000,000 tracked events: about 2.5 events per email. The data is
 * written directly in SQL, then the analytics.rollup job counts it (its time printed), then every analytics
 * and activity call is made through the HTTP app RUNS times: p50 and p99 printed. The last hour is past the
 * rollup's watermark, so the calls also count events live, as they would in service. Asserts nothing.
 *
 *   node_modules/.bin/bun bench/analytics.ts [--sqlite|--pg] [--emails=N] [--runs=N]
 */
import { sql } from 'drizzle-orm'
import { TestEnv } from '../test/helpers/env'
import type { Store } from '../src/db/client'
import { rollup } from '../src/modules/analytics/service'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const EMAILS = Number(arg('emails') ?? 10_000_000)
const RUNS = Number(arg('runs') ?? 20)
const TRACKED = Math.round(EMAILS / 10)
const CAMPAIGNS = 200
const DAY = 86_400_000
const SPAN = 90 * DAY

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`)
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

/** The SQL of one store for the few things that differ. */
function dialect(store: Store) {
  const pg = store.dialect === 'pg'
  return {
    id: (expr: string, tag: number) => pg
      ? `lpad(to_hex(${tag}), 8, '0') || '-0000-7000-8000-' || lpad(to_hex(${expr}), 12, '0')`
      : `printf('%08x-0000-7000-8000-%012x', ${tag}, ${expr})`,
    series: (n: number, v: string) => pg ? `generate_series(0, ${n - 1}) AS ${v}` : `(WITH RECURSIVE s(${v}) AS (SELECT 0 UNION ALL SELECT ${v} + 1 FROM s WHERE ${v} < ${n - 1}) SELECT ${v} FROM s) AS g`,
    ts: (ms: string) => pg ? `to_timestamp((${ms})::bigint / 1000.0)` : `(${ms})`,
    json: (text: string) => pg ? `(${text})::jsonb` : `(${text})`,
    div: (a: string, b: number) => pg ? `(${a}) / ${b}` : `(${a}) / ${b}`,
  }
}

export async function generate(store: Store, projectId: string, now: number) {
  const d = dialect(store)
  const step = Math.floor(SPAN / EMAILS)
  const at = (i: string, plus: number) => d.ts(`${now} - (${EMAILS - 1} - ${i})::bigint * ${step} + ${plus}`).replace(/::bigint/g, store.dialect === 'pg' ? '::bigint' : '')
  const perCampaign = Math.ceil(EMAILS / CAMPAIGNS)
  const inCampaign = `(i % 10 < 7)`
  const campaignOf = d.id(`${d.div('i', perCampaign)}`, 0xca)
  const emailId = d.id('i', 0xe0)
  const evId = (tag: number) => d.id('i', tag)
  const q = (s: string) => store.dialect === 'pg' ? s : s.replace(/::bigint/g, '')
  await withoutIndexes(store, ['emails', 'events', 'campaigns'], async () => {
    await store.tx(async (db) => {
      if (store.dialect === 'pg') await store.exec(sql`SET LOCAL session_replication_role = replica`, db)
      const run = (text: string) => store.exec(sql.raw(q(text)), db)
      await run(`INSERT INTO campaigns (id, project_id, name, subject, body, from_email, type, audience_type, status, total_recipients, sent_count,
          skipped_unsubscribed, skipped_suppressed, sent_at, created_at, updated_at)
        SELECT ${d.id('i', 0xca)}, '${projectId}', 'Campaign ' || i, 'Subject ' || i, '<p>x</p>', 'news@acme.test', 'MARKETING', 'ALL', 'SENT',
          ${Math.round(perCampaign * 0.7)}, ${Math.round(perCampaign * 0.7)}, 0, 0, ${at(`i * ${perCampaign}`, 0)}, ${at(`i * ${perCampaign}`, 0)}, ${at(`i * ${perCampaign}`, 0)}
        FROM ${d.series(CAMPAIGNS, 'i')}`)
      await run(`INSERT INTO emails (id, project_id, contact_id, template_id, campaign_id, source_type, type, message_id, from_address, to_address,
          subject, list_unsubscribe, status, attempts, sent_at, created_at, updated_at)
        SELECT ${emailId}, '${projectId}', NULL, NULL, CASE WHEN ${inCampaign} THEN ${campaignOf} END, CASE WHEN ${inCampaign} THEN 'campaign' ELSE 'send' END,
          CASE WHEN ${inCampaign} THEN 'MARKETING' ELSE 'TRANSACTIONAL' END, '<' || i || '@acme.test>', 'news@acme.test', 'user' || (i % 1000003) || '@example.com',
          'Hello', ${store.dialect === 'pg' ? 'false' : '0'},
          CASE WHEN i % 100 < 3 THEN 'BOUNCED' WHEN i % 10 < 3 THEN 'OPENED' ELSE 'DELIVERED' END, 1, ${at('i', 1000)}, ${at('i', 0)}, ${at('i', 5000)}
        FROM ${d.series(EMAILS, 'i')}`)
      const events = (tag: number, name: string, where: string, plus: number, data: string) => run(`
        INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)
        SELECT ${evId(tag)}, '${projectId}', NULL, '${name}', ${d.json(data)}, ${emailId}, ${at('i', plus)}
        FROM ${d.series(EMAILS, 'i')} WHERE ${where}`)
      const base = `'{"campaignId":' || CASE WHEN ${inCampaign} THEN '"' || ${campaignOf} || '"' ELSE 'null' END || ',"sourceType":"' || CASE WHEN ${inCampaign} THEN 'campaign' ELSE 'send' END || '"'`
      await events(0xe1, 'email.sent', 'true', 1000, `${base} || '}'`)
      await events(0xe2, 'email.delivery', 'i % 100 >= 3 AND i % 20 <> 7', 5000, `${base} || '}'`)
      await events(0xe3, 'email.open', 'i % 10 < 3 AND i % 100 >= 3', 3_600_000, `${base} || ',"isFirstOpen":true}'`)
      await events(0xe4, 'email.open', 'i % 10 = 0 AND i % 100 >= 3', 7_200_000, `${base} || ',"isFirstOpen":false}'`)
      await events(0xe5, 'email.click', 'i % 100 >= 3 AND i % 100 < 11', 3_700_000, `${base} || ',"isFirstClick":true}'`)
      await events(0xe6, 'email.bounce', 'i % 100 < 3', 10_000, `${base} || ',"bounceType":"' || CASE WHEN i % 3 = 0 THEN 'soft' ELSE 'hard' END || '"}'`)
      await events(0xe7, 'email.complaint', 'i % 1000 = 500', 4_000_000, `${base} || '}'`)
      await events(0xe8, 'contact.unsubscribed', 'i % 500 = 250', 4_100_000, `'{"subscribed":false}'`)
      const names = ['page_view', 'login', 'purchase', 'signup', 'add_to_cart', 'search', 'logout', 'share', 'review', 'refund']
      await run(`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)
        SELECT ${evId(0xe9)}, '${projectId}', NULL, CASE i % ${names.length} ${names.map((n, k) => `WHEN ${k} THEN '${n}'`).join(' ')} END, ${d.json(`'{}'`)}, NULL,
          ${d.ts(`${now} - (${TRACKED - 1} - i)::bigint * ${Math.floor(SPAN / TRACKED)}`)}
        FROM ${d.series(TRACKED, 'i')}`)
    })
  })
  await store.script(store.dialect === 'pg' ? 'ANALYZE campaigns; ANALYZE emails; ANALYZE events' : 'PRAGMA optimize')
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}

async function run(kind: 'sqlite' | 'pg') {
  const env = new TestEnv(kind)
  await env.start()
  try {
    const p = await env.project()
    const now = Date.now()
    const [, genMs] = await timed(() => generate(env.store, p.id, now))
    const [[{ n: events }]] = await Promise.all([env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM events`)])
    console.log(`${kind}: generated ${EMAILS.toLocaleString()} emails and ${Number(events).toLocaleString()} events in ${fmt(genMs)} (indexes rebuilt after the load)`)
    const [r, rollMs] = await timed(() => rollup(env.deps, new Date(now)))
    console.log(`${kind}: first rollup (every hour since the first event): ${r.hours} hours, ${r.rows.toLocaleString()} counter rows in ${fmt(rollMs)}`)
    const [, againMs] = await timed(() => rollup(env.deps, new Date(now + 3_600_000)))
    console.log(`${kind}: next rollup (one more hour, the last one again): ${fmt(againMs)}`)

    const iso = (ms: number) => new Date(ms).toISOString()
    const campaign = (await env.store.rows<{ id: string }>(sql`SELECT id FROM campaigns WHERE project_id = ${p.id} ORDER BY id LIMIT 1 OFFSET 150`))[0].id
    const first = await env.request('GET', '/activity?limit=20', { key: p.secretKey })
    const calls: Array<[string, string]> = [
      ['analytics', '/analytics/timeseries'],
      ['analytics', '/analytics/timeseries?timezone=Europe/Paris'],
      ['analytics', `/analytics/timeseries?interval=day&from=${iso(now - 90 * DAY)}&timezone=America/New_York`],
      ['analytics', `/analytics/timeseries?interval=hour&from=${iso(now - 7 * DAY)}`],
      ['analytics', `/analytics/timeseries?campaignId=${campaign}&from=${iso(now - 90 * DAY)}`],
      ['analytics', '/analytics/top-campaigns'],
      ['analytics', `/analytics/top-campaigns?metric=uniqueOpened&from=${iso(now - 90 * DAY)}&limit=50`],
      ['analytics', '/analytics/campaign-stats'],
      ['analytics', `/analytics/campaign-stats?campaignId=${campaign}`],
      ['analytics', '/analytics/top-events'],
      ['activity', '/activity?limit=20'],
      ['activity', `/activity?limit=20&cursor=${first.body.cursor}`],
      ['activity', '/activity?type=email.bounce&limit=20'],
      ['activity', `/activity?campaignId=${campaign}&limit=20`],
      ['activity', '/activity/stats?days=30'],
      ['activity', '/activity/types'],
      ['activity', '/activity/recent-count?minutes=60'],
      ['activity', '/activity/upcoming'],
    ]
    for (const [group, path] of calls) {
      const times: number[] = []
      let status = 0
      for (let i = 0; i < RUNS; i++) {
        const [res, ms] = await timed(() => env.request('GET', path, { key: p.secretKey }))
        status = res.status
        times.push(ms)
        if (group === 'activity' && i >= 4 && ms > 2000) break
      }
      const shown = path.length > 90 ? `${path.slice(0, 87)}...` : path
      console.log(`${kind}: ${status} ${shown.padEnd(92)} p50 ${fmt(pct(times, 50)).padStart(9)}  p99 ${fmt(pct(times, 99)).padStart(9)}  (${times.length} runs)`)
    }
  } finally {
    await env.stop()
  }
}

if (import.meta.main) {
  const only = process.argv.includes('--sqlite') ? 'sqlite' : process.argv.includes('--pg') ? 'pg' : null
  for (const kind of ['sqlite', 'pg'] as const) if (!only || only === kind) await run(kind)
}
