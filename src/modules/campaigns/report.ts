import type { Ctx } from '../../deps'
import { notFound } from '../../errors'
import { decodeTimeCursor, encodeTimeCursor } from '../cursor'
import type { RecipientsQuery, RecipientsPage, RecipientRow } from './model'
import * as repo from './repo'
import { linksOf, page, type ReportFilter } from './report-repo'

/**
 * Per-recipient report of a campaign: each recipient's email with its delivery,
 * first open and click, bounce, complaint and unsubscribe, and the links it clicked; filterable and
 * exported as CSV, in keyset pages. Its SQL is in report-repo.ts, apart from the campaign send code's repo.ts.
 */

const MAX_LIMIT = 500

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
