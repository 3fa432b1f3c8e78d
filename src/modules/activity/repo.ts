import { and, asc, count, desc, eq, gt, gte, inArray, lt, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { momentParam, noIndex, utcHourMs } from '../../db/dialect'
import { EVENT_TYPES } from './model'
import type { EmailRow } from '../emails/repo'
import { hydrateEmailEvents } from '../events/repo'
import { countInline, inlineNamesOf, inlinePage, isInlineName, newestFirst } from '../events/inline'

/**
 * The SQL of the activity feed: keyset reads of `emails` (the sends) and `events` (joined with
 * `contacts`), both newest first on (created_at, id), merged by the service; and its counts, from the
 * counters of migration 0024 (`activity_counts`, kept by triggers) plus, at the edges of a window, the
 * rows of less than an hour. Every read walks an index in (created_at, id) order and stops after a page
 * (docs/architecture.md, Activity).
 */

export interface After { at: number; id: string }

export interface EmailFilter { status?: string; contactId?: string; emailId?: string; campaignId?: string; since?: Date; until?: Date }
export interface EventFilter { types: readonly string[]; contactId?: string; emailId?: string; campaignId?: string; since?: Date; until?: Date }

export type EmailItemRow = Omit<EmailRow, 'html' | 'text' | 'attachments' | 'headers' | 'inlineEvents'> & { opens: number | null; clicks: number | null }

export interface EventItemRow {
  id: string
  name: string
  contactId: string | null
  contactEmail: string | null
  emailId: string | null
  data: Record<string, unknown>
  createdAt: Date
}

/** events.campaign_id (migration 0024): set by a trigger, not mapped in the drizzle table. */
const eventCampaign = sql.raw('"events"."campaign_id"')

/**
 * The feed anchors a read on its most selective filter (one email, then one contact, then one campaign);
 * the other terms are `noIndex` (src/db/dialect.ts) so that SQLite, without statistics, does not take the
 * (project, type) index instead and walk every event of a type to find one contact's.
 */
const unindexed = (store: Store, column: AnyColumn, anchored: boolean): SQL => noIndex(store, column, anchored)

function emailConds(store: Store, projectId: string, f: EmailFilter): SQL[] {
  const e = store.t.emails
  const anchored = Boolean(f.emailId || f.contactId || f.campaignId)
  const out: SQL[] = [eq(unindexed(store, e.projectId, anchored), projectId)]
  if (f.status) out.push(eq(unindexed(store, e.status, anchored), f.status))
  if (f.contactId) out.push(eq(e.contactId, f.contactId))
  if (f.emailId) out.push(eq(e.id, f.emailId))
  if (f.campaignId) out.push(eq(unindexed(store, e.campaignId, Boolean(f.emailId || f.contactId)), f.campaignId))
  if (f.since) out.push(gte(e.createdAt, f.since))
  if (f.until) out.push(lt(e.createdAt, f.until))
  return out
}

function eventConds(store: Store, projectId: string, f: EventFilter): SQL[] {
  const e = store.t.events
  const anchored = Boolean(f.emailId || f.contactId || f.campaignId)
  const name = unindexed(store, e.name, Boolean(f.emailId || f.contactId))
  const out: SQL[] = [eq(unindexed(store, e.projectId, anchored), projectId), f.types.length === 1 ? eq(name, f.types[0]) : inArray(name, [...f.types])]
  if (f.contactId) out.push(eq(unindexed(store, e.contactId, Boolean(f.emailId)), f.contactId))
  if (f.emailId) out.push(eq(e.emailId, f.emailId))
  if (f.campaignId) out.push(sql`${noIndex(store, eventCampaign, Boolean(f.emailId || f.contactId))} = ${f.campaignId}`)
  if (f.since) out.push(gte(e.createdAt, f.since))
  if (f.until) out.push(lt(e.createdAt, f.until))
  return out
}

/**
 * One upper bound of a page, the tighter of `until` and the cursor (either implies the other): given both,
 * the stores start the index walk at one of them and filter on the other, and PostgreSQL may start at the
 * looser one, crossing every row between them.
 */
function upperBound<F extends { until?: Date }>(f: F, after: After | null): [F, After | null] {
  if (!after || !f.until) return [f, after]
  return after.at < f.until.getTime() ? [{ ...f, until: undefined }, after] : [f, null]
}

/** Rows strictly before the cursor in (created_at, id) order: a row-value comparison, so both stores walk the index. */
function olderThan(store: Store, createdAt: AnyColumn, id: AnyColumn, after: After): SQL {
  return sql`(${createdAt}, ${id}) < (${momentParam(store, after.at)}, ${after.id})`
}

export async function emailPage(store: Store, projectId: string, f: EmailFilter, limit: number, after: After | null): Promise<EmailItemRow[]> {
  return emailPageQuery(store, projectId, f, limit, after)
}

/** The query of emailPage (bench/analytics.ts --plans explains it). */
export function emailPageQuery(store: Store, projectId: string, f: EmailFilter, limit: number, after: After | null) {
  const { emails: e, emailStats: s } = store.t
  const [g, from] = upperBound(f, after)
  const where = emailConds(store, projectId, g)
  if (from) where.push(olderThan(store, e.createdAt, e.id, from))
  return store.db.select({
    id: e.id, projectId: e.projectId, contactId: e.contactId, templateId: e.templateId, campaignId: e.campaignId,
    sourceType: e.sourceType, sourceId: e.sourceId, type: e.type, domainId: e.domainId, messageId: e.messageId,
    fromAddress: e.fromAddress, fromName: e.fromName, toAddress: e.toAddress, toName: e.toName, replyTo: e.replyTo,
    subject: e.subject, listUnsubscribe: e.listUnsubscribe, status: e.status, attempts: e.attempts, lastReply: e.lastReply,
    deliveredTo: e.deliveredTo, bounceType: e.bounceType, size: e.size, sentAt: e.sentAt, deliveredAt: e.deliveredAt,
    openedAt: e.openedAt, clickedAt: e.clickedAt, bouncedAt: e.bouncedAt, complainedAt: e.complainedAt, failedAt: e.failedAt,
    createdAt: e.createdAt, updatedAt: e.updatedAt, opens: s.opens, clicks: s.clicks,
  }).from(e).leftJoin(s, eq(s.emailId, e.id)).where(and(...where)).orderBy(desc(e.createdAt), desc(e.id)).limit(limit)
}

function eventPageQuery(store: Store, projectId: string, f: EventFilter, limit: number, after: After | null) {
  const { events: e, contacts: c } = store.t
  const [g, from] = upperBound(f, after)
  const where = eventConds(store, projectId, g)
  if (from) where.push(olderThan(store, e.createdAt, e.id, from))
  return store.db.select({
    id: e.id, name: e.name, contactId: e.contactId, contactEmail: c.email, emailId: e.emailId, data: e.data, createdAt: e.createdAt,
  }).from(e).leftJoin(c, eq(c.id, e.contactId)).where(and(...where)).orderBy(desc(e.createdAt), desc(e.id)).limit(limit)
}

/**
 * The newest `limit` events after the cursor. By one email or one contact (few rows): one read of that
 * index. Otherwise one read per event type, each walking (project, type, created_at, id) or (campaign,
 * type, created_at, id) and stopping after `limit` rows, merged here: an index read in time order cannot
 * take several types at once, and a read of the time index that skips the other types would cross
 * millions of rows to find a rare type. Email events come with their email's base (events/email-base.ts).
 */
export async function eventPage(store: Store, projectId: string, f: EventFilter, limit: number, after: After | null): Promise<EventItemRow[]> {
  const pages: EventItemRow[][] = await Promise.all([
    ...eventPageQueries(store, projectId, f, limit, after),
    // A direct delivery's events may be its email's row's (events/inline.ts): one more read, merged.
    inlinePage(store, projectId, { ...f, names: f.types }, limit, after),
  ])
  const page = pages.flat().sort(newestFirst).slice(0, limit)
  return hydrateEmailEvents(store, projectId, page)
}

/** The queries of eventPage: one, or one per type. */
export function eventPageQueries(store: Store, projectId: string, f: EventFilter, limit: number, after: After | null) {
  if (f.emailId || f.contactId || f.types.length === 1) return [eventPageQuery(store, projectId, f, limit, after)]
  return f.types.map((t) => eventPageQuery(store, projectId, { ...f, types: [t] }, limit, after))
}

/** How many emails match, counting at most `cap` (an index read that stops there). */
export async function countEmailsUpTo(store: Store, projectId: string, f: EmailFilter, cap: number): Promise<number> {
  const [row] = await countEmailsUpToQuery(store, projectId, f, cap)
  return Number(row?.n ?? 0)
}

export function countEmailsUpToQuery(store: Store, projectId: string, f: EmailFilter, cap: number) {
  const e = store.t.emails
  const inner = store.db.select({ one: sql`1`.as('one') }).from(e).where(and(...emailConds(store, projectId, f))).limit(cap).as('m')
  return store.db.select({ n: count() }).from(inner)
}

/** How many events match, counting at most `cap`. */
export async function countEventsUpTo(store: Store, projectId: string, f: EventFilter, cap: number): Promise<number> {
  const [[row], inline] = await Promise.all([countEventsUpToQuery(store, projectId, f, cap), countInline(store, projectId, { ...f, names: f.types }, cap)])
  return Math.min(cap, Number(row?.n ?? 0) + inline)
}

export function countEventsUpToQuery(store: Store, projectId: string, f: EventFilter, cap: number) {
  const e = store.t.events
  const inner = store.db.select({ one: sql`1`.as('one') }).from(e).where(and(...eventConds(store, projectId, f))).limit(cap).as('m')
  return store.db.select({ n: count() }).from(inner)
}

/**
 * The counters (activity_counts) of `kinds` ('email' or an event type) over the whole hours in [fromHour,
 * toHour) (epoch ms; either open), summed over their slots.
 */
export async function countedKinds(store: Store, projectId: string, kinds: readonly string[], fromHour?: number, toHour?: number): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  if (!kinds.length) return out
  const range = sql.join([
    ...(fromHour === undefined ? [] : [sql` AND hour >= ${fromHour}`]),
    ...(toHour === undefined ? [] : [sql` AND hour < ${toHour}`]),
  ])
  const rows = await store.rows<{ kind: string; n: number | string }>(sql`SELECT kind, sum(n) AS n FROM activity_counts
    WHERE project_id = ${projectId} AND kind IN (${sql.join(kinds.map((k) => sql`${k}`), sql`, `)})${range} GROUP BY kind`)
  for (const r of rows) out.set(r.kind, Number(r.n))
  return out
}

/** Emails queued in [since, until) counted from their rows (the edges of a window: less than an hour). */
export async function countEmailsIn(store: Store, projectId: string, since: Date, until: Date): Promise<number> {
  const [row] = await countEmailsInQuery(store, projectId, since, until)
  return Number(row?.n ?? 0)
}

export function countEmailsInQuery(store: Store, projectId: string, since: Date, until: Date) {
  const e = store.t.emails
  return store.db.select({ n: count() }).from(e).where(and(eq(e.projectId, projectId), gte(e.createdAt, since), lt(e.createdAt, until)))
}

/** Events of these types in [since, until), per type, counted from their rows (one range of the type index each). */
export async function countEventsIn(store: Store, projectId: string, types: readonly string[], since: Date, until: Date): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  if (!types.length) return out
  for (const r of await countEventsInQuery(store, projectId, types, since, until)) out.set(r.name, Number(r.n))
  // Each inline email is one event of each inline name: counted once.
  const inline = inlineNamesOf(types)
  const n = inline.length ? await countInline(store, projectId, { names: [inline[0]], since, until }) : 0
  if (n) for (const name of inline) out.set(name, (out.get(name) ?? 0) + n)
  return out
}

export function countEventsInQuery(store: Store, projectId: string, types: readonly string[], since: Date, until: Date) {
  const e = store.t.events
  return store.db.select({ name: e.name, n: count() }).from(e)
    .where(and(eq(e.projectId, projectId), inArray(e.name, [...types]), gte(e.createdAt, since), lt(e.createdAt, until))).groupBy(e.name)
}

/** When the last item of each kind was created: one step down an index each ('email': the project's emails). */
export async function lastSeen(store: Store, projectId: string, kinds: readonly string[]): Promise<Map<string, Date>> {
  const { emails: m, events: e } = store.t
  const out = new Map<string, Date>()
  await Promise.all(kinds.map(async (kind) => {
    const [row] = kind === 'email'
      ? await store.db.select({ at: m.createdAt }).from(m).where(eq(m.projectId, projectId)).orderBy(desc(m.createdAt)).limit(1)
      : await store.db.select({ at: e.createdAt }).from(e).where(and(eq(e.projectId, projectId), eq(e.name, kind))).orderBy(desc(e.createdAt)).limit(1)
    // The newest inline one (events/inline.ts) may be newer.
    const [inline] = isInlineName(kind) ? await inlinePage(store, projectId, { names: [kind] }, 1, null) : []
    const at = Math.max(row?.at.getTime() ?? 0, inline?.createdAt.getTime() ?? 0)
    if (at) out.set(kind, new Date(at))
  }))
  return out
}

/** A contact of the project by id or by (lower-cased) email address; null when there is none. */
export async function contactIdByRef(store: Store, projectId: string, ref: string): Promise<string | null> {
  const c = store.t.contacts
  const [row] = await store.db.select({ id: c.id }).from(c)
    .where(and(eq(c.projectId, projectId), ref.includes('@') ? eq(c.email, ref.trim().toLowerCase()) : eq(c.id, ref))).limit(1)
  return row?.id ?? null
}

export interface UpcomingRow { kind: string; id: string; at: Date; title: string; detail: Record<string, unknown> }

/** SCHEDULED campaigns of the project, soonest first. */
export async function scheduledCampaigns(store: Store, projectId: string, limit: number): Promise<UpcomingRow[]> {
  const c = store.t.campaigns
  const rows = await store.db.select({ id: c.id, name: c.name, at: c.scheduledFor, status: c.status, audienceType: c.audienceType }).from(c)
    .where(and(eq(c.projectId, projectId), eq(c.status, 'SCHEDULED'))).orderBy(asc(c.scheduledFor), asc(c.id)).limit(limit)
  return rows.map((r) => ({ kind: 'campaign', id: r.id, at: r.at ?? new Date(0), title: r.name, detail: { status: r.status, audienceType: r.audienceType } }))
}

export async function countScheduledCampaigns(store: Store, projectId: string): Promise<number> {
  const c = store.t.campaigns
  const [row] = await store.db.select({ n: count() }).from(c).where(and(eq(c.projectId, projectId), eq(c.status, 'SCHEDULED')))
  return Number(row?.n ?? 0)
}

/** Emails of the project waiting for another delivery attempt (deferred at least once), soonest first. */
export async function deferredEmails(store: Store, projectId: string, limit: number): Promise<UpcomingRow[]> {
  const { outboundQueue: q, emails: e } = store.t
  const rows = await store.db.select({
    id: q.emailId, at: q.runAt, attempts: q.attempts, lastError: q.lastError, to: e.toAddress, subject: e.subject, campaignId: e.campaignId,
  }).from(q).innerJoin(e, eq(e.id, q.emailId))
    .where(and(eq(q.projectId, projectId), gt(q.attempts, 0))).orderBy(asc(q.runAt), asc(q.emailId)).limit(limit)
  return rows.map((r) => ({
    kind: 'deferred', id: r.id, at: r.at, title: r.subject,
    detail: { to: r.to, attempts: r.attempts, lastError: r.lastError, campaignId: r.campaignId },
  }))
}

export async function countDeferredEmails(store: Store, projectId: string): Promise<number> {
  const q = store.t.outboundQueue
  const [row] = await store.db.select({ n: count() }).from(q).where(and(eq(q.projectId, projectId), gt(q.attempts, 0)))
  return Number(row?.n ?? 0)
}

/**
 * Counts activity_counts again from the rows, for every project (what migration 0024 did once): after a
 * bulk load that bypassed the triggers (bench/analytics.ts), or to check the counters against the rows.
 */
export async function recountActivity(store: Store, db: Db): Promise<void> {
  const hour = utcHourMs(store, sql.raw('created_at'))
  const inlineHour = utcHourMs(store, sql.raw('delivered_at'))
  const kinds = sql.raw(EVENT_TYPES.map((t) => `'${t}'`).join(', '))
  await store.exec(sql`DELETE FROM activity_counts`, db)
  await store.exec(sql`INSERT INTO activity_counts (project_id, kind, hour, slot, n)
    SELECT project_id, 'email', ${hour}, 0, count(*) FROM emails GROUP BY project_id, ${hour}`, db)
  await store.exec(sql`INSERT INTO activity_counts (project_id, kind, hour, slot, n)
    SELECT project_id, name, ${hour}, 0, count(*) FROM events WHERE name IN (${kinds}) GROUP BY project_id, name, ${hour}`, db)
  // email.delivery read from emails' rows (events/inline.ts), added to the stored ones' hours.
  await store.exec(sql`INSERT INTO activity_counts AS c (project_id, kind, hour, slot, n)
    SELECT project_id, 'email.delivery', ${inlineHour}, 0, count(*) FROM emails WHERE inline_events IS NOT NULL GROUP BY project_id, ${inlineHour}
    ON CONFLICT (project_id, kind, hour, slot) DO UPDATE SET n = c.n + excluded.n`, db)
}
