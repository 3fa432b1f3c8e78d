import { and, count, desc, eq, gte, inArray, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Store } from '../../db/client'
import type { EmailRow } from '../emails/repo'

/**
 * The SQL of the activity feed: keyset reads of `emails` (the sends) and `events` (joined with
 * `contacts`), both newest first on (created_at, id), merged by the service; and the counts of stats.
 */

export interface After { at: number; id: string }

export interface EmailFilter { status?: string; contactId?: string; emailId?: string; since?: Date }
export interface EventFilter { types: readonly string[]; contactId?: string; emailId?: string; since?: Date }

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
  if (f.since) out.push(gte(e.createdAt, f.since))
  return out
}

function eventConds(store: Store, projectId: string, f: EventFilter): SQL[] {
  const e = store.t.events
  const out: SQL[] = [eq(e.projectId, projectId), f.types.length === 1 ? eq(e.name, f.types[0]) : inArray(e.name, [...f.types])]
  if (f.contactId) out.push(eq(e.contactId, f.contactId))
  if (f.emailId) out.push(eq(e.emailId, f.emailId))
  if (f.since) out.push(gte(e.createdAt, f.since))
  return out
}

export async function emailPage(store: Store, projectId: string, f: EmailFilter, limit: number, after: After | null): Promise<EmailItemRow[]> {
  const { emails: e, emailStats: s } = store.t
  const where = emailConds(store, projectId, f)
  if (after) {
    const at = new Date(after.at)
    const older = or(lt(e.createdAt, at), and(eq(e.createdAt, at), lt(e.id, after.id)))
    if (older) where.push(older)
  }
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
  if (after) {
    const at = new Date(after.at)
    const older = or(lt(e.createdAt, at), and(eq(e.createdAt, at), lt(e.id, after.id)))
    if (older) where.push(older)
  }
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

/** Count per event name since a moment; bounces also by bounceType (`email.bounce:hard` / `email.bounce:soft`). */
export async function countsByName(store: Store, projectId: string, names: readonly string[], since: Date): Promise<Map<string, number>> {
  const e = store.t.events
  const sub = store.dialect === 'pg'
    ? sql<string | null>`CASE WHEN ${e.name} = 'email.bounce' THEN ${e.data}->>'bounceType' END`
    : sql<string | null>`CASE WHEN ${e.name} = 'email.bounce' THEN json_extract(${e.data}, '$.bounceType') END`
  const rows = await store.db.select({ name: e.name, sub, n: count() }).from(e)
    .where(and(eq(e.projectId, projectId), inArray(e.name, [...names]), gte(e.createdAt, since)))
    .groupBy(e.name, sub)
  const out = new Map<string, number>()
  for (const r of rows) {
    out.set(r.name, (out.get(r.name) ?? 0) + Number(r.n))
    if (r.sub) out.set(`${r.name}:${r.sub}`, (out.get(`${r.name}:${r.sub}`) ?? 0) + Number(r.n))
  }
  return out
}

/** Emails first opened / first clicked since a moment (unique opens and clicks). */
export async function uniqueEngagement(store: Store, projectId: string, since: Date): Promise<{ opened: number; clicked: number }> {
  const s = store.t.emailStats
  const [o] = await store.db.select({ n: count() }).from(s).where(and(eq(s.projectId, projectId), gte(s.firstOpenAt, since)))
  const [k] = await store.db.select({ n: count() }).from(s).where(and(eq(s.projectId, projectId), gte(s.firstClickAt, since)))
  return { opened: Number(o?.n ?? 0), clicked: Number(k?.n ?? 0) }
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
