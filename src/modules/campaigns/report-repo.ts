import { and, asc, eq, gt, inArray, isNotNull, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { jsonText } from '../../db/dialect'

/**
 * The SQL of a campaign's per-recipient report (report.ts), apart from the campaign send code's repo.ts:
 * keyset pages over the campaign's emails in (created_at, id) order (emails_campaign_created_idx), opens and
 * clicks from email_stats (by email id), the unsubscribe from campaign_unsubscribes (its primary key), the
 * links from the page's click events (events_email_created_idx).
 */

export const REPORT_FILTERS = ['all', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'failed'] as const
export type ReportFilter = (typeof REPORT_FILTERS)[number]

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

export async function page(store: Store, db: Db, projectId: string, campaignId: string, f: ReportFilter, link: string | undefined, after: { at: Date; id: string } | null, limit: number) {
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

export async function linksOf(store: Store, db: Db, projectId: string, emailIds: string[]): Promise<Map<string, string[]>> {
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

