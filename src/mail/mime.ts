/**
 * MIME for outbound mail: nodemailer's MailComposer builds the message, src/mail/dkim.ts signs it.
 * `buildMessage` is a pure function of a plain-data `OutboundMessage`, so it runs unchanged inline or in
 * the signer worker threads (src/mail/signer-worker.ts).
 */
import MailComposer from 'nodemailer/lib/mail-composer'
import { encode, wrap } from 'nodemailer/lib/qp'
import { dkimSign, type DkimKey } from './dkim'

export interface MessageAddress { name?: string | null; address: string }

export interface MessageAttachment {
  filename: string
  /** Base64. */
  content: string
  contentType: string
  contentId?: string
  disposition: 'attachment' | 'inline'
}

/** Everything needed to build one message; plain data (structured-clone safe). */
export interface OutboundMessage {
  /** With angle brackets. */
  messageId: string
  /** Epoch ms for the Date header (the time the email was accepted, so retries build the same Date). */
  date: number
  from: MessageAddress
  to: MessageAddress
  replyTo?: string | null
  subject: string
  html?: string | null
  text?: string | null
  /** Custom headers, already validated (no CR/LF, no structural names). */
  headers?: Record<string, string>
  attachments?: MessageAttachment[]
  /** RFC 8058 one-click unsubscribe: List-Unsubscribe and List-Unsubscribe-Post (src/mail/links.ts). */
  listUnsubscribe?: Record<string, string> | null
  /** Feedback-ID (RFC-less, used by large mailbox providers for complaint loops). */
  feedbackId?: string | null
}

/** Header names a caller may not set: they are built from the request or by the server. */
export const STRUCTURAL_HEADERS: ReadonlySet<string> = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'mime-version', 'content-type',
  'content-transfer-encoding', 'content-disposition', 'dkim-signature', 'return-path', 'received', 'reply-to',
])

/** A text part as a ready MIME node: headers and the quoted-printable body (76-character lines). */
function qpPart(type: string, body: string): string {
  return `Content-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${wrap(encode(body), 76)}`
}

function composerOptions(m: OutboundMessage) {
  const headers: Array<{ key: string; value: string }> = []
  for (const [key, value] of Object.entries(m.headers ?? {})) headers.push({ key, value })
  for (const [key, value] of Object.entries(m.listUnsubscribe ?? {})) headers.push({ key, value })
  if (m.feedbackId) headers.push({ key: 'Feedback-ID', value: m.feedbackId })
  const multipart = Boolean(m.html && m.text) || Boolean(m.attachments?.length)
  return {
    from: m.from.name ? { name: m.from.name, address: m.from.address } : m.from.address,
    to: m.to.name ? { name: m.to.name, address: m.to.address } : m.to.address,
    ...(m.replyTo ? { replyTo: m.replyTo } : {}),
    subject: m.subject,
    messageId: m.messageId,
    date: new Date(m.date),
    // In a multipart message the bodies go in pre-encoded (quoted-printable, nodemailer's encoder), so the
    // composer only assembles the parts: half the cost of letting it stream-encode each body. A single-part
    // message must not: the composer would make the raw part the whole message, without its headers.
    ...(m.html ? { html: multipart ? { raw: qpPart('text/html', m.html) } : m.html } : {}),
    ...(m.text ? { text: multipart ? { raw: qpPart('text/plain', m.text) } : m.text } : {}),
    headers: headers.map((h) => ({ key: h.key, value: h.value })),
    attachments: (m.attachments ?? []).map((a) => ({
      filename: a.filename,
      content: a.content,
      encoding: 'base64',
      contentType: a.contentType,
      contentDisposition: a.disposition,
      ...(a.contentId ? { cid: a.contentId } : {}),
    })),
    disableFileAccess: true,
    disableUrlAccess: true,
    xMailer: false as const,
  }
}

/** Builds the MIME message (CRLF line ends). */
export function composeMessage(m: OutboundMessage): Promise<Buffer> {
  const node = new MailComposer(composerOptions(m)).compile()
  // The envelope is ours to give (VERP); the composer must not add a Return-Path or keep Bcc.
  node.keepBcc = false
  return node.build()
}

/** Builds and, with a key, DKIM-signs the message. */
export async function buildMessage(m: OutboundMessage, key: DkimKey | null): Promise<Buffer> {
  const raw = await composeMessage(m)
  return key ? dkimSign(raw, key, { time: Math.floor(Date.now() / 1000) }) : raw
}

/** The address part of a domain: `user@Example.COM` -> `example.com`. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@')
  return at < 0 ? '' : address.slice(at + 1).trim().toLowerCase()
}
