/**
 * Abuse feedback reports (ARF, RFC 5965): a pure parser over the raw message. It never throws: a report
 * it cannot read is `{kind: 'unparseable', reason}`, a message that is no feedback report is
 * `{kind: 'not-arf'}`.
 *
 * Feedback-Type is the one field required here (RFC 5965 also requires User-Agent and Version, but real
 * feedback loops omit them; their absence is tolerated). The original recipient comes from
 * Original-Rcpt-To, else from the To of the returned original unless the provider redacted it.
 */
import {
  addressedTo, addresses, decodeWords, fieldGroups, header, headersAll, originalMessage, partText, readMime,
  REPORT_PART_BYTES, unreadable, walk, type MimePart, type OriginalMessage,
} from './mime'

/** RFC 5965 and RFC 6591 types; others are passed through lower-cased. */
export type FeedbackType = 'abuse' | 'fraud' | 'virus' | 'other' | 'not-spam' | 'auth-failure' | (string & {})

export interface ArfReport {
  kind: 'arf'
  feedbackType: FeedbackType
  /** abuse, fraud, virus, other and the legacy opt-out types: the recipient does not want this mail. */
  isComplaint: boolean
  userAgent: string | null
  version: string | null
  originalMailFrom: string | null
  originalEnvelopeId: string | null
  originalRcptTo: string[]
  /** The complaining recipient: Original-Rcpt-To, else the unredacted To of the original. */
  originalRecipient: string | null
  reportedDomains: string[]
  sourceIp: string | null
  arrivalDate: Date | null
  reportingMta: string | null
  originalMessageId: string | null
  original: OriginalMessage | null
  /** Addresses the report was delivered to (Delivered-To, X-Original-To, Envelope-To, To). */
  addressedTo: string[]
  /** VERP candidates: Original-Mail-From, the original's Return-Path, addressedTo; deduplicated. */
  verpAddresses: string[]
  subject: string | null
  from: string | null
}

export interface NotArf { kind: 'not-arf' }
export interface Unparseable { kind: 'unparseable'; reason: string }
export type ArfResult = ArfReport | NotArf | Unparseable

const COMPLAINT_TYPES = new Set(['abuse', 'fraud', 'virus', 'other', 'opt-out', 'opt-out-list'])

function plainAddress(value: string | null): string | null {
  if (!value) return null
  const a = addresses(value)[0]
  if (a) return a
  const t = value.trim().replace(/^<|>$/g, '')
  return /^[^\s@<>]+@[^\s@<>]+$/.test(t) ? t.toLowerCase() : null
}

function redacted(addr: string): boolean {
  return /redacted|\*{2,}|^x+@|^removed@/i.test(addr)
}

/** Parses a raw inbound message as an ARF feedback report. Never throws. */
export function parseArf(raw: Buffer | Uint8Array): ArfResult {
  const root = readMime(raw)
  return 'kind' in root ? root : arfOf(root)
}

/** Reads a parsed message as an ARF feedback report. Never throws. */
export function arfOf(root: MimePart): ArfResult {
  try {
    const part = walk(root).find((p) => p.contentType === 'message/feedback-report')
    const isReport = root.contentType === 'multipart/report' && (root.params['report-type'] ?? '').toLowerCase() === 'feedback-report'
    if (!part) {
      return isReport ? { kind: 'unparseable', reason: 'multipart/report of type feedback-report without a message/feedback-report part' } : { kind: 'not-arf' }
    }
    const fields = fieldGroups(partText(part, REPORT_PART_BYTES)).flat()
    const type = header(fields, 'feedback-type')
    if (!type || !/^[a-z0-9-]+$/i.test(type.trim())) return { kind: 'unparseable', reason: 'the feedback report has no valid Feedback-Type field' }
    const feedbackType = type.trim().toLowerCase()
    const original = originalMessage(root)
    const originalRcptTo = [...new Set(headersAll(fields, 'original-rcpt-to').map(plainAddress).filter((a): a is string => a !== null && !redacted(a)))]
    const fromOriginal = original?.to.find((a) => !redacted(a)) ?? null
    const originalMailFrom = plainAddress(header(fields, 'original-mail-from'))
    const dateText = header(fields, 'arrival-date') ?? header(fields, 'received-date')
    const date = dateText ? new Date(dateText.slice(0, 200)) : null
    const to = addressedTo(root)
    const subject = header(root.headers, 'subject')
    const src = header(fields, 'source-ip')
    return {
      kind: 'arf',
      feedbackType,
      isComplaint: COMPLAINT_TYPES.has(feedbackType),
      userAgent: header(fields, 'user-agent'),
      version: header(fields, 'version'),
      originalMailFrom,
      originalEnvelopeId: header(fields, 'original-envelope-id'),
      originalRcptTo,
      originalRecipient: originalRcptTo[0] ?? fromOriginal,
      reportedDomains: [...new Set(headersAll(fields, 'reported-domain').map((d) => d.trim().toLowerCase()).filter(Boolean))],
      sourceIp: src ? src.trim() : null,
      arrivalDate: date && !Number.isNaN(date.getTime()) ? date : null,
      reportingMta: header(fields, 'reporting-mta')?.replace(/^\s*dns\s*;\s*/i, '').trim() ?? null,
      originalMessageId: original?.messageId ?? null,
      original,
      addressedTo: to,
      verpAddresses: [...new Set([...(originalMailFrom ? [originalMailFrom] : []), ...(original?.returnPath ? [original.returnPath] : []), ...to])],
      subject: subject === null ? null : decodeWords(subject),
      from: addresses(header(root.headers, 'from'))[0] ?? null,
    }
  } catch (e) {
    return unreadable(e)
  }
}
