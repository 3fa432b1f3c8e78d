import { and, asc, eq, gt, inArray, isNotNull, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { jsonText } from '../../db/dialect'
import type { Ctx } from '../../deps'
import { notFound } from '../../errors'
import { decodeTimeCursor, encodeTimeCursor } from '../cursor'
import type { RecipientsQuery, RecipientsPage, RecipientRow } from './model'
import * as repo from './repo'

/**
 * Per-recipient report of a campaign: each recipient's email with its delivery,
 * first open and click, bounce, complaint and unsubscribe, and the links it clicked; filterable and
 * exported as CSV. Keyset pages over the campaign's emails in (created_at, id) order, which is
 * emails_campaign_created_idx; opens and clicks come from email_stats (by email id), the unsubscribe from
 * campaign_unsubscribes (its primary key), the links from the page's click events (events_email_created_idx).
 * The SQL is here rather than in repo.ts to keep this feature apart from the campaign send code.
 */

export const REPORT_FILTERS = ['all', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'failed'] as const
export type ReportFilter = (typeof REPORT_FILTERS)[number]
const MAX_LIMIT = 500

function filterSql(store: Store, f: ReportFilter, link: string | undefined): SQL | undefined {
  const { emails: m, campaignUnsubscribes: u, events: e } = store.t
  const clicked = link === undefined
    ? undefined
    : sql`EXISTS (SELECT 1 FROM ${e} WHERE ${e.emailId} = ${m.id} AND ${e.name} = 'email.click' AND ${jsonText(store, e.data, 'link')} = ${link})`
  switch (f) {
    case 'all': return clicked
    case 'delivered': return isNotNull(m.deliveredAt)
    // A click is an open too (the pixel is often blocked).
    case 'opened': return or(isNotNull(m.openedAt), isNotNull(m.clickedAt))
    case 'clicked': return clicked ?? isNotNull(m.clickedAt)
    case 'bounced': return isNotNull(m.bouncedAt)
    case 'complained': return isNotNull(m.complainedAt)
    case 'failed': return eq(m.status, 'FAILED')
    case 'unsubscribed': return isNotNull(u.createdAt)
  }
}

async function page(store: Store, db: Db, projectId: string, campaignId: string, f: ReportFilter, link: string | undefined, after: { at: Date; id: string } | null, limit: number) {
  const { emails: m, emailStats: s, campaignUnsubscribes: u } = store.t
  const where = [eq(m.projectId, projectId), eq(m.campaignId, campaignId), eq(m.sourceType, 'campaign'), filterSql(store, f, link)]
  if (after) where.push(or(gt(m.createdAt, after.at), and(eq(m.createdAt, after.at), gt(m.id, after.id))))
  return db.select({
    emailId: m.id, contactId: m.contactId, email: m.toAddress, status: m.status, createdAt: m.createdAt,
    deliveredAt: m.deliveredAt, openedAt: m.openedAt, clickedAt: m.clickedAt, bouncedAt: m.bouncedAt, bounceType: m.bounceType,
    complainedAt: m.complainedAt, unsubscribedAt: u.createdAt, opens: s.opens, clicks: s.clicks,
  }).from(m)
    .leftJoin(s, eq(s.emailId, m.id))
    .leftJoin(u, and(eq(u.campaignId, m.campaignId), eq(u.contactId, m.contactId)))
    .where(and(...where))
    .orderBy(asc(m.createdAt), asc(m.id))
    .limit(limit + 1)
}

async function linksOf(store: Store, db: Db, projectId: string, emailIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  if (!emailIds.length) return out
  const e = store.t.events
  const link = jsonText(store, e.data, 'link') as SQL<string>
  const rows = await db.selectDistinct({ emailId: e.emailId, link }).from(e)
    .where(and(eq(e.projectId, projectId), inArray(e.emailId, emailIds), eq(e.name, 'email.click')))
  for (const r of rows) {
    if (!r.emailId || typeof r.link !== 'string' || !r.link) continue
    const list = out.get(r.emailId) ?? []
    list.push(r.link)
    out.set(r.emailId, list)
  }
  for (const list of out.values()) list.sort()
  return out
}

const iso = (d: Date | null) => (d ? d.toISOString() : null)

async function readPage(ctx: Ctx, id: string, q: RecipientsQuery, limit: number, after: { at: Date; id: string } | null): Promise<{ rows: RecipientRow[]; next: { at: Date; id: string } | null }> {
  const f = (q.filter ?? 'all') as ReportFilter
  const raw = await page(ctx.store, ctx.store.db, ctx.projectId, id, f, q.link, after, limit)
  const more = raw.length > limit
  const kept = more ? raw.slice(0, limit) : raw
  const links = await linksOf(ctx.store, ctx.store.db, ctx.projectId, kept.map((r) => r.emailId))
  const rows = kept.map((r) => ({
    emailId: r.emailId, contactId: r.contactId, email: r.email, status: r.status,
    deliveredAt: iso(r.deliveredAt), openedAt: iso(r.openedAt ?? (r.clickedAt ? r.clickedAt : null)), clickedAt: iso(r.clickedAt),
    bouncedAt: iso(r.bouncedAt), bounceType: r.bounceType, complainedAt: iso(r.complainedAt), unsubscribedAt: iso(r.unsubscribedAt),
    opens: Number(r.opens ?? 0), clicks: Number(r.clicks ?? 0), links: links.get(r.emailId) ?? [],
  }))
  const last = kept[kept.length - 1]
  return { rows, next: more && last ? { at: last.createdAt, id: last.emailId } : null }
}

/** GET /campaigns/:id/recipients: one keyset page (404 for another project's campaign). */
export async function campaignRecipients(ctx: Ctx, id: string, q: RecipientsQuery): Promise<RecipientsPage> {
  if (!(await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id))) throw notFound('campaign')
  const limit = Math.max(1, Math.min(MAX_LIMIT, Math.trunc(q.limit ?? 50)))
  const c = q.cursor ? decodeTimeCursor(q.cursor) : null
  const { rows, next } = await readPage(ctx, id, q, limit, c ? { at: new Date(c.at), id: c.id } : null)
  return { campaignId: id, filter: q.filter ?? 'all', data: rows, cursor: next ? encodeTimeCursor({ at: next.at.getTime(), id: next.id }) : null, hasMore: next !== null }
}

const CSV_COLUMNS = ['email', 'status', 'deliveredAt', 'openedAt', 'clickedAt', 'opens', 'clicks', 'links', 'bouncedAt', 'bounceType', 'complainedAt', 'unsubscribedAt', 'contactId', 'emailId'] as const

function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? '' : Array.isArray(v) ? v.join(' ') : String(v)
  // A leading = + - @ would be a formula in a spreadsheet: quoted with an apostrophe.
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

/** GET /campaigns/:id/recipients.csv: every matching recipient, read in pages of 1,000. */
export async function campaignRecipientsCsv(ctx: Ctx, id: string, q: RecipientsQuery): Promise<string> {
  if (!(await repo.findById(ctx.store, ctx.store.db, ctx.projectId, id))) throw notFound('campaign')
  const lines = [CSV_COLUMNS.join(',')]
  let after: { at: Date; id: string } | null = null
  do {
    const { rows, next } = await readPage(ctx, id, q, 1000, after)
    for (const r of rows) lines.push(CSV_COLUMNS.map((k) => csvCell(r[k])).join(','))
    after = next
  } while (after)
  return `${lines.join('\r\n')}\r\n`
}
