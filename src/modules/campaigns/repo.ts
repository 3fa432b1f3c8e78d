import { and, asc, count, desc, eq, gt, gte, inArray, isNotNull, isNull, lte, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { jsonText, laterPlusMs, noIndex } from '../../db/dialect'

/** The only SQL of the campaigns module. Every function that reads tenant data takes the project id. */

export type CampaignRow = typeof import('../../db/schema').pgSchema.campaigns.$inferSelect
export type AudienceContact = { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }

export type SortKey = 'createdAt' | 'updatedAt' | 'name'

export interface ListFilter {
  status?: string
  search?: string
  sort: SortKey
  dir: 'asc' | 'desc'
  limit: number
  offset: number
}

export async function insert(store: Store, db: Db, row: CampaignRow): Promise<void> {
  await db.insert(store.t.campaigns).values(row)
}

export async function findById(store: Store, db: Db, projectId: string, id: string): Promise<CampaignRow | null> {
  const { campaigns } = store.t
  const [row] = await db.select().from(campaigns).where(and(eq(campaigns.projectId, projectId), eq(campaigns.id, id))).limit(1)
  return row ?? null
}

/** Updates the campaign only while its status is one of `from` (a state transition that cannot race); null otherwise. */
export async function updateIn(
  store: Store, db: Db, projectId: string, id: string, from: readonly string[], set: Partial<Omit<CampaignRow, 'id' | 'projectId' | 'createdAt'>>,
): Promise<CampaignRow | null> {
  const { campaigns } = store.t
  const [row] = await db.update(campaigns).set(set)
    .where(and(eq(campaigns.projectId, projectId), eq(campaigns.id, id), inArray(campaigns.status, [...from]))).returning()
  return row ?? null
}

/**
 * Advances the fan-out: the checkpoint and the counters (added to the stored ones), only while the campaign
 * is SENDING and its checkpoint is still `fromContactId` (so a cancel, or a second runner that got there
 * first, makes this a no-op: false).
 */
export async function advance(
  store: Store, db: Db, projectId: string, id: string,
  step: { fromContactId: string | null; lastContactId: string; queued: number; unsubscribed: number; suppressed: number; now: Date },
): Promise<boolean> {
  const { campaigns: c } = store.t
  const at = step.fromContactId === null ? isNull(c.lastContactId) : eq(c.lastContactId, step.fromContactId)
  const handled = step.queued + step.unsubscribed + step.suppressed
  const rows = await db.update(c).set({
    lastContactId: step.lastContactId,
    totalRecipients: sql`${c.totalRecipients} + ${handled}`,
    sentCount: sql`${c.sentCount} + ${step.queued}`,
    skippedUnsubscribed: sql`${c.skippedUnsubscribed} + ${step.unsubscribed}`,
    skippedSuppressed: sql`${c.skippedSuppressed} + ${step.suppressed}`,
    updatedAt: step.now,
  }).where(and(eq(c.projectId, projectId), eq(c.id, id), eq(c.status, 'SENDING'), at)).returning({ id: c.id })
  return rows.length > 0
}

/** Deletes the campaign unless its status is one of `blocked`; true when deleted. */
export async function removeUnless(store: Store, db: Db, projectId: string, id: string, blocked: readonly string[]): Promise<boolean> {
  const { campaigns } = store.t
  const rows = await db.delete(campaigns)
    .where(and(eq(campaigns.projectId, projectId), eq(campaigns.id, id), sql`${campaigns.status} NOT IN (${sql.join(blocked.map((s) => sql`${s}`), sql`, `)})`))
    .returning({ id: campaigns.id })
  return rows.length > 0
}

function likePattern(s: string): string {
  return `%${s.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
}

export async function list(store: Store, db: Db, projectId: string, f: ListFilter): Promise<{ rows: CampaignRow[]; total: number }> {
  const { campaigns } = store.t
  const where: SQL[] = [eq(campaigns.projectId, projectId)]
  if (f.status) where.push(eq(campaigns.status, f.status))
  if (f.search) {
    const p = likePattern(f.search)
    const matches = or(
      sql`lower(${campaigns.name}) LIKE ${p} ESCAPE '\\'`,
      sql`lower(${campaigns.subject}) LIKE ${p} ESCAPE '\\'`,
      sql`lower(${campaigns.fromEmail}) LIKE ${p} ESCAPE '\\'`,
    )
    if (matches) where.push(matches)
  }
  const cond = and(...where)
  const order = f.dir === 'asc' ? asc : desc
  const key = f.sort === 'name' ? sql`lower(${campaigns.name})` : f.sort === 'updatedAt' ? campaigns.updatedAt : campaigns.createdAt
  const [rows, [{ n }]] = await Promise.all([
    db.select().from(campaigns).where(cond).orderBy(order(key), order(campaigns.id)).limit(f.limit).offset(f.offset),
    db.select({ n: count() }).from(campaigns).where(cond),
  ])
  return { rows, total: Number(n) }
}

export type CounterRow = typeof import('../../db/schema').pgSchema.campaignStats.$inferSelect

/** The counters (campaign_stats) of the given campaigns of the project, by campaign id. */
export async function countersFor(store: Store, db: Db, projectId: string, ids: string[]): Promise<Map<string, CounterRow>> {
  if (!ids.length) return new Map()
  const s = store.t.campaignStats
  const rows = await db.select().from(s).where(and(eq(s.projectId, projectId), inArray(s.campaignId, ids)))
  return new Map(rows.map((r) => [r.campaignId, r]))
}

/** How many of the campaign's emails have a final outcome (campaign_stats.settled; 0 before the first). */
export async function settledCount(store: Store, projectId: string, campaignId: string): Promise<number> {
  const s = store.t.campaignStats
  const [row] = await store.db.select({ n: s.settled }).from(s).where(and(eq(s.projectId, projectId), eq(s.campaignId, campaignId)))
  return Number(row?.n ?? 0)
}

/**
 * Records that a contact unsubscribed through an email of the campaign: true the first time for this
 * contact and campaign, false when it was recorded already.
 */
export async function insertUnsubscribe(store: Store, db: Db, row: { projectId: string; campaignId: string; contactId: string; emailId: string | null; createdAt: Date }): Promise<boolean> {
  const u = store.t.campaignUnsubscribes
  const rows = await db.insert(u).values(row).onConflictDoNothing().returning({ id: u.contactId })
  return rows.length > 0
}

/** Campaigns of the project whose audience is the segment and whose status is one of `statuses`. */
export async function usingSegment(store: Store, db: Db, projectId: string, segmentId: string, statuses: readonly string[]): Promise<Array<{ id: string; name: string }>> {
  const { campaigns } = store.t
  return db.select({ id: campaigns.id, name: campaigns.name }).from(campaigns)
    .where(and(eq(campaigns.projectId, projectId), eq(campaigns.segmentId, segmentId), inArray(campaigns.status, [...statuses])))
}

/** SCHEDULED campaigns of every project whose time has come (the scheduler), oldest first. */
export async function dueScheduled(store: Store, now: Date, limit: number): Promise<Array<{ id: string; projectId: string }>> {
  const { campaigns } = store.t
  return store.db.select({ id: campaigns.id, projectId: campaigns.projectId }).from(campaigns)
    .where(and(eq(campaigns.status, 'SCHEDULED'), isNotNull(campaigns.scheduledFor), lte(campaigns.scheduledFor, now)))
    .orderBy(asc(campaigns.scheduledFor)).limit(limit)
}

/**
 * The next batch of the audience: contacts of the project with id > `afterId` matching `where`, in id
 * order (keyset, never OFFSET).
 */
/**
 * The project condition of a walk or look-up of contacts by primary key. On SQLite a plain
 * `project_id = ?` makes the planner take the project's index and then sort, or test every id of the
 * list, over all the project's contacts: each fan-out batch and each claimed batch's look-up cost time
 * in proportion to the audience (22 ms at 50,000 contacts, so quadratic over a campaign). The unary `+`
 * keeps it on the primary key; the project is still checked on every row.
 */
function ofProject(store: Store, projectId: string): SQL {
  const c = store.t.contacts
  return sql`${noIndex(store, c.projectId)} = ${projectId}`
}

export async function audienceBatch(store: Store, db: Db, projectId: string, where: SQL | null, afterId: string | null, limit: number): Promise<AudienceContact[]> {
  return audienceBatchQuery(store, db, projectId, where, afterId, limit)
}

/** The statement of audienceBatch, not run (its plan is checked by a test). */
export function audienceBatchQuery(store: Store, db: Db, projectId: string, where: SQL | null, afterId: string | null, limit: number) {
  const c = store.t.contacts
  const conds: SQL[] = [ofProject(store, projectId)]
  if (afterId !== null) conds.push(gt(c.id, afterId))
  if (where) conds.push(where)
  return db.select({ id: c.id, email: c.email, subscribed: c.subscribed, data: c.data }).from(c)
    .where(and(...conds)).orderBy(asc(c.id)).limit(limit)
}

/** How many contacts the audience condition selects (subscribed ones only for MARKETING): the cap check before a start. */
export async function audienceCount(store: Store, db: Db, projectId: string, where: SQL | null, subscribedOnly: boolean): Promise<number> {
  const c = store.t.contacts
  const conds: SQL[] = [eq(c.projectId, projectId)]
  if (subscribedOnly) conds.push(eq(c.subscribed, true))
  if (where) conds.push(where)
  const [row] = await db.select({ n: count() }).from(c).where(and(...conds))
  return Number(row?.n ?? 0)
}

/** One contact of the project by (lower-cased) email, for a test send. */
export async function contactByEmail(store: Store, db: Db, projectId: string, email: string): Promise<AudienceContact | null> {
  const c = store.t.contacts
  const [row] = await db.select({ id: c.id, email: c.email, subscribed: c.subscribed, data: c.data }).from(c)
    .where(and(eq(c.projectId, projectId), eq(c.email, email))).limit(1)
  return row ?? null
}

/** Contacts of the project by id (the recipients of a delivery batch), by id. */
export async function contactsByIds(store: Store, db: Db, projectId: string, ids: string[]): Promise<Map<string, AudienceContact>> {
  if (!ids.length) return new Map()
  const rows = await contactsByIdsQuery(store, db, projectId, ids)
  return new Map(rows.map((r) => [r.id, r]))
}

/** The statement of contactsByIds, not run (its plan is checked by a test). */
export function contactsByIdsQuery(store: Store, db: Db, projectId: string, ids: string[]) {
  const c = store.t.contacts
  return db.select({ id: c.id, email: c.email, subscribed: c.subscribed, data: c.data }).from(c)
    .where(and(ofProject(store, projectId), inArray(c.id, ids)))
}

/** The campaigns of the project in one of `statuses`, with what can reference fields and events (usage look-ups). */
export async function withStatus(store: Store, db: Db, projectId: string, statuses: readonly string[]) {
  const { campaigns: c } = store.t
  return db.select({ id: c.id, name: c.name, subject: c.subject, body: c.body, audienceType: c.audienceType, audienceCondition: c.audienceCondition })
    .from(c).where(and(eq(c.projectId, projectId), inArray(c.status, [...statuses])))
}

/**
 * Reserves `span` milliseconds of the project's campaign sending time: from the later of `now` and the
 * project's next free moment. One statement (concurrent fan-outs of one project take turns). Returns
 * when the reserved span starts.
 */
export async function reservePacing(store: Store, db: Db, projectId: string, span: number, now: Date): Promise<Date> {
  const p = store.t.sendPacing
  const next = laterPlusMs(store, p.nextAt, now, span)
  const [row] = await db.insert(p).values({ projectId, nextAt: new Date(now.getTime() + span) })
    .onConflictDoUpdate({ target: p.projectId, set: { nextAt: next } }).returning({ nextAt: p.nextAt })
  return new Date(new Date(row.nextAt).getTime() - span)
}

/**
 * The audience counted the way the fan-out walks it, in one statement: contacts matching `where`, the
 * ones not subscribed (counted only when `marketing`: the fan-out skips them) and, among those it would
 * mail, the ones whose address is suppressed.
 */
export async function audienceBreakdown(store: Store, db: Db, projectId: string, where: SQL | null, marketing: boolean): Promise<{ matching: number; unsubscribed: number; suppressed: number }> {
  const { contacts: c, suppressions: s } = store.t
  const conds: SQL[] = [eq(c.projectId, projectId)]
  if (where) conds.push(where)
  const isSuppressed = sql`EXISTS (SELECT 1 FROM ${s} WHERE ${s.projectId} = ${c.projectId} AND ${s.email} = ${c.email})`
  const unsub = marketing ? sql`CASE WHEN ${eq(c.subscribed, false)} THEN 1 ELSE 0 END` : sql`0`
  const supp = marketing
    ? sql`CASE WHEN ${eq(c.subscribed, true)} AND ${isSuppressed} THEN 1 ELSE 0 END`
    : sql`CASE WHEN ${isSuppressed} THEN 1 ELSE 0 END`
  const [row] = await db.select({
    matching: count(),
    unsubscribed: sql<number | string | null>`sum(${unsub})`,
    suppressed: sql<number | string | null>`sum(${supp})`,
  }).from(c).where(and(...conds))
  return { matching: Number(row?.matching ?? 0), unsubscribed: Number(row?.unsubscribed ?? 0), suppressed: Number(row?.suppressed ?? 0) }
}

/**
 * The links clicked in the campaign's emails, most clicked first: every click (the email.click events,
 * their `link`) and the emails with at least one click on it. Clicks are read from the project's click
 * events since the campaign was created (none can be older), joined to the campaign's emails.
 */
export async function topLinks(store: Store, db: Db, projectId: string, campaignId: string, since: Date, limit: number): Promise<Array<{ url: string; clicks: number; uniqueClicks: number }>> {
  const { events: e, emails: m } = store.t
  const url = jsonText(store, e.data, 'link') as SQL<string>
  const clicks = sql<number | string>`count(*)`
  const rows = await db.select({ url, clicks, uniqueClicks: sql<number | string>`count(DISTINCT ${e.emailId})` })
    .from(e).innerJoin(m, eq(m.id, e.emailId))
    .where(and(eq(e.projectId, projectId), eq(e.name, 'email.click'), gte(e.createdAt, since), eq(m.projectId, projectId), eq(m.campaignId, campaignId)))
    .groupBy(url).orderBy(desc(clicks), asc(url)).limit(limit)
  return rows.filter((r) => typeof r.url === 'string' && r.url !== '').map((r) => ({ url: r.url, clicks: Number(r.clicks), uniqueClicks: Number(r.uniqueClicks) }))
}

/**
 * A phase change of an A/B or local-time fan-out (test → waiting, the next wave, the end): only while the
 * campaign is SENDING and unchanged since `seenAt` (its updatedAt as this runner last wrote or read it),
 * so a second runner that finished first makes this a no-op (null).
 */
export async function transition(
  store: Store, db: Db, projectId: string, id: string, seenAt: Date, set: Partial<Omit<CampaignRow, 'id' | 'projectId' | 'createdAt'>>,
): Promise<CampaignRow | null> {
  const { campaigns: c } = store.t
  const [row] = await db.update(c).set(set)
    .where(and(eq(c.projectId, projectId), eq(c.id, id), eq(c.status, 'SENDING'), eq(c.updatedAt, seenAt))).returning()
  return row ?? null
}

export type RecipientRow = typeof import('../../db/schema').pgSchema.campaignRecipients.$inferSelect

/** Of `contactIds`, those an A/B test group or an earlier wave of the campaign handled already. */
export async function handledAmong(store: Store, db: Db, campaignId: string, contactIds: string[]): Promise<Set<string>> {
  if (!contactIds.length) return new Set()
  const r = store.t.campaignRecipients
  const rows = await db.select({ id: r.contactId }).from(r).where(and(eq(r.campaignId, campaignId), inArray(r.contactId, contactIds)))
  return new Set(rows.map((x) => x.id))
}

export async function insertRecipients(store: Store, db: Db, rows: RecipientRow[]): Promise<void> {
  const r = store.t.campaignRecipients
  for (let i = 0; i < rows.length; i += 500) await db.insert(r).values(rows.slice(i, i + 500)).onConflictDoNothing()
}

/** The A/B test group per variant: contacts sent to, and their emails delivered, opened, clicked, bounced (unique per email). */
export async function variantCounts(store: Store, db: Db, projectId: string, campaignId: string) {
  const { campaignRecipients: r, emails: e } = store.t
  const n = (col: SQL) => sql<number | string>`count(${col})`
  const rows = await db.select({
    variant: r.variant, recipients: n(sql`${e.id}`), delivered: n(sql`${e.deliveredAt}`), opened: n(sql`${e.openedAt}`),
    clicked: n(sql`${e.clickedAt}`), bounced: n(sql`${e.bouncedAt}`),
  }).from(r).innerJoin(e, and(eq(e.id, r.emailId), eq(e.projectId, projectId)))
    .where(and(eq(r.campaignId, campaignId), isNotNull(r.variant))).groupBy(r.variant)
  return rows.map((x) => ({
    index: Number(x.variant), recipients: Number(x.recipients), delivered: Number(x.delivered), opened: Number(x.opened),
    clicked: Number(x.clicked), bounced: Number(x.bounced),
  }))
}

/** The distinct `data.timezone` values of the audience (a local-time send's waves). */
export async function audienceZones(store: Store, db: Db, projectId: string, where: SQL | null): Promise<Array<string | null>> {
  const c = store.t.contacts
  const tz = jsonText(store, c.data, 'timezone')
  const conds: SQL[] = [eq(c.projectId, projectId)]
  if (where) conds.push(where)
  const rows = await db.selectDistinct({ tz }).from(c).where(and(...conds)).limit(10_000)
  return rows.map((x) => (typeof x.tz === 'string' ? x.tz : null))
}
