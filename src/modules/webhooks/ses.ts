/**
 * Amazon SES notifications (the "notification" format with `notificationType`, and the event-publishing
 * format with `eventType`) mapped to the email state machine of src/modules/tracking/feedback.ts.
 *
 * The email is found by its Message-ID (mail.commonHeaders.messageId or the Message-ID among
 * mail.headers: the emails record keeps the id mailctl gave the message), else by the envelope sender
 * when it is mailctl's VERP address (mail.source). Bounce types: Permanent -> hard; Transient and
 * Undetermined -> soft. The bounce kind comes from the recipient's status code when SES gives one, else
 * from the sub-type (NoEmail -> unknown-user, MailboxFull -> mailbox-full, ContentRejected,
 * AttachmentRejected, MessageTooLarge -> content, Suppressed and OnAccountSuppressionList -> other).
 */
import type { Db } from '../../db/client'
import { ctxFor, type Deps } from '../../deps'
import { classifyStatus } from '../../mail/inbound/dsn'
import { messageId as parseMessageId } from '../../mail/inbound/mime'
import { parseVerp } from '../../mail/outbound/verp'
import type { EventRow } from '../events/stream'
import { applyBounce, applyComplaint, applyDelivery, emailsByMessageId, feedbackEmailById, type FeedbackEmail } from '../tracking/service'


export interface SesOutcome {
  kind: string
  /** Emails whose state changed (or got an event). */
  applied: number
  /** Why nothing happened, when nothing did. */
  ignored: string | null
  events: Map<string, EventRow[]>
}

type Obj = Record<string, unknown>
const obj = (v: unknown): Obj | null => (v && typeof v === 'object' && !Array.isArray(v) ? v as Obj : null)
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null)
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj).filter((x): x is Obj => x !== null) : [])

function dateOr(v: unknown, fallback: Date): Date {
  const s = str(v)
  const d = s ? new Date(s) : null
  return d && !Number.isNaN(d.getTime()) ? d : fallback
}

function messageIdsOf(mail: Obj): string[] {
  const out: string[] = []
  const common = obj(mail.commonHeaders)
  const fromCommon = parseMessageId(str(common?.messageId))
  if (fromCommon) out.push(fromCommon)
  for (const h of arr(mail.headers)) {
    if (str(h.name)?.toLowerCase() === 'message-id') {
      const id = parseMessageId(str(h.value))
      if (id) out.push(id)
    }
  }
  return [...new Set(out)]
}

const SUBTYPE_KIND: Record<string, string> = {
  NoEmail: 'unknown-user', MailboxFull: 'mailbox-full', MessageTooLarge: 'content', ContentRejected: 'content',
  AttachmentRejected: 'content', Suppressed: 'other', OnAccountSuppressionList: 'other', General: 'other',
}

function diagnosticText(v: unknown): string | null {
  const s = str(v)
  if (!s) return null
  const m = /^\s*[A-Za-z0-9-]+\s*;\s*([\s\S]*)$/.exec(s)
  return (m ? m[1] : s).replace(/\s+/g, ' ').trim() || null
}

async function emailsFor(deps: Deps, db: Db, mail: Obj): Promise<FeedbackEmail[]> {
  for (const id of messageIdsOf(mail)) {
    const rows = await emailsByMessageId(deps, db, id)
    if (rows.length) {
      const locked = await Promise.all(rows.map((r) => feedbackEmailById(deps, db, r.id)))
      return locked.filter((r): r is FeedbackEmail => r !== null)
    }
  }
  const source = str(mail.source)
  const verp = source ? parseVerp(deps, source) : null
  if (verp) {
    const e = await feedbackEmailById(deps, db, verp.emailId)
    if (e) return [e]
  }
  return []
}

/** Pairs each reported recipient with the email sent to it (any email when there is only one). */
function pair(emails: FeedbackEmail[], recipients: Obj[], field: string): Array<{ email: FeedbackEmail; r: Obj }> {
  const out: Array<{ email: FeedbackEmail; r: Obj }> = []
  const used = new Set<string>()
  for (const r of recipients) {
    const addr = (str(r[field]) ?? '').toLowerCase().replace(/^.*<|>.*$/g, '').trim()
    const email = emails.find((e) => e.toAddress.toLowerCase() === addr) ?? (emails.length === 1 ? emails[0] : null)
    if (email && !used.has(email.id)) {
      used.add(email.id)
      out.push({ email, r })
    }
  }
  if (!out.length && emails.length === 1) out.push({ email: emails[0], r: {} })
  return out
}

/** Applies one SES notification (the parsed SNS Message) inside `db`. */
export async function applySesNotification(deps: Deps, db: Db, message: unknown, now = deps.clock.date()): Promise<SesOutcome> {
  const events = new Map<string, EventRow[]>()
  const n = obj(message)
  const kind = str(n?.notificationType) ?? str(n?.eventType) ?? 'unknown'
  const none = (why: string): SesOutcome => ({ kind, applied: 0, ignored: why, events })
  if (!n) return none('the SNS Message is not a JSON object')
  if (kind !== 'Bounce' && kind !== 'Complaint' && kind !== 'Delivery') return none(`notification type ${kind.slice(0, 60)} is not handled`)
  const mail = obj(n.mail)
  if (!mail) return none('the notification has no mail object')
  const emails = await emailsFor(deps, db, mail)
  if (!emails.length) return none('no email of this server has that Message-ID')
  let applied = 0
  const keep = (projectId: string, rows: EventRow[]) => {
    if (!rows.length) return
    events.set(projectId, [...(events.get(projectId) ?? []), ...rows])
  }
  const ctxOf = (e: FeedbackEmail) => ctxFor(deps, e.projectId, { kind: 'job', name: 'webhooks.ses' })
  if (kind === 'Bounce') {
    const b = obj(n.bounce) ?? {}
    const sesType = str(b.bounceType) ?? 'Undetermined'
    const subType = str(b.bounceSubType) ?? 'General'
    const at = dateOr(b.timestamp, now)
    for (const { email, r } of pair(emails, arr(b.bouncedRecipients), 'emailAddress')) {
      const status = str(r.status)
      const fromStatus = status ? classifyStatus(status).bounceKind : null
      const res = await applyBounce(ctxOf(email), db, email, {
        source: 'ses', bounceType: sesType === 'Permanent' ? 'hard' : 'soft',
        bounceKind: fromStatus ?? SUBTYPE_KIND[subType] ?? 'other', status, diagnostic: diagnosticText(r.diagnosticCode),
        recipient: str(r.emailAddress), reportingMta: diagnosticText(b.reportingMTA), remoteMta: null,
        extra: { sesBounceType: sesType, sesBounceSubType: subType, feedbackId: str(b.feedbackId) }, at,
      })
      if (res.applied) applied++
      keep(email.projectId, res.events)
    }
  } else if (kind === 'Complaint') {
    const c = obj(n.complaint) ?? {}
    if (str(c.complaintSubType) === 'OnAccountSuppressionList') return none('complaint sub-type OnAccountSuppressionList: no recipient complained')
    const at = dateOr(c.timestamp, now)
    for (const { email, r } of pair(emails, arr(c.complainedRecipients), 'emailAddress')) {
      const res = await applyComplaint(ctxOf(email), db, email, {
        source: 'ses', feedbackType: str(c.complaintFeedbackType), userAgent: str(c.userAgent), recipient: str(r.emailAddress),
        extra: { feedbackId: str(c.feedbackId), arrivalDate: str(c.arrivalDate) }, at,
      })
      if (res.applied) applied++
      keep(email.projectId, res.events)
    }
  } else {
    const d = obj(n.delivery) ?? {}
    const at = dateOr(d.timestamp, now)
    const recipients = (Array.isArray(d.recipients) ? d.recipients : []).map((x) => ({ emailAddress: x }) as Obj)
    for (const { email, r } of pair(emails, recipients, 'emailAddress')) {
      const res = await applyDelivery(ctxOf(email), db, email, {
        source: 'ses', reply: str(d.smtpResponse), host: str(d.reportingMTA) ?? str(d.remoteMtaIp), recipient: str(r.emailAddress),
        extra: { processingTimeMillis: typeof d.processingTimeMillis === 'number' ? d.processingTimeMillis : null, remoteMtaIp: str(d.remoteMtaIp) }, at,
      })
      if (res.applied) applied++
      keep(email.projectId, res.events)
    }
  }
  return { kind, applied, ignored: applied ? null : 'already recorded', events }
}
