import { type MessageKey, t } from '../../i18n'
import type { Answer } from '../../api'
/** The shapes of the mail routes the dashboard reads, from the server's document (web/api.ts). */

/** GET /emails/:id: the record and where it is in delivery (a deferred email stays SENDING, WAITING_RETRY). */
export type EmailDetail = Answer<'/emails/{id}'>
export type ActivityPage = Answer<'/activity'>
export type ActivityItem = ActivityPage['data'][number]
export type EmailItem = Extract<ActivityItem, { kind: 'email' }>
export type EventItem = Extract<ActivityItem, { kind: 'event' }>
/** What an email record and an email of the activity feed share. */
export type EmailRecord = Omit<EmailItem, 'kind' | 'opens' | 'clicks'>
export type ActivityTypes = Answer<'/activity/types'>

export type Attempts = Answer<'/emails/{id}/attempts'>
export type Headers = Answer<'/emails/{id}/headers'>

export type SuppressionPage = Answer<'/suppressions'>
export type Suppression = SuppressionPage['data'][number]

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
