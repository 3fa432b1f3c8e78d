import type { SQLQueryBindings } from 'bun:sqlite'
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'
import type { StoredAttachment } from '../../db/schema/sending'
import type { CampaignContent } from '../campaigns/body'
import { columnList, fromRaw, insertRows } from '../../db/sqlite-statements'
import { hydrateEmailEvents } from '../events/repo'
import { inlineOfEmail, newestFirst } from '../events/inline'
import { advanceSql, EMAIL_STATUSES, statusRank, type EmailStatus } from './status'

/** The only SQL on `emails` and `email_contents`. Every function that serves a request takes the project id. */

export type EmailRow = typeof import('../../db/schema').pgSchema.emails.$inferSelect
export type EmailContentRow = typeof import('../../db/schema').pgSchema.emailContents.$inferSelect

/**
 * An email as the delivery pipeline loads it: the record and its content, but not attachment contents.
 * `hasContent` is false for an email stored without content (campaign mail, rendered from its campaign
 * when it is built: src/modules/campaigns/render.ts); `campaignContent` is what that rendering needs, and
 * `contentError` says why such content could not be made.
 */
export type DeliveryEmail = EmailRow & Omit<EmailContentRow, 'emailId' | 'attachments'> & {
  hasAttachments: boolean
  hasContent: boolean
  campaignContent?: CampaignContent
  contentError?: string
}

export async function insertEmails(store: Store, db: Db, rows: EmailRow[], contents: EmailContentRow[]): Promise<void> {
  const { emails: e, emailContents: c } = store.t
  if (store.dialect === 'sqlite') {
    insertRows(db, e, rows)
    if (contents.length) insertRows(db, c, contents)
    return
  }
  for (let i = 0; i < rows.length; i += 200) await db.insert(e).values(rows.slice(i, i + 200))
  for (let i = 0; i < contents.length; i += 200) await db.insert(c).values(contents.slice(i, i + 200))
}

/** Emails of a claimed batch (ids from the queue, across projects), without attachment contents. */
export async function loadForDelivery(store: Store, ids: string[]): Promise<DeliveryEmail[]> {
  if (!ids.length) return []
  const { emails: e, emailContents: c } = store.t
  if (store.dialect === 'sqlite') {
    const raw = sqliteConnection(store.db).query(`SELECT ${columnList(e, 'e')}, c.html, c.text, c.headers, (c.attachments IS NOT NULL) AS has_attachments,
      (c.email_id IS NOT NULL) AS has_content
      FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as Array<Record<string, unknown>>
    return raw.map((r) => ({
      ...fromRaw<EmailRow>(e, r), html: r.html as string | null, text: r.text as string | null,
      headers: r.headers ? JSON.parse(r.headers as string) as Record<string, string> : {},
      hasAttachments: r.has_attachments === 1, hasContent: r.has_content === 1,
    }))
  }
  const rows = await store.db.select({
    email: e, html: c.html, text: c.text, headers: c.headers,
    hasAttachments: sql<number | boolean>`(${c.attachments} IS NOT NULL)`,
    hasContent: sql<number | boolean>`(${c.emailId} IS NOT NULL)`,
  }).from(e).leftJoin(c, eq(c.emailId, e.id)).where(inArray(e.id, ids))
  return rows.map((r) => ({
    ...r.email, html: r.html, text: r.text, headers: r.headers ?? {}, hasAttachments: Boolean(r.hasAttachments), hasContent: Boolean(r.hasContent),
  }))
}

export async function loadAttachments(store: Store, id: string): Promise<StoredAttachment[]> {
  const c = store.t.emailContents
  const [row] = await store.db.select({ a: c.attachments }).from(c).where(eq(c.emailId, id)).limit(1)
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
  /** 0 or 1: the delivery's email.sent and email.delivery are this row's (events/inline.ts). */
  inlineEvents?: number
  /** Drop attachment contents (keep names and sizes): the email is final. */
  dropAttachmentContent?: boolean
}

const OUTCOME_COLUMNS = [
  ['attempts', 'attempts'], ['lastReply', 'last_reply'], ['deliveredTo', 'delivered_to'], ['bounceType', 'bounce_type'],
  ['size', 'size'], ['deliveredAt', 'delivered_at'], ['bouncedAt', 'bounced_at'], ['failedAt', 'failed_at'],
  ['inlineEvents', 'inline_events'],
] as const

/** SQLite: `status` advanced to the status of rank ?1 (named ?2) by the rule of status.ts. */
const SQLITE_ADVANCE = `status = CASE WHEN (CASE status ${EMAIL_STATUSES.map((st, i) => `WHEN '${st}' THEN ${i}`).join(' ')} ELSE -1 END) < ? THEN ? ELSE status END`

/** Records an outcome; the status moves forward only (statuses.ts). */
export async function recordOutcome(store: Store, db: Db, id: string, o: OutcomeSet, now: Date): Promise<void> {
  if (store.dialect === 'sqlite') {
    // One statement text per set of fields given (a handful), compiled once and cached by the connection.
    let text = `UPDATE emails SET ${SQLITE_ADVANCE}, updated_at = ?`
    const params: SQLQueryBindings[] = [statusRank(o.status), o.status, now.getTime()]
    for (const [k, col] of OUTCOME_COLUMNS) {
      const v = o[k]
      if (v === undefined) continue
      text += `, ${col} = ?`
      params.push(v instanceof Date ? v.getTime() : v)
    }
    if (o.sentAt) {
      text += ', sent_at = COALESCE(sent_at, ?)'
      params.push(o.sentAt.getTime())
    }
    params.push(id)
    const client = sqliteConnection(db)
    client.query(`${text} WHERE id = ?`).run(...params)
    if (o.dropAttachmentContent) {
      client.query(`UPDATE email_contents SET attachments = (SELECT json_group_array(json(json_set(a.value, '$.content', NULL))) FROM json_each(attachments) a)
        WHERE email_id = ? AND attachments IS NOT NULL`).run(id)
    }
    return
  }
  const e = store.t.emails
  const set: Record<string, unknown> = { status: advanceSql(e.status, o.status), updatedAt: now }
  for (const [k] of OUTCOME_COLUMNS) {
    if (o[k] !== undefined) set[k] = o[k]
  }
  if (o.sentAt) set.sentAt = sql`COALESCE(${e.sentAt}, ${o.sentAt.toISOString()})`
  await db.update(e).set(set).where(eq(e.id, id))
  if (o.dropAttachmentContent) {
    const c = store.t.emailContents
    const attachments = sql`(SELECT jsonb_agg(jsonb_set(a, '{content}', 'null'::jsonb)) FROM jsonb_array_elements(${c.attachments}) a)`
    await db.update(c).set({ attachments }).where(eq(c.emailId, id))
  }
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

/**
 * The events of one email with these names, oldest first (its delivery attempts: GET /emails/:id/attempts),
 * with their full data (the email's base put back: events/email-base.ts).
 */
export async function emailEvents(store: Store, projectId: string, emailId: string, names: readonly string[]): Promise<Array<{ id: string; name: string; emailId: string | null; data: Record<string, unknown>; createdAt: Date }>> {
  const v = store.t.events
  const rows = await store.db.select({ id: v.id, name: v.name, emailId: v.emailId, data: v.data, createdAt: v.createdAt }).from(v)
    .where(and(eq(v.emailId, emailId), eq(v.projectId, projectId), inArray(v.name, [...names])))
    .orderBy(asc(v.createdAt), asc(v.id))
  // Or its row's, for a direct delivery (events/inline.ts).
  const inline = await inlineOfEmail(store, projectId, emailId, names)
  const all = inline.length ? [...rows, ...inline].sort((a, b) => newestFirst(b, a)) : rows
  return hydrateEmailEvents(store, projectId, all)
}

/**
 * Deletes the stored content (email_contents) of at most `limit` emails created before `before` that are
 * no longer in the outbound queue; returns how many. Email ids are UUIDv7 (time-ordered), so candidates
 * are read in key order below the first id of `before`, and each is checked against its email's
 * created_at and the queue.
 */
export async function pruneContents(store: Store, before: Date, limit: number): Promise<number> {
  const bound = uuidV7Floor(before)
  const rows = await store.tx((db) => store.rows<{ id: string }>(sql`DELETE FROM email_contents WHERE email_id IN (
      SELECT c.email_id FROM email_contents c JOIN emails e ON e.id = c.email_id
      WHERE c.email_id < ${bound} AND e.created_at < ${store.dialect === 'pg' ? sql`${before.toISOString()}::timestamptz` : sql`${before.getTime()}`}
        AND NOT EXISTS (SELECT 1 FROM outbound_queue q WHERE q.email_id = c.email_id)
      ORDER BY c.email_id LIMIT ${limit}
    ) RETURNING email_id AS id`, db))
  return rows.length
}

/** The smallest UUIDv7 of a moment (its 48-bit millisecond prefix, the rest zero). */
export function uuidV7Floor(at: Date): string {
  const hex = Math.max(0, Math.floor(at.getTime())).toString(16).padStart(12, '0').slice(-12)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`
}
