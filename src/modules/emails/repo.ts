import type { SQLQueryBindings } from 'bun:sqlite'
import { insertAll } from '../../db/insert-all'
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../db/client'
import { moment } from '../../db/dialect'
import type { StoredAttachment } from '../../db/schema/sending'
import type { DeliveryEmail } from '../../mail/outbound/store'
import { columnList, fromRaw } from '../../db/sqlite-statements'
import { statementRows } from '../../db/statement'
import { hydrateEmailEvents } from '../events/repo'
import { inlineOfEmail, newestFirst } from '../events/inline'
import { advanceSql, EMAIL_STATUSES, statusRank, type EmailStatus } from './status'

/** The only SQL on `emails` and `email_contents`. Every function that serves a request takes the project id. */

export type EmailRow = typeof import('../../db/schema').pgSchema.emails.$inferSelect
export type EmailContentRow = typeof import('../../db/schema').pgSchema.emailContents.$inferSelect

export async function insertEmails(store: Store, db: Db, rows: EmailRow[], contents: EmailContentRow[]): Promise<void> {
  const { emails: e, emailContents: c } = store.t
  // Started in order and awaited together: on PostgreSQL the two statements go out at once on the
  // transaction's connection (one round trip; the emails first, the contents reference them).
  await Promise.all([insertAll(store, db, e, rows), insertAll(store, db, c, contents)])
}

/** Emails of a claimed batch (ids from the queue, across projects), without attachment contents. */
export async function loadForDelivery(store: Store, ids: string[]): Promise<DeliveryEmail[]> {
  if (!ids.length) return []
  const { emails: e } = store.t
  // Every claimed batch: one text, compiled once on SQLite's connection (src/db/statement.ts), rows mapped
  // by the table's own column mappers (raw on both stores: SQLite 0/1 and JSON text, PostgreSQL booleans and jsonb).
  const raw = await statementRows<Record<string, unknown>>(store, store.db, `SELECT ${columnList(e, 'e')}, c.html, c.text, c.headers, (c.attachments IS NOT NULL) AS has_attachments,
    (c.email_id IS NOT NULL) AS has_content
    FROM emails e LEFT JOIN email_contents c ON c.email_id = e.id WHERE e.id IN $1[]`, ids)
  return raw.map((r) => ({
    ...fromRaw<EmailRow>(e, r), html: r.html as string | null, text: r.text as string | null,
    headers: typeof r.headers === 'string' ? (r.headers ? JSON.parse(r.headers) as Record<string, string> : {}) : (r.headers as Record<string, string> | null) ?? {},
    hasAttachments: r.has_attachments === 1 || r.has_attachments === true, hasContent: r.has_content === 1 || r.has_content === true,
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
  // dialect: SQLite records with statements compiled once on the connection; PostgreSQL through drizzle
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

/** PostgreSQL types of the outcome columns, for jsonb_to_recordset (recordOutcomes). */
const PG_OUTCOME_TYPES: Record<(typeof OUTCOME_COLUMNS)[number][0], string> = {
  attempts: 'integer', lastReply: 'text', deliveredTo: 'text', bounceType: 'text', size: 'integer',
  deliveredAt: 'timestamptz', bouncedAt: 'timestamptz', failedAt: 'timestamptz', inlineEvents: 'integer',
}

/**
 * Records many outcomes (the outbound recorder's batch). SQLite: each as recordOutcome does (statements
 * compiled once, in-process: a statement per email costs µs). PostgreSQL: one UPDATE per shape of outcome
 * (its status and the fields it sets: delivered, sent, bounced, failed...), the rows as one JSON
 * parameter, and one UPDATE of the contents whose attachments are dropped, instead of a statement per email.
 */
export async function recordOutcomes(store: Store, db: Db, writes: Array<{ id: string; set: OutcomeSet }>, now: Date): Promise<void> {
  if (!writes.length) return
  // dialect: PostgreSQL records a batch in one statement per shape; SQLite row by row (compiled statements, no round trips)
  if (store.dialect === 'sqlite' || writes.length === 1) {
    for (const w of writes) await recordOutcome(store, db, w.id, w.set, now)
    return
  }
  const shapes = new Map<string, { status: EmailStatus; keys: Array<(typeof OUTCOME_COLUMNS)[number]>; sentAt: boolean; rows: Array<Record<string, unknown>> }>()
  for (const { id, set } of writes) {
    const keys = OUTCOME_COLUMNS.filter(([k]) => set[k] !== undefined)
    const shape = `${set.status}|${keys.map(([k]) => k).join(',')}|${set.sentAt ? 1 : 0}`
    let g = shapes.get(shape)
    if (!g) {
      g = { status: set.status, keys, sentAt: Boolean(set.sentAt), rows: [] }
      shapes.set(shape, g)
    }
    const row: Record<string, unknown> = { id }
    for (const [k, col] of keys) {
      const v = set[k]
      row[col] = v instanceof Date ? v.toISOString() : v
    }
    if (set.sentAt) row.sent_at = set.sentAt.toISOString()
    g.rows.push(row)
  }
  for (const g of shapes.values()) {
    const rank = statusRank(g.status)
    if (rank < 0) throw new Error(`unknown email status ${g.status}`)
    const cols: Array<{ col: string; type: string }> = g.keys.map(([k, col]) => ({ col, type: PG_OUTCOME_TYPES[k] }))
    if (g.sentAt) cols.push({ col: 'sent_at', type: 'timestamptz' })
    const sets = g.keys.map(([, col]) => `${col} = x.${col}`)
    if (g.sentAt) sets.push('sent_at = COALESCE(emails.sent_at, x.sent_at)')
    const payload = JSON.stringify(g.rows)
    // Constants only in the raw parts: the status (one of EMAIL_STATUSES) and column names and types.
    await store.exec(sql`UPDATE emails SET ${sql.raw(`status = CASE WHEN (CASE emails.status ${STATUS_RANKS} ELSE -1 END) < ${rank} THEN '${g.status}' ELSE emails.status END`)},
      updated_at = ${now.toISOString()}::timestamptz${sql.raw(sets.map((s) => `, ${s}`).join(''))}
      FROM jsonb_to_recordset(${payload}::jsonb) AS x(${sql.raw(['id text', ...cols.map((c) => `${c.col} ${c.type}`)].join(', '))})
      WHERE emails.id = ANY(ARRAY(SELECT jsonb_array_elements(${payload}::jsonb) ->> 'id')) AND emails.id = x.id`, db)
  }
  const drop = writes.filter((w) => w.set.dropAttachmentContent).map((w) => w.id)
  if (drop.length) {
    await store.exec(sql`UPDATE email_contents SET attachments = (SELECT jsonb_agg(jsonb_set(a, '{content}', 'null'::jsonb)) FROM jsonb_array_elements(attachments) a)
      WHERE email_id = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(drop)}::jsonb))) AND attachments IS NOT NULL`, db)
  }
}

/** `WHEN '<status>' THEN <rank>` for every status (a constant). */
const STATUS_RANKS = EMAIL_STATUSES.map((st, i) => `WHEN '${st}' THEN ${i}`).join(' ')

/** Attempts and last reply of a deferred email (its status stays SENDING). */
export async function recordDeferral(store: Store, db: Db, id: string, attempts: number, lastReply: string, now: Date): Promise<void> {
  const e = store.t.emails
  await db.update(e).set({ attempts, lastReply, updatedAt: now }).where(eq(e.id, id))
}

/** recordDeferral of many emails: one statement on PostgreSQL. */
export async function recordDeferrals(store: Store, db: Db, rows: Array<{ id: string; attempts: number; lastReply: string }>, now: Date): Promise<void> {
  // dialect: PostgreSQL updates a batch in one statement; SQLite row by row (no round trips)
  if (store.dialect === 'sqlite' || rows.length <= 1) {
    for (const r of rows) await recordDeferral(store, db, r.id, r.attempts, r.lastReply, now)
    return
  }
  const payload = JSON.stringify(rows.map((r) => ({ id: r.id, attempts: r.attempts, last_reply: r.lastReply })))
  await store.exec(sql`UPDATE emails SET attempts = x.attempts, last_reply = x.last_reply, updated_at = ${now.toISOString()}::timestamptz
    FROM jsonb_to_recordset(${payload}::jsonb) AS x(id text, attempts integer, last_reply text)
    WHERE emails.id = ANY(ARRAY(SELECT jsonb_array_elements(${payload}::jsonb) ->> 'id')) AND emails.id = x.id`, db)
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
      WHERE c.email_id < ${bound} AND e.created_at < ${moment(store, before)}
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
