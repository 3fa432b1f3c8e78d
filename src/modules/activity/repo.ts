import { and, asc, count, desc, eq, gt, gte, inArray, lt, sql, type AnyColumn, type SQL } from 'drizzle-orm'
import type { Store } from '../../db/client'
import type { EmailRow } from '../emails/repo'

/**
 * The SQL of the activity feed: keyset reads of `emails` (the sends) and `events` (joined with
 * `contacts`), both newest first on (created_at, id), merged by the service; and the counts of stats.
 */

export interface After { at: number; id: string }

export interface EmailFilter { status?: string; contactId?: string; emailId?: string; campaignId?: string; since?: Date; until?: Date }
export interface EventFilter { types: readonly string[]; contactId?: string; emailId?: string; campaignId?: string; since?: Date; until?: Date }

export type EmailItemRow = Omit<EmailRow, 'html' | 'text' | 'attachments' | 'headers'> & { opens: number | null; clicks: number | null }

export interface EventItemRow {
  id: string
  name: string
  contactId: string | null
  contactEmail: string | null
  emailId: string | null
  data: Record<string, unknown>
  createdAt: Date
}

function emailConds(store: Store, projectId: string, f: EmailFilter): SQL[] {
  const e = store.t.emails
  const out: SQL[] = [eq(e.projectId, projectId)]
  if (f.status) out.push(eq(e.status, f.status))
  if (f.contactId) out.push(eq(e.contactId, f.contactId))
  if (f.emailId) out.push(eq(e.id, f.emailId))
  if (f.campaignId) out.push(eq(e.campaignId, f.campaignId))
  if (f.since) out.push(gte(e.createdAt, f.since))
  if (f.until) out.push(lt(e.createdAt, f.until))
  return out
}

function eventConds(store: Store, projectId: string, f: EventFilter): SQL[] {
  const e = store.t.events
  const out: SQL[] = [eq(e.projectId, projectId), f.types.length === 1 ? eq(e.name, f.types[0]) : inArray(e.name, [...f.types])]
  if (f.contactId) out.push(eq(e.contactId, f.contactId))
  if (f.emailId) out.push(eq(e.emailId, f.emailId))
  if (f.campaignId) {
    const m = store.t.emails
    out.push(inArray(e.emailId, store.db.select({ id: m.id }).from(m).where(and(eq(m.projectId, projectId), eq(m.campaignId, f.campaignId)))))
  }
  if (f.since) out.push(gte(e.createdAt, f.since))
  if (f.until) out.push(lt(e.createdAt, f.until))
  return out
}

/** Rows strictly before the cursor in (created_at, id) order: a row-value comparison, so both stores walk the index. */
function olderThan(store: Store, createdAt: AnyColumn, id: AnyColumn, after: After): SQL {
  const at = store.dialect === 'pg' ? new Date(after.at).toISOString() : after.at
  return sql`(${createdAt}, ${id}) < (${at}, ${after.id})`
}

export async function emailPage(store: Store, projectId: string, f: EmailFilter, limit: number, after: After | null): Promise<EmailItemRow[]> {
  const { emails: e, emailStats: s } = store.t
  const where = emailConds(store, projectId, f)
  if (after) where.push(olderThan(store, e.createdAt, e.id, after))
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

export async function eventPage(store: Store, projectId: string, f: EventFilter, limit: number, after: After | null): Promise<EventItemRow[]> {
  const { events: e, contacts: c } = store.t
  const where = eventConds(store, projectId, f)
  if (after) where.push(olderThan(store, e.createdAt, e.id, after))
  return store.db.select({
    id: e.id, name: e.name, contactId: e.contactId, contactEmail: c.email, emailId: e.emailId, data: e.data, createdAt: e.createdAt,
  }).from(e).leftJoin(c, eq(c.id, e.contactId)).where(and(...where)).orderBy(desc(e.createdAt), desc(e.id)).limit(limit)
}

export async function countEmails(store: Store, projectId: string, f: EmailFilter): Promise<number> {
  const [row] = await store.db.select({ n: count() }).from(store.t.emails).where(and(...emailConds(store, projectId, f)))
  return Number(row?.n ?? 0)
}

export async function countEvents(store: Store, projectId: string, f: EventFilter): Promise<number> {
  const [row] = await store.db.select({ n: count() }).from(store.t.events).where(and(...eventConds(store, projectId, f)))
  return Number(row?.n ?? 0)
}

/** Distinct event names present among `names`, with counts and the last time each was seen. */
export async function eventTypesPresent(store: Store, projectId: string, names: readonly string[]): Promise<Array<{ name: string; n: number; last: Date }>> {
  const e = store.t.events
  const rows = await store.db.select({ name: e.name, n: count(), last: sql<Date>`max(${e.createdAt})`.mapWith(e.createdAt) }).from(e)
    .where(and(eq(e.projectId, projectId), inArray(e.name, [...names]))).groupBy(e.name)
  return rows.map((r) => ({ name: r.name, n: Number(r.n), last: r.last }))
}

/** The number of emails of the project and when the last was queued. */
export async function emailsPresent(store: Store, projectId: string): Promise<{ n: number; last: Date | null }> {
  const e = store.t.emails
  const [row] = await store.db.select({ n: count(), last: sql<Date | null>`max(${e.createdAt})`.mapWith(e.createdAt) }).from(e).where(eq(e.projectId, projectId))
  return { n: Number(row?.n ?? 0), last: row && Number(row.n) > 0 ? row.last : null }
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
