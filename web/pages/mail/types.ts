import { type MessageKey, t } from '../../i18n'
/** The shapes of the mail routes the dashboard reads (JSON: dates are strings); see src/modules/{emails,activity,suppressions}. */

export interface EmailRecord {
  id: string; contactId: string | null; templateId: string | null; campaignId: string | null
  sourceType: string; type: string; messageId: string; from: string; fromName: string | null
  to: string; toName: string | null; replyTo: string | null; subject: string; status: string
  attempts: number; lastReply: string | null; deliveredTo: string | null; bounceType: string | null
  sentAt: string | null; deliveredAt: string | null; openedAt: string | null; clickedAt: string | null
  bouncedAt: string | null; complainedAt: string | null; failedAt: string | null
  createdAt: string; updatedAt: string
}

/** GET /emails/:id: the record and where it is in delivery (a deferred email stays SENDING, WAITING_RETRY). */
export interface EmailDetail extends EmailRecord {
  deliveryState: 'QUEUED' | 'SENDING' | 'WAITING_RETRY' | 'DONE'
  nextAttemptAt: string | null
}

export interface EmailItem extends EmailRecord { kind: 'email'; opens: number; clicks: number }
export interface EventItem {
  kind: 'event'; id: string; type: string; contact: { id: string; email: string } | null
  emailId: string | null; data: Record<string, unknown>; createdAt: string
}
export type ActivityItem = EmailItem | EventItem
export interface ActivityPage { data: ActivityItem[]; cursor: string | null; hasMore: boolean; total: number }
export interface ActivityTypes { data: Array<{ type: string; count: number; lastSeenAt: string }> }

export interface Attempt {
  attempt: number; at: string; outcome: 'deferred' | 'accepted' | 'captured' | 'bounced' | 'failed'
  host: string | null; reply: string | null; smtpCode: number | null; enhancedCode: string | null; nextAttemptAt: string | null
}
export interface Attempts { data: Attempt[]; attempts: number; complete: boolean }
export interface Headers { raw: string; fields: Array<{ name: string; value: string }>; note: string }

export interface Suppression { email: string; reason: 'bounce' | 'complaint' | 'manual'; emailId: string | null; detail: string | null; createdAt: string }
export interface SuppressionPage { data: Suppression[]; cursor: string | null; hasMore: boolean; total: number }

const TYPES = new Set(['email', 'email.delivery', 'email.open', 'email.click', 'email.bounce', 'email.complaint', 'email.received', 'contact.subscribed', 'contact.unsubscribed'])
/** A person's words for an activity type, in the language in effect (an unknown type shows itself). */
export const typeLabel = (type: string): string => (TYPES.has(type) ? t(`type.${type}` as MessageKey) : type)

/** An email status (QUEUED, DELIVERED) in the language in effect. */
export const statusLabel = (status: string): string => t(`status.${status}` as MessageKey)

/** The badge colour of an email status. */
export function statusTone(status: string): string {
  if (status === 'DELIVERED' || status === 'OPENED' || status === 'CLICKED' || status === 'SENT') return 'ok'
  if (status === 'BOUNCED' || status === 'COMPLAINED' || status === 'FAILED') return 'failed'
  return 'pending'
}
