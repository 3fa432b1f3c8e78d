import { and, eq, sql } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { locked, moment } from '../../db/dialect'
import { statementRows } from '../../db/statement'
import { advanceSql, type EmailStatus } from '../emails/status'
import { spillInlineEvents } from '../events/inline'
import { insertEvents } from '../events/repo'

/**
 * The SQL of what comes back for an email: opens, clicks, bounces, complaints and deliveries reported
 * after sending. Emails are found by id from a signed token or VERP address, or by Message-ID from a
 * provider report: those look-ups are not project-scoped (the caller holds proof of the email, not of a
 * project); every write is scoped to the email's project.
 */

/** The facts of an email that feedback needs (and that every email.* event carries). */
export interface FeedbackEmail {
  id: string
  projectId: string
  contactId: string | null
  templateId: string | null
  campaignId: string | null
  sourceType: string
  messageId: string
  subject: string
  fromAddress: string
  toAddress: string
  status: string
  bounceType: string | null
  deliveredAt: Date | null
  bouncedAt: Date | null
  complainedAt: Date | null
}

function columns(store: Store) {
  const e = store.t.emails
  return {
    id: e.id, projectId: e.projectId, contactId: e.contactId, templateId: e.templateId, campaignId: e.campaignId,
    sourceType: e.sourceType, messageId: e.messageId, subject: e.subject, fromAddress: e.fromAddress,
    toAddress: e.toAddress, status: e.status, bounceType: e.bounceType, deliveredAt: e.deliveredAt,
    bouncedAt: e.bouncedAt, complainedAt: e.complainedAt,
  }
}

/**
 * The email of a verified token or VERP address (any project). `forUpdate` locks the row until the
 * transaction ends (PostgreSQL; SQLite's single writer serialises anyway), so two reports about one
 * email are applied one after the other and the second sees the first's effect.
 */
export async function emailById(store: Store, db: Db, id: string, forUpdate = false): Promise<FeedbackEmail | null> {
  const e = store.t.emails
  let q = db.select(columns(store)).from(e).where(eq(e.id, id)).limit(1)
  if (forUpdate) q = locked(store, q)
  const [row] = await q
  return row ?? null
}

/** Emails carrying a Message-ID (with angle brackets), optionally within one project; at most 50. */
export async function emailsByMessageId(store: Store, db: Db, messageId: string, projectId?: string | null): Promise<FeedbackEmail[]> {
  const e = store.t.emails
  const cond = projectId ? and(eq(e.messageId, messageId), eq(e.projectId, projectId)) : eq(e.messageId, messageId)
  return db.select(columns(store)).from(e).where(cond).limit(50)
}

const tsParam = moment

export interface EmailAdvance {
  status: EmailStatus
  /** Set only when not set yet (the first open, click, complaint, delivery is kept). */
  openedAt?: Date
  clickedAt?: Date
  complainedAt?: Date
  deliveredAt?: Date
  /** Overwritten (the latest bounce describes the email). */
  bouncedAt?: Date
  bounceType?: string
  lastReply?: string | null
}

/**
 * Moves an email's status forward (never back: src/modules/emails/status.ts) and records when. Scoped to
 * the project. The sending helper's `recordOutcome` covers the outbound facts; this covers the ones that
 * come back later.
 */
export async function advanceEmail(store: Store, db: Db, projectId: string, id: string, a: EmailAdvance, now: Date): Promise<void> {
  const e = store.t.emails
  // A bounce's reply replaces the delivery's, which inline delivery events are read from: they become rows first.
  if (a.lastReply !== undefined) await spillInlineEvents(store, db, projectId, id, (rows) => insertEvents(store, db, rows))
  const set: Record<string, unknown> = { status: advanceSql(e.status, a.status), updatedAt: now }
  const once = { openedAt: e.openedAt, clickedAt: e.clickedAt, complainedAt: e.complainedAt, deliveredAt: e.deliveredAt } as const
  for (const k of Object.keys(once) as Array<keyof typeof once>) {
    const v = a[k]
    if (v) set[k] = sql`COALESCE(${once[k]}, ${tsParam(store, v)})`
  }
  if (a.bouncedAt) set.bouncedAt = a.bouncedAt
  if (a.bounceType) set.bounceType = a.bounceType
  if (a.lastReply !== undefined) set.lastReply = a.lastReply
  await db.update(e).set(set).where(and(eq(e.projectId, projectId), eq(e.id, id)))
}

export type Engagement = 'open' | 'click'

/**
 * Counts one open or click of an email; returns the count after it (1 = the first). One statement, so
 * two concurrent first opens cannot both be first.
 */
export async function countEngagement(store: Store, db: Db, email: Pick<FeedbackEmail, 'id' | 'projectId' | 'campaignId'>, kind: Engagement, at: Date): Promise<number> {
  const s = store.t.emailStats
  const open = kind === 'open'
  const [row] = await db.insert(s).values({
    emailId: email.id, projectId: email.projectId, campaignId: email.campaignId,
    opens: open ? 1 : 0, clicks: open ? 0 : 1,
    firstOpenAt: open ? at : null, lastOpenAt: open ? at : null,
    firstClickAt: open ? null : at, lastClickAt: open ? null : at,
  }).onConflictDoUpdate({
    target: s.emailId,
    set: open
      ? { opens: sql`${s.opens} + 1`, firstOpenAt: sql`COALESCE(${s.firstOpenAt}, excluded.first_open_at)`, lastOpenAt: sql`excluded.last_open_at` }
      : { clicks: sql`${s.clicks} + 1`, firstClickAt: sql`COALESCE(${s.firstClickAt}, excluded.first_click_at)`, lastClickAt: sql`excluded.last_click_at` },
  }).returning({ opens: s.opens, clicks: s.clicks })
  return Number(open ? row.opens : row.clicks)
}

/** What to add to a campaign's counters (campaign_stats; absent fields add nothing). */
export interface CampaignDelta {
  opens?: number; uniqueOpens?: number; clicks?: number; uniqueClicks?: number
  sent?: number; delivered?: number; bounced?: number; complained?: number; failed?: number; settled?: number; unsubscribed?: number
}

const COUNTERS = ['opens', 'uniqueOpens', 'clicks', 'uniqueClicks', 'sent', 'delivered', 'bounced', 'complained', 'failed', 'settled', 'unsubscribed'] as const

/**
 * Adds to a campaign's counters (the row is created on first use), inside the transaction that records
 * the fact counted: the caller counts a fact once per email (a first open, a final outcome...).
 */
export async function bumpCampaign(store: Store, db: Db, projectId: string, campaignId: string, d: CampaignDelta, now: Date): Promise<void> {
  const c = store.t.campaignStats
  const given = COUNTERS.filter((k) => d[k])
  if (!given.length) return
  const v = Object.fromEntries(COUNTERS.map((k) => [k, d[k] ?? 0])) as Record<(typeof COUNTERS)[number], number>
  const set: Record<string, unknown> = { updatedAt: now }
  for (const k of given) set[k] = sql`${c[k]} + ${v[k]}`
  await db.insert(c).values({ projectId, campaignId, ...v, updatedAt: now }).onConflictDoUpdate({ target: [c.projectId, c.campaignId], set })
}

export type EmailStatsRow = typeof import('../../db/schema').pgSchema.emailStats.$inferSelect
export type CampaignStatsRow = typeof import('../../db/schema').pgSchema.campaignStats.$inferSelect

export async function emailStats(store: Store, projectId: string, emailId: string): Promise<EmailStatsRow | null> {
  const s = store.t.emailStats
  const [row] = await store.db.select().from(s).where(and(eq(s.projectId, projectId), eq(s.emailId, emailId))).limit(1)
  return row ?? null
}

export async function campaignStats(store: Store, projectId: string, campaignId: string): Promise<CampaignStatsRow | null> {
  const c = store.t.campaignStats
  const [row] = await store.db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.campaignId, campaignId))).limit(1)
  return row ?? null
}

/**
 * Whether a project has click and open tracking on (projects.tracking_enabled). Inside a transaction,
 * pass its `db`: on PostgreSQL another pooled connection would be taken while the transaction holds one,
 * and concurrent transactions would exhaust the pool and wait on each other forever.
 */
export async function trackingEnabled(store: Store, projectId: string, db: Db = store.db): Promise<boolean> {
  // Once per send request: one text compiled once on SQLite's connection (src/db/statement.ts); SQLite answers 0/1.
  const [row] = await statementRows<{ on: boolean | number }>(store, db, 'SELECT tracking_enabled AS "on" FROM projects WHERE id = $1 LIMIT 1', projectId)
  return row?.on === true || row?.on === 1
}
