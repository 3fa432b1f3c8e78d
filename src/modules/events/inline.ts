/**
 * A direct delivery's email.sent and email.delivery, read from the email's row (migration 0027).
 *
 * When the recipient's MX host accepts a message, both events say the same thing at the same moment: the
 * attempt, the host, the reply, the time. The email's row holds every one of those facts (`attempts`,
 * `delivered_to`, `last_reply`, `sent_at` = `delivered_at`), so for a project that no consumer listens to
 * (events/interest.ts) the recorder stores no event row at all: it sets `inline_events` (0, or 1 when the
 * session used TLS) and the readers of events add the two events of such rows to the ones of `events`
 * (two event rows and their six indexes were 1,800 of the 2,900 bytes a campaign recipient cost).
 *
 * - The events read the same as stored ones: same names, same data in the same order (the recorder checks
 *   that before it inlines, `inlineMatches`), the email's base put back like any other's (email-base.ts).
 * - Their ids are the email's id with version 8 (RFC 9562's vendor version; stored events are version 7,
 *   so the two never meet) and a last digit of 0 (email.sent) or 1 (email.delivery): stable, unique, and
 *   in the order they were always written (sent, then delivery).
 * - Anything that would change those facts afterwards (a bounce report rewriting `last_reply`) first
 *   writes the two events out as rows under the same ids (`spillInlineEvents`).
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { asStoredJson, moment, noIndex } from '../../db/dialect'
import { parseReply } from '../../mail/outbound/replies'
import type { EventRow } from './stream'

export const INLINE_NAMES = ['email.sent', 'email.delivery'] as const
export type InlineName = (typeof INLINE_NAMES)[number]

export const isInlineName = (name: string): name is InlineName => name === 'email.sent' || name === 'email.delivery'

/** The columns of an email row its inline events are made of. */
export interface InlineSource {
  id: string
  projectId: string
  contactId: string | null
  attempts: number
  deliveredAt: Date | null
  deliveredTo: string | null
  lastReply: string | null
  inlineEvents: number | null
}

export function inlineEventId(emailId: string, name: InlineName): string {
  return `${emailId.slice(0, 14)}8${emailId.slice(15, 35)}${name === 'email.sent' ? '0' : '1'}`
}

/** The data each event stores without the email's base (email-base.ts), in the recorder's order. */
function inlineData(m: InlineSource, name: InlineName, at: string): Record<string, unknown> {
  if (name === 'email.sent') return { attempt: m.attempts, sentAt: at, host: m.deliveredTo }
  const reply = parseReply(m.lastReply ?? '')
  return { attempt: m.attempts, deliveredAt: at, host: m.deliveredTo, reply: m.lastReply, smtpCode: reply.code || null, enhancedCode: reply.enhanced, tls: m.inlineEvents === 1 }
}

/** The email's inline events among `names` (default both), oldest first; none when its events are rows. */
export function inlineEventsOf(m: InlineSource, names: readonly string[] = INLINE_NAMES): EventRow[] {
  if (m.inlineEvents === null || m.inlineEvents === undefined || !m.deliveredAt) return []
  const at = m.deliveredAt
  const iso = at.toISOString()
  const out: EventRow[] = []
  for (const name of INLINE_NAMES) {
    if (!names.includes(name)) continue
    out.push({ id: inlineEventId(m.id, name), projectId: m.projectId, contactId: m.contactId, name, data: inlineData(m, name, iso), emailId: m.id, createdAt: at })
  }
  return out
}

/**
 * Whether the row `m` would give back exactly these stored data of its email.sent and email.delivery: the
 * recorder inlines only then, so a reply the parser would read differently keeps its rows.
 */
export function inlineMatches(m: InlineSource, stored: { sent: Record<string, unknown>; delivery: Record<string, unknown> }): boolean {
  const [sent, delivery] = inlineEventsOf(m)
  return Boolean(sent && delivery) && JSON.stringify(sent.data) === JSON.stringify(stored.sent) && JSON.stringify(delivery.data) === JSON.stringify(stored.delivery)
}

// ---------------------------------------------------------------------------------------------------
// Reading

export interface InlineFilter {
  /** Event names asked for; the inline ones among them are read (none: nothing to read). */
  names?: readonly string[]
  contactId?: string
  emailId?: string
  campaignId?: string
  since?: Date
  until?: Date
}

export interface InlineEventRow extends EventRow { contactEmail: string | null }

interface RawInline {
  id: string
  project_id: string
  contact_id: string | null
  attempts: number | string
  delivered_at: number | string | Date
  delivered_to: string | null
  last_reply: string | null
  inline_events: number | string
  contact_email: string | null
}

/** The inline names `f` asks for (every one when it names none). */
export function inlineNamesOf(names: readonly string[] | undefined): InlineName[] {
  return names === undefined ? [...INLINE_NAMES] : INLINE_NAMES.filter((n) => names.includes(n))
}

const ts = moment

/**
 * The conditions on `emails m` of the inline events of `projectId` matching `f` (names aside). One
 * anchor is left to the planner: one email, else one contact, else one campaign, else the project's
 * partial index (SQLite: unary + keeps it off the others).
 */
function inlineWhere(store: Store, projectId: string, f: InlineFilter): SQL {
  const col = (name: string) => sql.raw(`m.${name}`)
  const anchored = Boolean(f.emailId || f.contactId || f.campaignId)
  const out: SQL[] = [sql`${col('inline_events')} IS NOT NULL`, sql`${noIndex(store, col('project_id'), anchored)} = ${projectId}`]
  if (f.emailId) out.push(sql`${col('id')} = ${f.emailId}`)
  if (f.contactId) out.push(sql`${noIndex(store, col('contact_id'), Boolean(f.emailId))} = ${f.contactId}`)
  if (f.campaignId) out.push(sql`${noIndex(store, col('campaign_id'), Boolean(f.emailId || f.contactId))} = ${f.campaignId}`)
  if (f.since) out.push(sql`${col('delivered_at')} >= ${ts(store, f.since)}`)
  if (f.until) out.push(sql`${col('delivered_at')} < ${ts(store, f.until)}`)
  return sql.join(out, sql` AND `)
}

function toDate(v: number | string | Date): Date {
  if (v instanceof Date) return v
  return new Date(typeof v === 'number' || /^\d+$/.test(v) ? Number(v) : v)
}

async function readInline(store: Store, where: SQL, limit: number | null, db?: Db): Promise<RawInline[]> {
  return store.rows<RawInline>(sql`
    SELECT m.id, m.project_id, m.contact_id, m.attempts, m.delivered_at, m.delivered_to, m.last_reply, m.inline_events, c.email AS contact_email
    FROM emails m LEFT JOIN contacts c ON c.id = m.contact_id
    WHERE ${where} ORDER BY m.delivered_at DESC, m.id DESC${limit === null ? sql`` : sql` LIMIT ${limit}`}`, db)
}

function expand(store: Store, rows: RawInline[], names: readonly string[]): InlineEventRow[] {
  const out: InlineEventRow[] = []
  for (const r of rows) {
    const src: InlineSource = {
      id: r.id, projectId: r.project_id, contactId: r.contact_id, attempts: Number(r.attempts), deliveredAt: toDate(r.delivered_at),
      deliveredTo: r.delivered_to, lastReply: r.last_reply, inlineEvents: Number(r.inline_events),
    }
    for (const e of inlineEventsOf(src, names)) out.push({ ...e, data: asStoredJson(store, e.data), contactEmail: r.contact_email })
  }
  return out
}

/** Newest first on (createdAt, id), as every events read sorts. */
export function newestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
}

/**
 * The newest `limit` inline events of `projectId` matching `f`, strictly before `after` in (createdAt,
 * id) order, newest first (their data without the email's base: hydrate like stored rows). `limit`
 * emails give at least `limit` events; the emails of the cursor's own millisecond are read whole, then
 * cut by id here.
 */
export async function inlinePage(store: Store, projectId: string, f: InlineFilter, limit: number, after: { at: number; id: string } | null): Promise<InlineEventRow[]> {
  const names = inlineNamesOf(f.names)
  if (!names.length || limit <= 0) return []
  const where = inlineWhere(store, projectId, f)
  let rows: RawInline[]
  if (!after) rows = await readInline(store, where, limit)
  else {
    const [same, older] = await Promise.all([
      readInline(store, sql`${where} AND m.delivered_at = ${ts(store, after.at)}`, null),
      readInline(store, sql`${where} AND m.delivered_at < ${ts(store, after.at)}`, limit),
    ])
    rows = [...same, ...older]
  }
  let out = expand(store, rows, names)
  if (after) out = out.filter((e) => e.createdAt.getTime() < after.at || (e.createdAt.getTime() === after.at && e.id < after.id))
  return out.sort(newestFirst).slice(0, limit)
}

/** Every inline event of one email among `names`, oldest first. */
export async function inlineOfEmail(store: Store, projectId: string, emailId: string, names: readonly string[] = INLINE_NAMES): Promise<EventRow[]> {
  const wanted = inlineNamesOf(names)
  if (!wanted.length) return []
  return expand(store, await readInline(store, inlineWhere(store, projectId, { emailId }), null), wanted)
}

/**
 * How many inline events match `f` (each inline email is one event of each name asked for), counting at
 * most `cap` emails when given.
 */
export async function countInline(store: Store, projectId: string, f: InlineFilter, cap?: number): Promise<number> {
  const names = inlineNamesOf(f.names)
  if (!names.length) return 0
  const where = inlineWhere(store, projectId, f)
  const [row] = cap === undefined
    ? await store.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM emails m WHERE ${where}`)
    : await store.rows<{ n: number | string }>(sql`SELECT count(*) AS n FROM (SELECT 1 FROM emails m WHERE ${where} LIMIT ${cap}) x`)
  return Number(row?.n ?? 0) * names.length
}

/**
 * An SQL table of (name, contact_id, created_at) of every event of `projectId` (stored and inline) from
 * `since` on, for aggregates (the events' stats, names, the filter engine's list of names).
 */
export function allEventsOf(store: Store, projectId: string, since?: Date): SQL {
  const stored = since ? sql` AND created_at >= ${ts(store, since)}` : sql``
  const inline = since ? sql` AND delivered_at >= ${ts(store, since)}` : sql``
  const arm = (name: InlineName) => sql`SELECT CAST(${name} AS TEXT) AS name, contact_id, delivered_at AS created_at FROM emails
    WHERE inline_events IS NOT NULL AND project_id = ${projectId}${inline}`
  return sql`(SELECT name, contact_id, created_at FROM events WHERE project_id = ${projectId}${stored}
    UNION ALL ${arm('email.sent')} UNION ALL ${arm('email.delivery')})`
}

// ---------------------------------------------------------------------------------------------------
// Writing

/**
 * Writes the inline events of email `emailId` (if it has them) out as rows of `events`, under the same ids
 * and times, and clears `inline_events`: called in the transaction of any change to the facts they are
 * read from. `insert` is the events module's insert (repo.insertEvents), passed in to keep this module
 * free of it.
 */
export async function spillInlineEvents(store: Store, db: Db, projectId: string, emailId: string, insert: (rows: EventRow[]) => Promise<void>): Promise<boolean> {
  const [row] = await readInline(store, inlineWhere(store, projectId, { emailId }), null, db)
  if (!row) return false
  const events = expand(store, [row], INLINE_NAMES).map(({ contactEmail: _c, ...e }) => e)
  await store.exec(sql`UPDATE emails SET inline_events = NULL WHERE id = ${emailId}`, db)
  await insert(events)
  return true
}
