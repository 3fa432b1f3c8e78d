/**
 * The verb behind the SMTP relay (src/smtp/relay.ts): a message submitted over SMTP becomes one queued
 * email per recipient, in one transaction, through the services (suppressions, contacts, the emails
 * queue). The message is parsed with mailparser; its headers are carried over except the structural and
 * trace ones, and those only a client writes are refused.
 */
import type { StoredAttachment } from '../../db/schema/sending'
import type { Ctx } from '../../deps'
import { AppError } from '../../errors'
import { refusedHeader } from '../../mail/header-policy'
import { STRUCTURAL_HEADERS } from '../../mail/mime'
import { notifyQueued } from '../../mail/outbound'
import { isEmail, normalizeEmail } from '../../mail/address'
import { cutText, unstorableField } from '../../storable'
import { againIfVanished, upsertContact } from '../contacts/service'
import { assertSenderAllowed } from '../domains/service'
import { notifyEvents, type EventRow } from '../events/stream'
import { suppressedAmong } from '../suppressions/service'
import { MAX_HEADER_VALUE } from './model'
import { PRIORITY, queueEmails, type NewEmail } from './service'

interface ParsedAddress { address?: string; name?: string }
interface ParsedMail {
  subject?: string
  from?: { value: ParsedAddress[] }
  to?: { value: ParsedAddress[] } | Array<{ value: ParsedAddress[] }>
  cc?: { value: ParsedAddress[] } | Array<{ value: ParsedAddress[] }>
  replyTo?: { value: ParsedAddress[] }
  html?: string | false
  text?: string
  headerLines?: Array<{ key: string; line: string }>
  attachments: Array<{ filename?: string; content: Buffer; contentType?: string; contentId?: string; cid?: string; contentDisposition?: string; related?: boolean; size?: number }>
}
// mailparser ships no type declarations: the shape used here is declared above.
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer, opts: { keepCidLinks: boolean; skipTextToHtml: boolean; skipImageLinks: boolean; maxHtmlLengthToParse?: number }) => Promise<ParsedMail> }

/** Headers of the submitted message that are not carried over: structural ones and transport traces. */
const DROPPED_HEADERS: ReadonlySet<string> = new Set([
  ...STRUCTURAL_HEADERS, 'received', 'return-path', 'dkim-signature', 'x-google-dkim-signature', 'domainkey-signature',
  'arc-seal', 'arc-message-signature', 'arc-authentication-results', 'authentication-results', 'received-spf',
  'feedback-id', 'delivered-to', 'x-original-to', 'envelope-to', 'bcc', 'cc', 'x-mailctl-relay',
])

/** Headers only a client writes (never a relay on the way): refused, not dropped. */
const CLIENT_WRITTEN: ReadonlySet<string> = new Set(['feedback-id', 'authentication-results', 'arc-authentication-results', 'received-spf', 'x-mailctl-relay'])

/**
 * The non-structural headers of the submitted message, unfolded; invalid ones are dropped. A trust or
 * routing header the client wrote (Feedback-ID, Authentication-Results, Resent-*, ...: src/mail/header-policy.ts)
 * refuses the message with a 422 naming it; transport traces added on the way (Received, Return-Path,
 * signatures) are dropped.
 */
export function carriedHeaders(lines: Array<{ key: string; line: string }> | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const { key, line } of lines ?? []) {
    const name = line.slice(0, line.indexOf(':')).trim()
    const lower = key.toLowerCase()
    // Refused: what only a client writes, and any other trust or routing header that is not a trace.
    const why = name && (CLIENT_WRITTEN.has(lower) || !DROPPED_HEADERS.has(lower)) ? refusedHeader(name, 'TRANSACTIONAL') : null
    if (why) throw new AppError('VALIDATION_ERROR', `Header ${name} refused: ${why}`, { errors: [{ field: `headers.${name}`, message: why, code: 'reserved_header', received: name }] })
    if (!name || DROPPED_HEADERS.has(lower) || lower.startsWith('content-') || !/^[!-9;-~]{1,76}$/.test(name)) continue
    const value = line.slice(line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim()
    if (!value || value.length > MAX_HEADER_VALUE || /[^\t\x20-\x7e\u00a0-\uffff]/.test(value)) continue
    if (!(name in out)) out[name] = value
  }
  return out
}

function addressList(v: ParsedMail['to']): ParsedAddress[] {
  if (!v) return []
  return (Array.isArray(v) ? v : [v]).flatMap((x) => x.value ?? [])
}

function attachmentsOf(parsed: ParsedMail): StoredAttachment[] {
  return parsed.attachments.map((a, i) => {
    const cid = a.cid ?? (a.contentId ? a.contentId.replace(/^<|>$/g, '') : undefined)
    const inline = Boolean(cid) && (a.related === true || a.contentDisposition === 'inline')
    return {
      filename: a.filename ?? `attachment-${i + 1}`,
      content: a.content.toString('base64'),
      contentType: a.contentType ?? 'application/octet-stream',
      disposition: inline ? 'inline' : 'attachment',
      size: a.content.length,
      ...(cid && inline ? { contentId: cid } : {}),
    } satisfies StoredAttachment
  })
}

export interface RelayedMessage {
  mailFrom: string
  rcptTo: string[]
  raw: Buffer
  sessionId?: string | null
}

export interface RelayResult {
  emails: Array<{ id: string; to: string; contactId: string }>
  suppressed: Array<{ to: string; reason: string }>
}

/**
 * Queues a message submitted over SMTP for each recipient, in one transaction (the verb behind the relay;
 * usable by anything that holds a raw message for a project). Throws AppError: 403 for a sender domain
 * not verified for the project, 422 for an unreadable message, 409 when a recipient's contact was deleted
 * by another writer on each of three runs (the SMTP relay answers that one 451: send again).
 */
export async function relayMessage(ctx: Ctx, m: RelayedMessage): Promise<RelayResult> {
  let parsed: ParsedMail
  try {
    parsed = await simpleParser(m.raw, { keepCidLinks: true, skipTextToHtml: true, skipImageLinks: true })
  } catch (err) {
    throw new AppError('VALIDATION_ERROR', `The message could not be parsed: ${err instanceof Error ? err.message : String(err)}`)
  }
  const headerFrom = parsed.from?.value?.find((a) => a.address)
  const fromEmail = normalizeEmail(headerFrom?.address ?? m.mailFrom)
  if (!isEmail(fromEmail)) throw new AppError('VALIDATION_ERROR', 'The message has no usable From address')
  // The envelope sender was checked at MAIL FROM; the From header decides the DKIM domain, so it is checked too.
  const sender = await assertSenderAllowed(ctx, fromEmail)
  const named = new Map(addressList(parsed.to).concat(addressList(parsed.cc)).filter((a): a is ParsedAddress & { address: string } => !!a.address).map((a) => [normalizeEmail(a.address), a.name || null]))
  const recipients = [...new Set(m.rcptTo.map(normalizeEmail))]
  const replyTo = parsed.replyTo?.value?.find((a) => a.address)?.address ?? null
  const headers = carriedHeaders(parsed.headerLines)
  const attachments = attachmentsOf(parsed)
  const html = typeof parsed.html === 'string' && parsed.html ? parsed.html : null
  const text = parsed.text ?? (html ? null : '')
  const subject = cutText((parsed.subject ?? '').replace(/[\r\n]+/g, ' '), 998)
  // What the message's encodings can carry (a NUL, or a lone surrogate from UTF-16) but no store should:
  // refused (550 5.6.0, permanent) before any query, on both stores, instead of a 451 from PostgreSQL
  // that the client would retry forever.
  const stored = {
    subject, html, text, replyTo, headers, fromName: headerFrom?.name, toNames: [...named.values()],
    attachments: attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, contentId: a.contentId })),
  }
  const unstorable = unstorableField(stored)
  if (unstorable !== null) {
    const message = `The message's ${unstorable} contains a NUL character or a lone UTF-16 surrogate, which cannot be stored`
    throw new AppError('VALIDATION_ERROR', message, { errors: [{ field: unstorable, message, code: 'invalid_text' }] })
  }

  // A recipient's contact deleted by another writer mid-write (PostgreSQL): the transaction runs again.
  const out = await againIfVanished(ctx.store, () => ctx.store.tx(async (db) => {
    const blocked = await suppressedAmong(ctx, db, recipients)
    const items: NewEmail[] = []
    const events: EventRow[] = []
    const result: RelayResult = { emails: [], suppressed: [] }
    for (const to of recipients) {
      const s = blocked.get(to)
      if (s) { result.suppressed.push({ to, reason: s.reason }); continue }
      const up = await upsertContact(ctx, { email: to }, { defaultSubscribed: false, db })
      events.push(...up.events)
      const id = Bun.randomUUIDv7()
      items.push({
        id, contactId: up.contact.id, to: { email: to, name: named.get(to) ?? null }, from: { email: fromEmail, name: headerFrom?.name || null },
        replyTo, subject, html, text, headers, attachments, type: 'TRANSACTIONAL', sourceType: 'relay', sourceId: m.sessionId ?? null,
        domainId: sender.domainId, listUnsubscribe: false, priority: PRIORITY.transactional,
      })
      result.emails.push({ id, to, contactId: up.contact.id })
    }
    await queueEmails(ctx, db, items)
    return { result, events }
  }))
  if (out.result.emails.length) notifyQueued(ctx.deps)
  await notifyEvents(ctx, out.events)
  return out.result
}

