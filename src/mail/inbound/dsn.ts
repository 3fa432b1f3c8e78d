/**
 * Delivery status notifications (RFC 3464, and RFC 6533 message/global-delivery-status): a pure parser
 * over the raw message. It never throws: anything it cannot read is `{kind: 'unparseable', reason}`,
 * a well-formed message that is no bounce is `{kind: 'not-dsn'}`.
 *
 * Classification of each recipient (the choice mailctl makes, documented in the OpenAPI notes):
 * - Action delivered / relayed / expanded: no bounce (`bounceType: null`).
 * - Action delayed, or a 4.x.x status: `soft`. A delayed report is no bounce at all: inbound.process
 *   records it as `email.delayed`; an Action failed report bounces its email whatever the type.
 * - 5.x.x: `hard`, except 5.2.2 (mailbox full), which is `soft` like every common sender treats it:
 *   the mailbox exists and may empty.
 * - `bounceKind` from the status subject: x.1.x `unknown-user` (bad mailbox or address), x.2.2
 *   `mailbox-full`, other x.2.x `mailbox`, x.3.x `system`, x.4.x `network`, x.5.x `protocol`,
 *   x.6.x `content`, x.7.x `policy` (policy, reputation, spam and authentication blocks, kept apart from
 *   unknown users: the address is probably good, the sender is not), else `other`.
 * - When Status is missing the enhanced code in Diagnostic-Code is used, then its basic SMTP code
 *   (5xx -> 5.0.0, 4xx -> 4.0.0).
 *
 * Non-RFC 3464 bounces (qmail "failure notice", legacy Yahoo and other plain-text bounces from
 * MAILER-DAEMON or postmaster) are read heuristically from the text and flagged `heuristic: true`.
 */
import {
  addressedTo, addresses, decodeWords, fieldGroups, header, messageId, originalMessage, parseHeaderBlock, partText,
  readableText, readMime, REPORT_PART_BYTES, unreadable, walk, type Header, type MimePart, type OriginalMessage,
} from './mime'

export type BounceType = 'hard' | 'soft'
export type BounceKind = 'unknown-user' | 'mailbox-full' | 'mailbox' | 'system' | 'network' | 'protocol' | 'content' | 'policy' | 'other'

export interface DsnRecipient {
  /** Final-Recipient address (lower-cased). */
  finalRecipient: string | null
  /** Original-Recipient address, when the reporting MTA gave it. */
  originalRecipient: string | null
  /** The address to act on: Original-Recipient, else Final-Recipient. */
  address: string
  /** failed, delayed, delivered, relayed, expanded (lower-cased; other values passed through). */
  action: string
  /** Enhanced status code, e.g. "5.1.1". */
  status: string | null
  diagnosticCode: string | null
  remoteMta: string | null
  /** Will-Retry-Until of a delayed report, as written (RFC 3464 section 2.3.9). */
  willRetryUntil: string | null
  /** null when the action is not a bounce (delivered, relayed, expanded). */
  bounceType: BounceType | null
  bounceKind: BounceKind | null
}

export interface DsnReport {
  kind: 'dsn'
  /** True when read from a plain-text bounce without a message/delivery-status part. */
  heuristic: boolean
  reportingMta: string | null
  /** Original-Envelope-Id (ENVID given at send time), if any. */
  originalEnvelopeId: string | null
  recipients: DsnRecipient[]
  /** Addresses the DSN was delivered to (Delivered-To, X-Original-To, Envelope-To, To): our VERP return path. */
  addressedTo: string[]
  /** VERP candidates: addressedTo plus the Return-Path of the returned original, deduplicated. */
  verpAddresses: string[]
  /** Message-ID of the bounced message: from the returned original, else In-Reply-To / References. */
  originalMessageId: string | null
  original: OriginalMessage | null
  subject: string | null
  from: string | null
}

export interface NotDsn { kind: 'not-dsn' }
export interface Unparseable { kind: 'unparseable'; reason: string }
export type DsnResult = DsnReport | NotDsn | Unparseable

const STATUS_RE = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/
const NOT_BOUNCE_ACTIONS = new Set(['delivered', 'relayed', 'expanded'])

/** Hard/soft and kind for a status code and action (exported for the SES notification mapping). */
export function classifyStatus(status: string | null, action = 'failed'): { bounceType: BounceType | null; bounceKind: BounceKind | null } {
  const a = action.toLowerCase()
  if (NOT_BOUNCE_ACTIONS.has(a)) return { bounceType: null, bounceKind: null }
  const m = status ? STATUS_RE.exec(status) : null
  if (!m) return { bounceType: a === 'delayed' ? 'soft' : 'hard', bounceKind: 'other' }
  const [cls, subject, detail] = [m[1], Number(m[2]), Number(m[3])]
  if (cls === '2') return { bounceType: a === 'failed' ? 'hard' : a === 'delayed' ? 'soft' : null, bounceKind: a === 'failed' || a === 'delayed' ? 'other' : null }
  const kind: BounceKind =
    subject === 1 ? 'unknown-user'
    : subject === 2 ? (detail === 2 ? 'mailbox-full' : 'mailbox')
    : subject === 3 ? 'system'
    : subject === 4 ? 'network'
    : subject === 5 ? 'protocol'
    : subject === 6 ? 'content'
    : subject === 7 ? 'policy'
    : 'other'
  const soft = a === 'delayed' || cls === '4' || kind === 'mailbox-full'
  return { bounceType: soft ? 'soft' : 'hard', bounceKind: kind }
}

const TEXT_KINDS: Array<[RegExp, BounceKind]> = [
  [/mailbox (is )?full|over ?quota|quota exceeded|insufficient (system )?storage/i, 'mailbox-full'],
  [/user unknown|unknown (user|recipient)|no such (user|mailbox|recipient|address)|does ?n[o']t exist|doesn't have an? [\w.-]+ account|account (is )?(disabled|not found|closed)|recipient not found|invalid (recipient|mailbox)|address rejected|not a valid (mailbox|recipient)/i, 'unknown-user'],
  [/block ?list|blacklist|spamhaus|reputation|\bpolicy\b|\bspam\b|blocked|dmarc|\bspf\b|\bdkim\b|not authori[sz]ed|access denied/i, 'policy'],
]

/**
 * Classification of one recipient. An undefined subject (x.0.0, or only a basic SMTP code) is refined
 * from the diagnostic text: "user unknown" and the like -> unknown-user, "mailbox full" -> mailbox-full
 * (soft), block lists and policy wording -> policy.
 */
function classify(status: string | null, action: string, diagnostic: string | null): { bounceType: BounceType | null; bounceKind: BounceKind | null } {
  const base = classifyStatus(status, action)
  const undefinedSubject = !status || /^\d\.0\.\d+$/.test(status)
  if (!base.bounceType || !undefinedSubject || !diagnostic) return base
  for (const [re, kind] of TEXT_KINDS) {
    if (re.test(diagnostic)) return { bounceType: kind === 'mailbox-full' ? 'soft' : base.bounceType, bounceKind: kind }
  }
  return base
}

/** "5.1.1", or from a diagnostic text "550 5.1.1 ..." / "550 ..." -> "5.1.1" / "5.0.0". */
function statusOf(status: string | null, diagnostic: string | null): string | null {
  const s = status ? STATUS_RE.exec(status) : null
  if (s) return `${s[1]}.${s[2]}.${s[3]}`
  if (!diagnostic) return null
  const d = STATUS_RE.exec(diagnostic)
  if (d) return `${d[1]}.${d[2]}.${d[3]}`
  const basic = /\b([45])\d\d\b/.exec(diagnostic)
  return basic ? `${basic[1]}.0.0` : null
}

/** `rfc822; user@example.com` -> user@example.com. */
function typedAddress(value: string | null): string | null {
  if (!value) return null
  const semi = value.indexOf(';')
  const addr = (semi >= 0 ? value.slice(semi + 1) : value).trim().replace(/^<|>$/g, '').trim()
  return /^[^\s@]+@[^\s@]+$/.test(addr) ? addr.toLowerCase() : null
}

/** `smtp; 550 5.1.1 ...` -> `550 5.1.1 ...` (the type prefix dropped, whitespace collapsed). */
function diagnosticText(value: string | null): string | null {
  if (!value) return null
  const m = /^\s*[A-Za-z0-9-]+\s*;\s*([\s\S]*)$/.exec(value)
  return (m ? m[1] : value).replace(/\s+/g, ' ').trim() || null
}

function recipientFrom(group: Header[]): DsnRecipient | null {
  const finalRecipient = typedAddress(header(group, 'final-recipient'))
  const originalRecipient = typedAddress(header(group, 'original-recipient'))
  const address = originalRecipient ?? finalRecipient
  if (!address) return null
  const action = (header(group, 'action') ?? 'failed').trim().toLowerCase().split(/[\s(;]/)[0] || 'failed'
  const diagnosticCode = diagnosticText(header(group, 'diagnostic-code'))
  const status = statusOf(header(group, 'status'), diagnosticCode)
  const remote = header(group, 'remote-mta')
  return {
    finalRecipient, originalRecipient, address, action, status, diagnosticCode,
    remoteMta: remote ? diagnosticText(remote) : null,
    willRetryUntil: header(group, 'will-retry-until')?.replace(/\s+/g, ' ').trim() || null,
    ...classify(status, action, diagnosticCode),
  }
}

function baseReport(root: MimePart, heuristic: boolean): DsnReport {
  const original = originalMessage(root)
  const to = addressedTo(root)
  const fallbackId = messageId(header(root.headers, 'in-reply-to')) ?? messageId((header(root.headers, 'references') ?? '').trim().split(/\s+/).pop() ?? null)
  const subject = header(root.headers, 'subject')
  return {
    kind: 'dsn',
    heuristic,
    reportingMta: null,
    originalEnvelopeId: null,
    recipients: [],
    addressedTo: to,
    verpAddresses: [...new Set([...to, ...(original?.returnPath ? [original.returnPath] : [])])],
    originalMessageId: original?.messageId ?? fallbackId,
    original,
    subject: subject === null ? null : decodeWords(subject),
    from: addresses(header(root.headers, 'from'))[0] ?? null,
  }
}

const BOUNCE_SENDER = /^(mailer-daemon|postmaster|mail-daemon|mailerdaemon)@/i
const BOUNCE_SUBJECT = /(failure notice|undeliver|delivery status notification|returned mail|delivery (has )?failed|mail delivery failed|could not be delivered|not be delivered|delivery failure|non-?delivery)/i

const MARKER_PHRASES = ['below this line', 'copy of the message', 'original message', 'returned message', 'undelivered message']

/**
 * The start of the marker line after which plain-text bounces append the returned message: a line that
 * starts with `--` and names it ("--- Below this line is a copy of the message."), or -1.
 */
function markerLine(text: string): number {
  for (let start = 0; start < text.length;) {
    const nl = text.indexOf('\n', start)
    const end = nl < 0 ? text.length : nl
    if (text.startsWith('--', start)) {
      const line = text.slice(start, end).toLowerCase()
      if (MARKER_PHRASES.some((p) => line.includes(p))) return start
    }
    start = end + 1
  }
  return -1
}

/** A recipient line of a plain-text bounce: `<user@host>` or `<user@host>:`, spaces and tabs around. */
interface AddressLine { address: string; start: number; end: number }

function addressLines(text: string): AddressLine[] {
  const out: AddressLine[] = []
  for (let start = 0; start < text.length;) {
    const nl = text.indexOf('\n', start)
    const end = nl < 0 ? text.length : nl
    const line = text.slice(start, end > start && text[end - 1] === '\r' ? end - 1 : end)
    const address = addressLine(line)
    if (address) out.push({ address, start, end })
    start = end + 1
  }
  return out
}

/** The address of a line `<user@host>`, `<user@host>:` (spaces and tabs around), else null. */
function addressLine(line: string): string | null {
  const isBlank = (c: string | undefined) => c === ' ' || c === '\t'
  let i = 0
  while (isBlank(line[i])) i++
  if (line[i] !== '<') return null
  const close = line.indexOf('>', i + 1)
  if (close < 0) return null
  const inner = line.slice(i + 1, close)
  const at = inner.indexOf('@', 1)
  if (at < 1 || at > inner.length - 2 || !/^[^<>\s]+$/.test(inner)) return null
  let k = close + 1
  while (isBlank(line[k])) k++
  if (line[k] === ':') k++
  while (isBlank(line[k])) k++
  return k === line.length ? inner : null
}

/** `text` up to its first blank line (a line of nothing but whitespace). */
function firstParagraph(text: string): string {
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', nl + 1)) {
    let k = nl + 1
    while (k < text.length && text[k] !== '\n' && /\s/.test(text[k])) k++
    if (text[k] === '\n') return text.slice(0, nl)
    nl = k - 1
  }
  return text
}

/**
 * Reads a plain-text bounce: `<user@host>:` blocks (qmail, Yahoo legacy) or "to the following
 * address(es)" lists, each with the first enhanced or basic SMTP code that follows. Only the first
 * READABLE_PART_BYTES of each text part are read (readableText), and every scan is a single pass.
 */
function heuristic(root: MimePart): DsnResult {
  const full = readableText(root)
  // Plain-text bounces append the returned message after a marker line; only read recipients above it.
  const marker = markerLine(full)
  const text = marker >= 0 ? full.slice(0, marker) : full
  const copy = marker >= 0 ? full.slice(marker) : ''
  const recipients: DsnRecipient[] = []
  const blocks = addressLines(text)
  const seen = new Set<string>()
  for (let i = 0; i < blocks.length; i++) {
    const address = blocks[i].address.toLowerCase()
    if (seen.has(address)) continue
    seen.add(address)
    const end = i + 1 < blocks.length ? blocks[i + 1].start : text.length
    const body = firstParagraph(text.slice(blocks[i].end, end)).replace(/\s+/g, ' ').trim()
    const status = statusOf(null, body)
    recipients.push({
      finalRecipient: address, originalRecipient: null, address, action: 'failed', status,
      diagnosticCode: body || null, remoteMta: null, willRetryUntil: null, ...classify(status, 'failed', body),
    })
  }
  if (recipients.length === 0) return { kind: 'unparseable', reason: 'looks like a bounce (sender and subject) but names no recipient' }
  const report = { ...baseReport(root, true), recipients }
  // The inline copy of the original: its header block is the first paragraph after the marker line.
  const afterMarker = copy.indexOf('\n')
  const copyHead = afterMarker < 0 ? '' : firstParagraph(copy.slice(afterMarker + 1).replace(/^\s*\n/, ''))
  const copyHeaders = parseHeaderBlock(copyHead)
  const copyId = messageId(header(copyHeaders, 'message-id'))
  const copyReturnPath = addresses(header(copyHeaders, 'return-path'))[0]
  if (copyId) report.originalMessageId = copyId
  if (copyReturnPath && !report.verpAddresses.includes(copyReturnPath)) report.verpAddresses.push(copyReturnPath)
  return report
}

/** Parses a raw inbound message as a delivery status notification. Never throws. */
export function parseDsn(raw: Buffer | Uint8Array): DsnResult {
  const root = readMime(raw)
  return 'kind' in root ? root : dsnOf(root)
}

/** Reads a parsed message as a delivery status notification. Never throws. */
export function dsnOf(root: MimePart): DsnResult {
  try {
    const statusPart = walk(root).find((p) => p.contentType === 'message/delivery-status' || p.contentType === 'message/global-delivery-status')
    const isReport = root.contentType === 'multipart/report' && (root.params['report-type'] ?? '').toLowerCase().includes('delivery-status')
    if (!statusPart) {
      if (isReport) return { kind: 'unparseable', reason: 'multipart/report of type delivery-status without a message/delivery-status part' }
      const from = addresses(header(root.headers, 'from'))[0] ?? ''
      const subject = decodeWords(header(root.headers, 'subject') ?? '')
      if (BOUNCE_SENDER.test(from) && BOUNCE_SUBJECT.test(subject)) return heuristic(root)
      return { kind: 'not-dsn' }
    }
    const groups = fieldGroups(partText(statusPart, REPORT_PART_BYTES))
    if (groups.length === 0) return { kind: 'unparseable', reason: 'empty delivery-status part' }
    const perMessage = groups[0].some((h) => h.name === 'final-recipient' || h.name === 'action') ? [] : groups[0]
    const recipients = groups.map(recipientFrom).filter((r): r is DsnRecipient => r !== null)
    if (recipients.length === 0) return { kind: 'unparseable', reason: 'the delivery-status part names no recipient (no Final-Recipient or Original-Recipient address)' }
    const envId = header(perMessage, 'original-envelope-id')
    return {
      ...baseReport(root, false),
      reportingMta: diagnosticText(header(perMessage, 'reporting-mta')),
      originalEnvelopeId: envId ? envId.trim() : null,
      recipients,
    }
  } catch (e) {
    return unreadable(e)
  }
}
