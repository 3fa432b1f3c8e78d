import { and, asc, desc, eq, gte, inArray, lt, min, ne, sql } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { epochMs, jsonText, momentParam, utcHourMs } from '../../db/dialect'
import { INLINE_NAMES } from '../events/inline'

/**
 * The only SQL of the analytics module. Two sources with one shape, counts per (campaign, UTC hour, metric):
 * - `analytics_hourly`, the rolled-up hours (everything before the rollup's `rolled_until`);
 * - the events themselves, for the hours the rollup has not reached yet (at most an hour or two normally),
 *   counted with the same query the rollup job uses.
 * Every function that reads tenant data takes the project id.
 */

export const HOUR_MS = 3_600_000
export const ROLLUP_NAME = 'hourly'

/** One counter: `campaignId` '' is the project's total. */
export interface Count { campaignId: string; hour: number; metric: string; value: number }

/** Raw event counts of one project: per campaign (the email's, '' when none), hour, event name and sub-kind. */
interface EventCount { campaignId: string | null; hour: number | string; name: string; sub: unknown; n: number | string }

const FIRST = new Set(['1', 'true', 'hard'])

/** Event name (and its sub-kind: a first open or click, a hard bounce) to the metrics it counts toward. */
export function metricsOf(name: string, sub: unknown): string[] {
  const yes = sub !== null && sub !== undefined && FIRST.has(String(sub))
  switch (name) {
    case 'email.sent': return ['sent']
    case 'email.delivery': return ['delivered']
    case 'email.open': return yes ? ['opened', 'unique_opened'] : ['opened']
    case 'email.click': return yes ? ['clicked', 'unique_clicked'] : ['clicked']
    case 'email.bounce': return yes ? ['bounced', 'hard_bounced'] : ['bounced']
    case 'email.complaint': return ['complained']
    case 'email.failed': return ['failed']
    case 'email.received': return ['received']
    case 'contact.unsubscribed': return ['unsubscribed', `event:${name}`]
    default: return name.startsWith('email.') ? [] : [`event:${name}`]
  }
}

/**
 * Counts the events of one project created in [from, to), per campaign, UTC hour and metric: the project's
 * totals under campaign '' and each campaign's share under its id. The campaign is the email's
 * (`emails.campaign_id`, joined by the event's email id).
 */
export async function countEvents(store: Store, projectId: string, from: Date, to: Date, db?: Db): Promise<Count[]> {
  if (to <= from) return []
  const { events: e, emails: m } = store.t
  const hour = utcHourMs(store, e.createdAt)
  // SQLite's json_extract gives a JSON boolean as 1/0, PostgreSQL's ->> as 'true'/'false' (read below).
  const sub = sql<unknown>`CASE ${e.name} WHEN 'email.open' THEN ${jsonText(store, e.data, 'isFirstOpen')} WHEN 'email.click' THEN ${jsonText(store, e.data, 'isFirstClick')} WHEN 'email.bounce' THEN ${jsonText(store, e.data, 'bounceType')} END`
  const rows: EventCount[] = await (db ?? store.db).select({ campaignId: m.campaignId, hour, name: e.name, sub, n: sql<number>`count(*)` })
    .from(e).leftJoin(m, eq(m.id, e.emailId))
    .where(and(eq(e.projectId, projectId), gte(e.createdAt, from), lt(e.createdAt, to)))
    .groupBy(m.campaignId, hour, e.name, sub)
  const out = new Map<string, Count>()
  const add = (campaignId: string, h: number, metric: string, n: number) => {
    const k = `${campaignId}\u0000${h}\u0000${metric}`
    const c = out.get(k)
    if (c) c.value += n
    else out.set(k, { campaignId, hour: h, metric, value: n })
  }
  // A direct delivery's email.sent and email.delivery may be its email's row's (events/inline.ts).
  const inlineHour = utcHourMs(store, m.deliveredAt)
  const inline = await (db ?? store.db).select({ campaignId: m.campaignId, hour: inlineHour, n: sql<number>`count(*)` }).from(m)
    .where(and(sql`${m.inlineEvents} IS NOT NULL`, eq(m.projectId, projectId), gte(m.deliveredAt, from), lt(m.deliveredAt, to)))
    .groupBy(m.campaignId, inlineHour)
  for (const r of inline) for (const name of INLINE_NAMES) rows.push({ campaignId: r.campaignId, hour: r.hour, name, sub: null, n: r.n })
  for (const r of rows) {
    const h = Number(r.hour)
    const n = Number(r.n)
    for (const metric of metricsOf(r.name, r.sub)) {
      add('', h, metric, n)
      if (r.campaignId && !metric.startsWith('event:')) add(r.campaignId, h, metric, n)
    }
  }
  return [...out.values()]
}

/** Where the rollup stands: every hour before it is in analytics_hourly (null: it never ran). */
export async function rolledUntil(store: Store, db?: Db): Promise<Date | null> {
  const r = store.t.analyticsRollups
  const [row] = await (db ?? store.db).select({ at: r.rolledUntil }).from(r).where(eq(r.name, ROLLUP_NAME)).limit(1)
  return row?.at ?? null
}

export async function setRolledUntil(store: Store, db: Db, at: Date, now: Date): Promise<void> {
  const r = store.t.analyticsRollups
  await db.insert(r).values({ name: ROLLUP_NAME, rolledUntil: at, updatedAt: now })
    .onConflictDoUpdate({ target: r.name, set: { rolledUntil: at, updatedAt: now } })
}

/** Every project id (the rollup walks them one by one: the events are indexed by project, then time). */
export async function projectIds(store: Store): Promise<string[]> {
  const p = store.t.projects
  return (await store.db.select({ id: p.id }).from(p).orderBy(asc(p.id))).map((r) => r.id)
}

/** The first event of any project (where a first rollup starts). */
export async function firstEventAt(store: Store, projectIds: readonly string[]): Promise<Date | null> {
  const { events: e, emails: m } = store.t
  let first: Date | null = null
  for (const id of projectIds) {
    const [row] = await store.db.select({ at: min(e.createdAt) }).from(e).where(eq(e.projectId, id))
    if (row?.at && (!first || row.at < first)) first = row.at
    // An inline event (events/inline.ts) may be older than any stored one.
    const [inline] = await store.db.select({ at: m.deliveredAt }).from(m)
      .where(and(sql`${m.inlineEvents} IS NOT NULL`, eq(m.projectId, id))).orderBy(asc(m.deliveredAt)).limit(1)
    if (inline?.at && (!first || inline.at < first)) first = inline.at
  }
  return first
}

/** Replaces one project's counters of the hours in [from, to) with `counts`. */
export async function replaceHours(store: Store, db: Db, projectId: string, from: Date, to: Date, counts: Count[]): Promise<void> {
  const a = store.t.analyticsHourly
  await db.delete(a).where(and(eq(a.projectId, projectId), gte(a.hour, from), lt(a.hour, to)))
  for (let i = 0; i < counts.length; i += 500) {
    await db.insert(a).values(counts.slice(i, i + 500).map((c) => ({ projectId, campaignId: c.campaignId, hour: new Date(c.hour), metric: c.metric, value: c.value })))
  }
}

/** Rolled-up counters of the project's totals (campaign '') or of one campaign, hours in [from, to): raw rows, no per-row mapping. */
export async function hourly(store: Store, projectId: string, campaignId: string, from: Date, to: Date, metrics?: readonly string[]): Promise<Count[]> {
  if (to <= from) return []
  const at = (d: Date) => momentParam(store, d)
  const only = metrics ? sql` AND metric IN (${sql.join(metrics.map((m) => sql`${m}`), sql`, `)})` : sql``
  const hour = epochMs(store, sql.raw('hour'))
  const rows = await store.rows<{ hour: number | string; metric: string; value: number | string }>(sql`SELECT ${hour} AS hour, metric, value FROM analytics_hourly
    WHERE project_id = ${projectId} AND campaign_id = ${campaignId} AND hour >= ${at(from)} AND hour < ${at(to)}${only}`)
  return rows.map((r) => ({ campaignId, hour: Number(r.hour), metric: r.metric, value: Number(r.value) }))
}

/** Sums of the metrics of the project's totals (campaign '') or of one campaign over hours in [from, to). */
export async function hourlySums(store: Store, projectId: string, campaignId: string, from: Date, to: Date, metrics: readonly string[]): Promise<Array<{ metric: string; value: number }>> {
  if (to <= from || !metrics.length) return []
  const a = store.t.analyticsHourly
  const rows = await store.db.select({ metric: a.metric, value: sql<number>`sum(${a.value})` }).from(a)
    .where(and(eq(a.projectId, projectId), eq(a.campaignId, campaignId), inArray(a.metric, [...metrics]), gte(a.hour, from), lt(a.hour, to)))
    .groupBy(a.metric)
  return rows.map((r) => ({ metric: r.metric, value: Number(r.value) }))
}

/** Sum of one metric per campaign (not the totals) over hours in [from, to), largest first. */
export async function topCampaigns(store: Store, projectId: string, metric: string, from: Date, to: Date, limit: number): Promise<Array<{ campaignId: string; value: number }>> {
  if (to <= from) return []
  const a = store.t.analyticsHourly
  const total = sql<number>`sum(${a.value})`
  const rows = await store.db.select({ campaignId: a.campaignId, value: total }).from(a)
    .where(and(eq(a.projectId, projectId), eq(a.metric, metric), gte(a.hour, from), lt(a.hour, to), ne(a.campaignId, '')))
    .groupBy(a.campaignId).orderBy(desc(total), asc(a.campaignId)).limit(limit)
  return rows.map((r) => ({ campaignId: r.campaignId, value: Number(r.value) }))
}

/** Sum of each metric of the given campaigns over hours in [from, to). */
export async function campaignTotals(store: Store, projectId: string, campaignIds: readonly string[], from: Date, to: Date): Promise<Count[]> {
  if (!campaignIds.length || to <= from) return []
  const a = store.t.analyticsHourly
  const rows = await store.db.select({ campaignId: a.campaignId, metric: a.metric, value: sql<number>`sum(${a.value})` }).from(a)
    .where(and(eq(a.projectId, projectId), inArray(a.campaignId, [...campaignIds]), gte(a.hour, from), lt(a.hour, to)))
    .groupBy(a.campaignId, a.metric)
  return rows.map((r) => ({ campaignId: r.campaignId, hour: 0, metric: r.metric, value: Number(r.value) }))
}

/** Sum of every `event:<name>` metric of the project over hours in [from, to). */
export async function eventTotals(store: Store, projectId: string, from: Date, to: Date): Promise<Array<{ metric: string; value: number }>> {
  if (to <= from) return []
  const a = store.t.analyticsHourly
  const rows = await store.db.select({ metric: a.metric, value: sql<number>`sum(${a.value})` }).from(a)
    .where(and(eq(a.projectId, projectId), gte(a.metric, 'event:'), lt(a.metric, 'event;'), gte(a.hour, from), lt(a.hour, to), eq(a.campaignId, '')))
    .groupBy(a.metric)
  return rows.map((r) => ({ metric: r.metric, value: Number(r.value) }))
}

export interface CampaignInfo { id: string; name: string; status: string; totalRecipients: number; sentCount: number; sentAt: Date | null; createdAt: Date }

/** The project's campaigns among `ids`. */
export async function campaignsByIds(store: Store, projectId: string, ids: readonly string[]): Promise<CampaignInfo[]> {
  if (!ids.length) return []
  const c = store.t.campaigns
  return store.db.select({ id: c.id, name: c.name, status: c.status, totalRecipients: c.totalRecipients, sentCount: c.sentCount, sentAt: c.sentAt, createdAt: c.createdAt })
    .from(c).where(and(eq(c.projectId, projectId), inArray(c.id, [...ids])))
}

/** A page of the project's campaigns, newest first. */
export async function campaignPage(store: Store, projectId: string, limit: number, offset: number): Promise<CampaignInfo[]> {
  const c = store.t.campaigns
  return store.db.select({ id: c.id, name: c.name, status: c.status, totalRecipients: c.totalRecipients, sentCount: c.sentCount, sentAt: c.sentAt, createdAt: c.createdAt })
    .from(c).where(eq(c.projectId, projectId)).orderBy(desc(c.createdAt), desc(c.id)).limit(limit).offset(offset)
}

export async function countCampaigns(store: Store, projectId: string): Promise<number> {
  const c = store.t.campaigns
  const [row] = await store.db.select({ n: sql<number>`count(*)` }).from(c).where(eq(c.projectId, projectId))
  return Number(row?.n ?? 0)
}
