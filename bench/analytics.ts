/**
 * Analytics and activity on a large project: EMAILS emails (default 10,000,000) over 90 days, 70% of them in
 * 200 campaigns, with their events (sent, delivered 95%, opened 30% and again 10%, clicked 8%, bounced 3%,
 * complained 0.1%, unsubscribed 0.2%) and 1,000,000 tracked events: about 2.5 events per email. The data is
 * written directly in SQL, then the analytics.rollup job counts it (its time printed), then every analytics
 * and activity call is made through the HTTP app RUNS times: p50 and p99 printed. The last hour is past the
 * rollup's watermark, so the calls also count events live, as they would in service. The emails go to
 * EMAILS / 100 contacts; the activity calls cover every filter of GET /activity (type, status, date range,
 * contact, campaign, email) and the other /activity endpoints. Asserts nothing.
 *
 *   node_modules/.bin/bun bench/analytics.ts [--sqlite|--pg] [--emails=N] [--runs=N] [--plans]
 */
import { sql, type SQLWrapper } from 'drizzle-orm'
import { TestEnv } from '../test/helpers/env'
import type { Store } from '../src/db/client'
import { rollup } from '../src/modules/analytics/service'
import * as activity from '../src/modules/activity/repo'
import { EVENT_TYPES } from '../src/modules/activity/model'

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const EMAILS = Number(arg('emails') ?? 10_000_000)
const RUNS = Number(arg('runs') ?? 20)
const TRACKED = Math.round(EMAILS / 10)
const CAMPAIGNS = 200
/** Contacts the emails go to (each has EMAILS / CONTACTS emails and their events). */
const CONTACTS = Math.max(1, Math.round(EMAILS / 100))
const DAY = 86_400_000
const SPAN = 90 * DAY

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`)
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now()
  const r = await fn()
  return [r, performance.now() - t]
}

/**
 * Drops the secondary indexes of the tables (and, on SQLite, their triggers: PostgreSQL's load runs as a
 * replica, which fires none), runs `fill`, then rebuilds them and counts the activity counters the
 * triggers would have kept (a bulk load, as a restore would).
 */
async function withoutIndexes(store: Store, tables: string[], fill: () => Promise<void>) {
  const list = sql.join(tables.map((t) => sql`${t}`), sql.raw(', '))
  const defs = store.dialect === 'pg'
    ? await store.rows<{ name: string; def: string }>(sql`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename IN (${list}) AND indexname NOT LIKE '%_pkey'`)
    : await store.rows<{ name: string; def: string }>(sql`SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND tbl_name IN (${list}) AND sql IS NOT NULL`)
  const triggers = store.dialect === 'pg' ? [] : await store.rows<{ name: string; def: string }>(sql`SELECT name, sql AS def FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN (${list})`)
  for (const d of defs) await store.script(`DROP INDEX ${d.name}`)
  for (const t of triggers) await store.script(`DROP TRIGGER ${t.name}`)
  await fill()
  for (const d of defs) await store.script(d.def)
  for (const t of triggers) await store.script(t.def)
  await store.tx((db) => activity.recountActivity(store, db))
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
  const contactOf = d.id(`i % ${CONTACTS}`, 0xc0)
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
      await run(`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT ${d.id('i', 0xc0)}, '${projectId}', 'user' || i || '@example.com', ${store.dialect === 'pg' ? 'true' : '1'}, ${d.json(`'{}'`)}, ${at('0', 0)}, ${at('0', 0)}
        FROM ${d.series(CONTACTS, 'i')}`)
      await run(`INSERT INTO emails (id, project_id, contact_id, template_id, campaign_id, source_type, type, message_id, from_address, to_address,
          subject, list_unsubscribe, status, attempts, sent_at, created_at, updated_at)
        SELECT ${emailId}, '${projectId}', ${contactOf}, NULL, CASE WHEN ${inCampaign} THEN ${campaignOf} END, CASE WHEN ${inCampaign} THEN 'campaign' ELSE 'send' END,
          CASE WHEN ${inCampaign} THEN 'MARKETING' ELSE 'TRANSACTIONAL' END, '<' || i || '@acme.test>', 'news@acme.test', 'user' || (i % ${CONTACTS}) || '@example.com',
          'Hello', ${store.dialect === 'pg' ? 'false' : '0'},
          CASE WHEN i % 100 < 3 THEN 'BOUNCED' WHEN i % 10 < 3 THEN 'OPENED' ELSE 'DELIVERED' END, 1, ${at('i', 1000)}, ${at('i', 0)}, ${at('i', 5000)}
        FROM ${d.series(EMAILS, 'i')}`)
      const events = (tag: number, name: string, where: string, plus: number, data: string) => run(`
        INSERT INTO events (id, project_id, contact_id, name, data, email_id, campaign_id, created_at)
        SELECT ${evId(tag)}, '${projectId}', ${contactOf}, '${name}', ${d.json(data)}, ${emailId}, CASE WHEN ${inCampaign} THEN ${campaignOf} END, ${at('i', plus)}
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

/**
 * --plans: the plan of every query of the activity feed, per filter (SQLite: EXPLAIN QUERY PLAN;
 * PostgreSQL: EXPLAIN ANALYZE, so with its time), as the service builds them (src/modules/activity/repo.ts).
 */
async function explainFeed(store: Store, projectId: string, ids: { campaign: string; contactId: string; emailId: string; now: number }) {
  const explain = async (label: string, wrapped: SQLWrapper) => {
    const q = wrapped.getSQL()
    const rows = store.dialect === 'pg'
      ? (await store.rows<{ 'QUERY PLAN': string }>(sql`EXPLAIN (ANALYZE, COSTS OFF) ${q}`)).map((r) => r['QUERY PLAN'])
      : (await store.rows<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${q}`)).map((r) => r.detail)
    console.log(`${store.dialect}: plan of ${label}\n    ${rows.join('\n    ')}`)
  }
  const since = new Date(ids.now - 60 * DAY)
  const until = new Date(ids.now - 53 * DAY)
  const after = { at: ids.now - 30 * DAY, id: 'ffffffff' }
  const filters: Array<[string, activity.EmailFilter]> = [
    ['no filter', {}], ['status', { status: 'BOUNCED' }], ['date range', { since, until }], ['contact', { contactId: ids.contactId }],
    ['campaign', { campaignId: ids.campaign }], ['email', { emailId: ids.emailId }], ['contact + date range', { contactId: ids.contactId, since, until }],
    ['campaign + date range', { campaignId: ids.campaign, since, until }],
  ]
  for (const [name, f] of filters) {
    await explain(`emails page, ${name}, after a cursor`, activity.emailPageQuery(store, projectId, f, 21, after))
    if (!f.status) {
      const ev = { ...f, types: EVENT_TYPES }
      await explain(`events page (one of ${activity.eventPageQueries(store, projectId, ev, 21, after).length}), ${name}, every type, after a cursor`, activity.eventPageQueries(store, projectId, ev, 21, after)[0])
      await explain(`events page, ${name}, type email.complaint`, activity.eventPageQueries(store, projectId, { ...f, types: ['email.complaint'] }, 21, null)[0])
    }
    if (f.status || f.contactId || f.campaignId || f.emailId) {
      await explain(`emails total (capped), ${name}`, activity.countEmailsUpToQuery(store, projectId, f, 10_000))
      if (!f.status) await explain(`events total (capped), ${name}`, activity.countEventsUpToQuery(store, projectId, { ...f, types: EVENT_TYPES }, 10_000))
    }
  }
  await explain('counters (every hour)', sql`SELECT kind, sum(n) AS n FROM activity_counts WHERE project_id = ${projectId} AND kind IN ('email', 'email.open') GROUP BY kind`)
  await explain('emails of a partial hour', activity.countEmailsInQuery(store, projectId, new Date(ids.now - 1800_000), new Date(ids.now)))
  await explain('events of a partial hour', activity.countEventsInQuery(store, projectId, EVENT_TYPES, new Date(ids.now - 1800_000), new Date(ids.now)))
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
    console.log(`${kind}: generated ${EMAILS.toLocaleString()} emails, ${CONTACTS.toLocaleString()} contacts and ${Number(events).toLocaleString()} events in ${fmt(genMs)} (${Math.round((EMAILS + Number(events)) / (genMs / 1000)).toLocaleString()} rows/s; indexes rebuilt and activity counters counted after the load)`)
    const [r, rollMs] = await timed(() => rollup(env.deps, new Date(now)))
    console.log(`${kind}: first rollup (every hour since the first event): ${r.hours} hours, ${r.rows.toLocaleString()} counter rows in ${fmt(rollMs)}`)
    const [, againMs] = await timed(() => rollup(env.deps, new Date(now + 3_600_000)))
    console.log(`${kind}: next rollup (one more hour, the last one again): ${fmt(againMs)}`)

    const iso = (ms: number) => new Date(ms).toISOString()
    const campaign = (await env.store.rows<{ id: string }>(sql`SELECT id FROM campaigns WHERE project_id = ${p.id} ORDER BY id LIMIT 1 OFFSET 150`))[0].id
    const oldCampaign = (await env.store.rows<{ id: string }>(sql`SELECT id FROM campaigns WHERE project_id = ${p.id} ORDER BY id LIMIT 1 OFFSET 3`))[0].id
    const [{ id: contactId, email: contact }] = await env.store.rows<{ id: string; email: string }>(sql`SELECT id, email FROM contacts WHERE project_id = ${p.id} ORDER BY id LIMIT 1 OFFSET ${Math.floor(CONTACTS / 2)}`)
    const [{ id: emailId }] = await env.store.rows<{ id: string }>(sql`SELECT id FROM emails WHERE project_id = ${p.id} AND campaign_id = ${campaign} ORDER BY id LIMIT 1 OFFSET 7`)
    if (process.argv.includes('--plans')) await explainFeed(env.store, p.id, { campaign, contactId, emailId, now })
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
      ['activity', '/activity?type=email&limit=20'],
      ['activity', '/activity?type=email.bounce&limit=20'],
      ['activity', '/activity?type=email.complaint,contact.unsubscribed&limit=20'],
      ['activity', '/activity?status=BOUNCED&limit=20'],
      ['activity', `/activity?from=${iso(now - 60 * DAY - 1234)}&to=${iso(now - 53 * DAY + 5678)}&limit=20`],
      ['activity', `/activity?type=email.open&from=${iso(now - 60 * DAY - 1234)}&to=${iso(now - 53 * DAY + 5678)}&limit=20`],
      ['activity', `/activity?contact=${contact}&limit=20`],
      ['activity', `/activity?contactId=${contactId}&type=email.open&limit=20`],
      ['activity', `/activity?campaignId=${campaign}&limit=20`],
      ['activity', `/activity?campaignId=${campaign}&type=email.click&limit=20`],
      ['activity', `/activity?campaignId=${oldCampaign}&limit=20`],
      ['activity', `/activity?emailId=${emailId}&limit=20`],
      ['activity', '/activity/stats?days=30'],
      ['activity', '/activity/stats?days=365'],
      ['activity', '/activity/types'],
      ['activity', '/activity/recent-count?minutes=60'],
      ['activity', '/activity/recent-count?minutes=10080'],
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
      if (status !== 200) console.log(`${kind}: ${path} answered ${status}`)
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
