/**
 * The email's base in email.* events (docs/decisions.md, Events the service emits): every event about an
 * email the service sent carries `{emailId, messageId, subject, from, to, templateId, campaignId,
 * sourceType}` in its data. Those fields are columns of the email's row, which never change once it is
 * created, so they are not stored in each event row: `storedData` leaves them out when the event is
 * appended, and `withBase` puts them back, from the email's row, wherever events are read
 * (repo.ts `hydrateEmailEvents`). A row stored with the full data (before migration 0025) reads as it
 * was: only missing fields are filled.
 */

/** The email.* events whose data begins with the email's base (email.received is about an inbound message). */
export const BASE_EVENT_NAMES: ReadonlySet<string> = new Set([
  'email.sent', 'email.delivery', 'email.deferred', 'email.delayed', 'email.bounce', 'email.failed', 'email.open', 'email.click', 'email.complaint',
])

/** The base's fields, in the order the data has always carried them. */
export const BASE_KEYS = ['emailId', 'messageId', 'subject', 'from', 'to', 'templateId', 'campaignId', 'sourceType'] as const

export type EmailBase = Record<(typeof BASE_KEYS)[number], string | null>

/** The columns of an email row the base is made of. */
export interface BaseColumns {
  id: string
  messageId: string | null
  subject: string
  fromAddress: string
  toAddress: string
  templateId: string | null
  campaignId: string | null
  sourceType: string
}

export function emailBase(e: BaseColumns): EmailBase {
  return {
    emailId: e.id, messageId: e.messageId, subject: e.subject, from: e.fromAddress, to: e.toAddress,
    templateId: e.templateId, campaignId: e.campaignId, sourceType: e.sourceType,
  }
}

/** Whether an event of this name and email may have had its base left out of its stored data. */
export function carriesBase(e: { name: string; emailId: string | null }): e is { name: string; emailId: string } {
  return e.emailId !== null && BASE_EVENT_NAMES.has(e.name)
}

/**
 * The data to store for an event whose full data is `data` and whose email's base is `base`: without the
 * base's fields that hold the base's value (a field the event set to something else stays).
 */
export function storedData(data: Record<string, unknown>, base: EmailBase): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) {
    if (k in base && base[k as keyof EmailBase] === v) continue
    out[k] = v
  }
  return out
}

/** Whether stored data lacks a field of the base (a row stored without it). */
export function lacksBase(data: Record<string, unknown>): boolean {
  for (const k of BASE_KEYS) if (!(k in data)) return true
  return false
}

/**
 * The full data of an event from its stored data and its email's base: the base's fields first, in their
 * order, then the event's; a field the stored data holds is kept as stored.
 */
export function withBase(data: Record<string, unknown>, base: EmailBase): Record<string, unknown> {
  return { ...base, ...data }
}
