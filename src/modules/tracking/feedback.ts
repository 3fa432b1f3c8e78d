/**
 * What comes back for an email after it left: bounces and complaints (inbound DSN/ARF, SES
 * notifications), deliveries reported by a relay (SES), opens and clicks (service.ts). One state machine
 * for every source: the status only moves forward (src/modules/emails/status.ts), a duplicate report
 * changes nothing and emits nothing, and each verb runs inside the caller's transaction so the report's
 * own bookkeeping (the inbound message, the notification receipt) commits with it.
 *
 * Event data (docs/decisions.md, Events the service emits): {emailId, messageId, subject, from, to, templateId, campaignId, sourceType}
 * plus the facts of the report; the base is stored on the email's row only (events/email-base.ts).
 */
import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { bounces, complaints } from '../../metrics'
import { emailBase } from '../events/email-base'
import { appendEvents, type EventRow, type NewEvent } from '../events/stream'
import * as contactsRepo from '../contacts/repo/contact'
import { subscriptionEvent } from '../contacts/service'
import { suppress } from '../suppressions/service'
import * as repo from './repo'
import type { FeedbackEmail } from './repo'
import { cutText } from '../../storable'

export type { FeedbackEmail } from './repo'

/**
 * The email a report is about, by id, locked for the report's transaction (PostgreSQL: FOR UPDATE), so
 * two reports of one email apply one after the other.
 */
export function feedbackEmailById(ctx: Pick<Ctx, 'store'>, db: Db, id: string): Promise<FeedbackEmail | null> {
  return repo.emailById(ctx.store, db, id, true)
}

/** Emails carrying a Message-ID (with angle brackets), optionally within one project; at most 50. */
export function emailsByMessageId(ctx: Pick<Ctx, 'store'>, db: Db, messageId: string, projectId?: string | null): Promise<FeedbackEmail[]> {
  return repo.emailsByMessageId(ctx.store, db, messageId, projectId)
}

/** Where a report came from: the inbound SMTP receiver (DSN, ARF) or a provider webhook. */
export type FeedbackSource = 'dsn' | 'arf' | 'ses'

function event(e: FeedbackEmail, name: string, data: Record<string, unknown>, at: Date): NewEvent {
  const base = emailBase(e)
  return { contactId: e.contactId, name, emailId: e.id, data: { ...base, ...data }, createdAt: at, base }
}

/**
 * Whether a hard bounce means the address itself is bad, so the project stops sending to it: unknown or
 * disabled mailboxes (x.1.x, 5.2.0, 5.2.1) and undetermined permanent failures (x.0.x). Policy and
 * reputation blocks (x.7.x), content (x.6.x), size, system and network failures bounce the email but
 * leave the address sendable: the address is probably fine, the message or the sender was not. Same rule
 * as the synchronous path (src/mail/outbound/replies.ts `shouldSuppress`).
 */
export function bounceSuppresses(bounceType: 'hard' | 'soft', status: string | null, bounceKind: string | null): boolean {
  if (bounceType !== 'hard') return false
  if (status) {
    const m = /^5\.(\d{1,3})\.(\d{1,3})$/.exec(status)
    if (m) {
      const [subject, detail] = [Number(m[1]), Number(m[2])]
      if (subject === 1) return true
      if (subject === 2) return detail === 0 || detail === 1
      if (subject === 0) return bounceKind === null || bounceKind === 'unknown-user' || bounceKind === 'other'
      return false
    }
  }
  return bounceKind === 'unknown-user' || bounceKind === 'other' || bounceKind === null
}

export interface BounceReport {
  source: FeedbackSource
  bounceType: 'hard' | 'soft'
  /** unknown-user, mailbox-full, mailbox, system, network, protocol, content, policy, other. */
  bounceKind: string | null
  /** Enhanced status code, e.g. 5.1.1. */
  status: string | null
  /** The remote server's words (Diagnostic-Code, SES diagnosticCode). */
  diagnostic: string | null
  /** The recipient address the report names. */
  recipient: string | null
  reportingMta?: string | null
  remoteMta?: string | null
  /** Provider detail (SES bounceType/bounceSubType, DSN action, heuristic parse...). */
  extra?: Record<string, unknown>
  /**
   * The report says the email will not be delivered (a DSN with Action: failed): the email becomes
   * BOUNCED even when the bounce is soft (a full mailbox, a 4.x.x status the reporting MTA gave up on).
   */
  final?: boolean
  at: Date
}

export interface FeedbackResult {
  /** False when the report repeated one already applied (nothing changed). */
  applied: boolean
  events: EventRow[]
  suppressed: boolean
}

const NOTHING: FeedbackResult = { applied: false, events: [], suppressed: false }

function smtpCodeOf(text: string | null): number | null {
  const m = text ? /^\s*([245]\d\d)\b/.exec(text) : null
  return m ? Number(m[1]) : null
}

/**
 * A bounce reported after sending. Hard, or soft and final (`r.final`, a DSN with Action: failed): the
 * email becomes BOUNCED with that bounce type (unless it is already past that), the address is
 * suppressed for the project when the failure is about the address (bounceSuppresses: never for a soft
 * bounce such as 5.2.2 mailbox full), email.bounce is emitted. Soft and not final (an SES transient
 * notification): email.bounce only, the status stays. A hard bounce of an email already recorded as
 * hard-bounced, or a final soft one of an email already BOUNCED, is a duplicate and does nothing.
 */
export async function applyBounce(ctx: Ctx, db: Db, email: FeedbackEmail, r: BounceReport): Promise<FeedbackResult> {
  const { store } = ctx
  let suppressed = false
  if (r.bounceType === 'hard' || r.final) {
    if (email.status === 'BOUNCED' && (email.bounceType === 'hard' || r.bounceType === 'soft')) return NOTHING
    await repo.advanceEmail(store, db, email.projectId, email.id, {
      status: 'BOUNCED', bounceType: r.bounceType, bouncedAt: r.at, lastReply: cutText(r.diagnostic ?? r.status ?? 'bounced', 1000),
    }, ctx.now)
    // Counted once per email: a soft bounce that expired (BOUNCED, soft) was counted already.
    if (email.campaignId && !email.bouncedAt) await repo.bumpCampaign(store, db, email.projectId, email.campaignId, { bounced: 1 }, ctx.now)
    if (bounceSuppresses(r.bounceType, r.status, r.bounceKind)) {
      await suppress(ctx, db, { email: email.toAddress, reason: 'bounce', emailId: email.id, detail: r.diagnostic ?? r.status })
      suppressed = true
    }
  }
  const events = await appendEvents(ctx, db, [event(email, 'email.bounce', {
    bounceType: r.bounceType, bounceKind: r.bounceKind, enhancedCode: r.status, smtpCode: smtpCodeOf(r.diagnostic),
    reply: r.diagnostic, recipient: r.recipient, reportingMta: r.reportingMta ?? null, remoteMta: r.remoteMta ?? null,
    suppressed, bouncedAt: r.at.toISOString(), source: r.source, ...r.extra,
  }, r.at)])
  // Counted inside the transaction: one that rolls back (and is retried) may count a bounce twice.
  bounces().inc({ type: r.bounceType, source: 'report' })
  return { applied: true, events, suppressed }
}

export interface DelayReport {
  source: FeedbackSource
  /** Enhanced status code, e.g. 4.7.0. */
  status: string | null
  diagnostic: string | null
  recipient: string | null
  reportingMta?: string | null
  remoteMta?: string | null
  /** Until when the reporting MTA keeps trying (the DSN's Will-Retry-Until, as written). */
  willRetryUntil?: string | null
  extra?: Record<string, unknown>
  at: Date
}

/**
 * A relay's report that it has not delivered the email yet and keeps trying (a DSN with Action:
 * delayed): email.delayed only. No bounce: the status, the bounce counters, the suppression list and the
 * bounce metric are left alone (docs/decisions.md, Events the service emits).
 */
export async function applyDelay(ctx: Ctx, db: Db, email: FeedbackEmail, r: DelayReport): Promise<FeedbackResult> {
  const events = await appendEvents(ctx, db, [event(email, 'email.delayed', {
    enhancedCode: r.status, smtpCode: smtpCodeOf(r.diagnostic), reply: r.diagnostic, recipient: r.recipient,
    reportingMta: r.reportingMta ?? null, remoteMta: r.remoteMta ?? null, willRetryUntil: r.willRetryUntil ?? null,
    delayedAt: r.at.toISOString(), source: r.source, ...r.extra,
  }, r.at)])
  return { applied: true, events, suppressed: false }
}

export interface ComplaintReport {
  source: FeedbackSource
  /** abuse, fraud, virus, other... (ARF Feedback-Type, SES complaintFeedbackType). */
  feedbackType: string | null
  userAgent?: string | null
  recipient: string | null
  extra?: Record<string, unknown>
  at: Date
}

/**
 * A spam complaint: the email becomes COMPLAINED, the address is suppressed, the contact unsubscribed
 * (contact.unsubscribed when it was subscribed) and email.complaint emitted. A second complaint about
 * the same email is a duplicate and does nothing.
 */
export async function applyComplaint(ctx: Ctx, db: Db, email: FeedbackEmail, r: ComplaintReport): Promise<FeedbackResult> {
  if (email.complainedAt) return NOTHING
  const { store } = ctx
  await repo.advanceEmail(store, db, email.projectId, email.id, { status: 'COMPLAINED', complainedAt: r.at }, ctx.now)
  if (email.campaignId) await repo.bumpCampaign(store, db, email.projectId, email.campaignId, { complained: 1 }, ctx.now)
  await suppress(ctx, db, { email: email.toAddress, reason: 'complaint', emailId: email.id, detail: r.feedbackType ? `complaint (${r.feedbackType})` : 'complaint' })
  complaints().inc()
  const newEvents: NewEvent[] = [event(email, 'email.complaint', {
    feedbackType: r.feedbackType, userAgent: r.userAgent ?? null, recipient: r.recipient, complainedAt: r.at.toISOString(),
    suppressed: true, source: r.source, ...r.extra,
  }, r.at)]
  if (email.contactId) {
    const changed = await contactsRepo.setSubscribed(store, db, email.projectId, [email.contactId], false, ctx.now)
    if (changed.length) newEvents.push({ ...subscriptionEvent(email.contactId, false), data: { subscribed: false, reason: 'complaint', emailId: email.id } })
  }
  return { applied: true, events: await appendEvents(ctx, db, newEvents), suppressed: true }
}

export interface DeliveryReport {
  source: FeedbackSource
  reply: string | null
  host: string | null
  recipient: string | null
  extra?: Record<string, unknown>
  at: Date
}

/**
 * A relay's report that the recipient's server accepted the email (SES Delivery): DELIVERED and
 * email.delivery, once.
 */
export async function applyDelivery(ctx: Ctx, db: Db, email: FeedbackEmail, r: DeliveryReport): Promise<FeedbackResult> {
  if (email.deliveredAt) return NOTHING
  await repo.advanceEmail(ctx.store, db, email.projectId, email.id, { status: 'DELIVERED', deliveredAt: r.at }, ctx.now)
  if (email.campaignId) await repo.bumpCampaign(ctx.store, db, email.projectId, email.campaignId, { delivered: 1 }, ctx.now)
  const events = await appendEvents(ctx, db, [event(email, 'email.delivery', {
    deliveredAt: r.at.toISOString(), host: r.host, reply: r.reply, smtpCode: smtpCodeOf(r.reply), recipient: r.recipient, source: r.source, ...r.extra,
  }, r.at)])
  return { applied: true, events, suppressed: false }
}
