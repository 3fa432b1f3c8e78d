import { and, desc, eq, inArray, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import type { StoredAttachment } from '../../db/schema/sending'
import { advanceSql, type EmailStatus } from './status'

/** The only SQL on `emails`. Every function that serves a request takes the project id. */

export type EmailRow = typeof import('../../db/schema').pgSchema.emails.$inferSelect

/** An email as the delivery pipeline loads it: everything but the attachment contents. */
export type DeliveryEmail = Omit<EmailRow, 'attachments'> & { hasAttachments: boolean }

export async function insertEmails(store: Store, db: Db, rows: EmailRow[]): Promise<void> {
  if (!rows.length) return
  const e = store.t.emails
  for (let i = 0; i < rows.length; i += 200) await db.insert(e).values(rows.slice(i, i + 200))
}

/** Emails of a claimed batch (ids from the queue, across projects), without attachment contents. */
export async function loadForDelivery(store: Store, ids: string[]): Promise<DeliveryEmail[]> {
  if (!ids.length) return []
  const e = store.t.emails
  const rows = await store.db.select({
    id: e.id, projectId: e.projectId, contactId: e.contactId, templateId: e.templateId, campaignId: e.campaignId,
    sourceType: e.sourceType, sourceId: e.sourceId, type: e.type, domainId: e.domainId, messageId: e.messageId,
    fromAddress: e.fromAddress, fromName: e.fromName, toAddress: e.toAddress, toName: e.toName, replyTo: e.replyTo,
    subject: e.subject, html: e.html, text: e.text, headers: e.headers, listUnsubscribe: e.listUnsubscribe,
    status: e.status, attempts: e.attempts, lastReply: e.lastReply, deliveredTo: e.deliveredTo, bounceType: e.bounceType,
    size: e.size, sentAt: e.sentAt, deliveredAt: e.deliveredAt, openedAt: e.openedAt, clickedAt: e.clickedAt,
    bouncedAt: e.bouncedAt, complainedAt: e.complainedAt, failedAt: e.failedAt, createdAt: e.createdAt, updatedAt: e.updatedAt,
    hasAttachments: sql<number | boolean>`(${e.attachments} IS NOT NULL)`,
  }).from(e).where(inArray(e.id, ids))
  return rows.map((r) => ({ ...r, hasAttachments: Boolean(r.hasAttachments) }))
}

export async function loadAttachments(store: Store, id: string): Promise<StoredAttachment[]> {
  const e = store.t.emails
  const [row] = await store.db.select({ a: e.attachments }).from(e).where(eq(e.id, id)).limit(1)
  return row?.a ?? []
}

export interface OutcomeSet {
  status: EmailStatus
  attempts?: number
  lastReply?: string | null
  deliveredTo?: string | null
  bounceType?: string | null
  size?: number | null
  sentAt?: Date
  deliveredAt?: Date
  bouncedAt?: Date
  failedAt?: Date
  /** Drop attachment contents (keep names and sizes): the email is final. */
  dropAttachmentContent?: boolean
}

/** Records an outcome; the status moves forward only (statuses.ts). */
export async function recordOutcome(store: Store, db: Db, id: string, o: OutcomeSet, now: Date): Promise<void> {
  const e = store.t.emails
  const set: Record<string, unknown> = { status: advanceSql(e.status, o.status), updatedAt: now }
  for (const k of ['attempts', 'lastReply', 'deliveredTo', 'bounceType', 'size', 'deliveredAt', 'bouncedAt', 'failedAt'] as const) {
    if (o[k] !== undefined) set[k] = o[k]
  }
  if (o.sentAt) set.sentAt = sql`COALESCE(${e.sentAt}, ${store.dialect === 'pg' ? o.sentAt.toISOString() : o.sentAt.getTime()})`
  if (o.dropAttachmentContent) {
    set.attachments = store.dialect === 'pg'
      ? sql`(SELECT jsonb_agg(jsonb_set(a, '{content}', 'null'::jsonb)) FROM jsonb_array_elements(${e.attachments}) a)`
      : sql`(SELECT json_group_array(json(json_set(a.value, '$.content', NULL))) FROM json_each(${e.attachments}) a)`
  }
  await db.update(e).set(set).where(eq(e.id, id))
}

/** Attempts and last reply of a deferred email (its status stays SENDING). */
export async function recordDeferral(store: Store, db: Db, id: string, attempts: number, lastReply: string, now: Date): Promise<void> {
  const e = store.t.emails
  await db.update(e).set({ attempts, lastReply, updatedAt: now }).where(eq(e.id, id))
}

export async function findEmail(store: Store, projectId: string, id: string): Promise<EmailRow | null> {
  const e = store.t.emails
  const [row] = await store.db.select().from(e).where(and(eq(e.projectId, projectId), eq(e.id, id))).limit(1)
  return row ?? null
}

/** Newest first, keyset-paginated on (createdAt, id). */
export async function listEmails(store: Store, projectId: string, opts: { limit: number; after?: { createdAt: Date; id: string } | null; status?: string }): Promise<Array<Omit<EmailRow, 'html' | 'text' | 'attachments' | 'headers'>>> {
  const e = store.t.emails
  const conds: SQL[] = [eq(e.projectId, projectId)]
  if (opts.status) conds.push(eq(e.status, opts.status))
  if (opts.after) conds.push(or(lt(e.createdAt, opts.after.createdAt), and(eq(e.createdAt, opts.after.createdAt), lt(e.id, opts.after.id)))!)
  return store.db.select({
    id: e.id, projectId: e.projectId, contactId: e.contactId, templateId: e.templateId, campaignId: e.campaignId,
    sourceType: e.sourceType, sourceId: e.sourceId, type: e.type, domainId: e.domainId, messageId: e.messageId,
    fromAddress: e.fromAddress, fromName: e.fromName, toAddress: e.toAddress, toName: e.toName, replyTo: e.replyTo,
    subject: e.subject, listUnsubscribe: e.listUnsubscribe, status: e.status, attempts: e.attempts, lastReply: e.lastReply,
    deliveredTo: e.deliveredTo, bounceType: e.bounceType, size: e.size, sentAt: e.sentAt, deliveredAt: e.deliveredAt,
    openedAt: e.openedAt, clickedAt: e.clickedAt, bouncedAt: e.bouncedAt, complainedAt: e.complainedAt, failedAt: e.failedAt,
    createdAt: e.createdAt, updatedAt: e.updatedAt,
  }).from(e).where(and(...conds)).orderBy(desc(e.createdAt), desc(e.id)).limit(opts.limit)
}

export async function countEmails(store: Store, projectId: string, status?: string): Promise<number> {
  const e = store.t.emails
  const conds: SQL[] = [eq(e.projectId, projectId)]
  if (status) conds.push(eq(e.status, status))
  const [row] = await store.db.select({ n: sql<number>`count(*)` }).from(e).where(and(...conds))
  return Number(row?.n ?? 0)
}
