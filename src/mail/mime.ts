/**
 * MIME for outbound mail: HTML and text without attachments is built directly (`composeAlternative`, the
 * same bytes nodemailer would give), anything else by nodemailer's MailComposer; src/mail/dkim.ts signs it.
 * `buildMessage` is a pure function of a plain-data `OutboundMessage`, so it runs unchanged inline or in
 * the signer worker threads (src/mail/signer-worker.ts).
 */
import { randomBytes } from 'node:crypto'
import MailComposer from 'nodemailer/lib/mail-composer'
import { foldLines, quoteString } from 'nodemailer/lib/mime-funcs'
import MimeNode from 'nodemailer/lib/mime-node'
import { encode as base64Encode, wrap as base64Wrap } from 'nodemailer/lib/base64'
import { encode, wrap } from 'nodemailer/lib/qp'
import type { CampaignContent } from './render/campaign'
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
  /**
   * Campaign mail: the HTML and text are made from this where the message is built (a signer thread,
   * src/mail/signer.ts `buildOutbound`), not stored nor rendered on the main thread.
   */
  campaign?: CampaignContent | null
  /**
   * `html` as quoted-printable, when it was made with it (a planned campaign message,
   * src/mail/render/plan.ts): the HTML part's body as it is. It must decode to `html`.
   */
  htmlEncoded?: string | null
  /** Custom headers, already validated (no CR/LF, no structural names). */
  headers?: Record<string, string>
  attachments?: MessageAttachment[]
  /** RFC 8058 one-click unsubscribe: List-Unsubscribe and List-Unsubscribe-Post (src/mail/links.ts). */
  listUnsubscribe?: Record<string, string> | null
  /** Feedback-ID (RFC-less, used by large mailbox providers for complaint loops). */
  feedbackId?: string | null
  /** A report with attachments (RFC 6522): `multipart/report; report-type=<this>` instead of multipart/mixed (TLS reports: `tlsrpt`). */
  reportType?: 'tlsrpt' | null
}

/** Header names a caller may not set: they are built from the request or by the server. */
export const STRUCTURAL_HEADERS: ReadonlySet<string> = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'mime-version', 'content-type',
  'content-transfer-encoding', 'content-disposition', 'dkim-signature', 'return-path', 'received', 'reply-to',
])

const HEX = new TextEncoder().encode('0123456789ABCDEF')

/**
 * Quoted-printable (RFC 2045 6.7) of a text's UTF-8 bytes, lines of at most 76 characters: printable
 * ASCII other than "=" as is, a space or tab as is unless it ends a line, anything else =XX. Line breaks
 * (CRLF or a bare LF) are CRLF; a bare CR is data (=0D). A soft break never splits an =XX nor a UTF-8
 * sequence. (nodemailer's own encoder and wrapper cost several times more for the same rules.)
 *
 * Printable ASCII goes line by line with native string operations. A text with other characters follows
 * the byte rules (a hard line of exactly 76 characters gets a soft break there, unlike in pure ASCII);
 * when most of its lines are ASCII (HTML with a few accents or a "·") those lines still go through the
 * string operations with the byte rules' wrapping and only the others byte by byte, since the byte pass
 * costs several times more per character. The output is the same whichever way a line goes.
 */
export function quotedPrintable(text: string): string {
  // Each character past U+007F adds at least one byte to the UTF-8 length: a native count, far cheaper
  // than a regex scanning for non-ASCII in JavaScriptCore.
  const extra = Buffer.byteLength(text, 'utf8') - text.length
  if (extra === 0 && !QP_CONTROLS.test(text)) return quotedPrintableAscii(text)
  // Mostly non-ASCII (Russian, Chinese): one pass over the whole text beats a pass and a buffer per line.
  if (extra * 8 > text.length) return quotedPrintableBytes(text)
  // "=" escaped over the whole text at once (one native pass; per line it costs several times more); the
  // lines that go byte by byte are taken from the text as given (the same lines: "=" is no line break).
  const lines = splitLines(escapeEquals(text))
  const bytes = lines.map((line) => !printable(line))
  if (bytes.filter(Boolean).length * 2 > lines.length) return quotedPrintableBytes(text)
  const given = splitLines(text)
  for (let i = 0; i < lines.length; i++) lines[i] = bytes[i] ? quotedPrintableBytes(given[i]) : asciiLine(lines[i], 75)
  return lines.join('\r\n')
}

/** Controls other than tab, CR and LF: quoted-printable escapes them, which the line-by-line path does not. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: quoted-printable must encode these control bytes, so the test names them
const QP_CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/
/** Whether the line-by-line path takes a line: printable ASCII and tabs (non-ASCII found as above). */
const printable = (text: string) => Buffer.byteLength(text, 'utf8') === text.length && !QP_CONTROLS.test(text)
/** "=XX" of every ASCII code. */
const QP_HEX = Array.from({ length: 128 }, (_, c) => `=${c.toString(16).toUpperCase().padStart(2, '0')}`)

/** The hard lines of a text (CRLF or a bare LF ends one; a bare CR stays in its line). */
const splitLines = (text: string) => text.includes('\r') ? text.split(/\r?\n/) : text.split('\n')

/** Every "=" as "=3D" (split and join: cheaper than replaceAll in JavaScriptCore). */
const escapeEquals = (text: string) => text.includes('=') ? text.split('=').join('=3D') : text

/** quotedPrintable of printable ASCII (tabs and line breaks allowed), line by line. */
function quotedPrintableAscii(text: string): string {
  const lines = splitLines(escapeEquals(text))
  for (let i = 0; i < lines.length; i++) lines[i] = asciiLine(lines[i], 76)
  return lines.join('\r\n')
}

/**
 * One hard line of printable ASCII, "=" already escaped (tabs and bare CRs allowed): CR escaped, whitespace
 * ending the line escaped, soft breaks into pieces of at most 75 characters, never cut inside an =XX.
 * `longest` is the longest line left unbroken: 76 in an all-ASCII text; 75 where the text follows the byte
 * pass's rules, which break before any character that would make a line longer than 75.
 */
function asciiLine(line: string, longest: number): string {
  if (line.includes('\r')) line = line.replaceAll('\r', '=0D')
  const last = line.charCodeAt(line.length - 1)
  if (last === 0x20 || last === 0x09) line = line.slice(0, -1) + QP_HEX[last]
  if (line.length <= longest) return line
  const pieces: string[] = []
  let pos = 0
  while (line.length - pos > longest) {
    let cut = pos + 75
    if (line.charCodeAt(cut - 1) === 0x3d) cut -= 1
    else if (line.charCodeAt(cut - 2) === 0x3d) cut -= 2
    pieces.push(line.slice(pos, cut))
    pos = cut
  }
  pieces.push(line.slice(pos))
  return pieces.join('=\r\n')
}

/** quotedPrintable over the text's UTF-8 bytes (any text). */
function quotedPrintableBytes(text: string): string {
  const src = Buffer.from(text, 'utf8')
  const len = src.length
  // Three characters per byte at most, plus a soft break (3) per 73 characters.
  const out = new Uint8Array(Math.ceil(len * 3 * (1 + 3 / 72)) + 8)
  let o = 0
  let col = 0
  for (let i = 0; i < len; i++) {
    const c = src[i]
    if (c === 0x0a || (c === 0x0d && src[i + 1] === 0x0a)) {
      if (c === 0x0d) i++
      out[o++] = 0x0d
      out[o++] = 0x0a
      col = 0
      continue
    }
    let literal = (c >= 0x21 && c <= 0x7e && c !== 0x3d)
    if (c === 0x20 || c === 0x09) {
      const next = src[i + 1]
      literal = !(i + 1 === len || next === 0x0a || (next === 0x0d && src[i + 2] === 0x0a))
    }
    // Room needed on this line: the token, or a whole UTF-8 sequence starting here, plus the "=" of a soft break.
    const need = literal ? 1 : c >= 0xf0 ? 12 : c >= 0xe0 ? 9 : c >= 0xc0 ? 6 : 3
    if (col + need > 75) {
      out[o++] = 0x3d
      out[o++] = 0x0d
      out[o++] = 0x0a
      col = 0
    }
    if (literal) {
      out[o++] = c
      col++
    } else {
      out[o++] = 0x3d
      out[o++] = HEX[c >> 4]
      out[o++] = HEX[c & 15]
      col += 3
    }
  }
  return Buffer.from(out.buffer, 0, o).toString('latin1')
}

/** A text part as a ready MIME node: headers and the quoted-printable body (76-character lines). */
function qpPart(type: string, body: string, encoded?: string | null): string {
  return `Content-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${encoded ?? quotedPrintable(body)}`
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

/** MimeNode with the private fields that serialising it reads (its typings name the public ones). */
type NodeInternals = MimeNode & { _raw?: unknown; _transforms: unknown[]; _processFuncs: unknown[] }

/** Content the synchronous serialiser can take: a string or a Buffer (never a stream, path or URL). */
const plain = (v: unknown): v is string | Buffer => typeof v === 'string' || Buffer.isBuffer(v)

/**
 * Whether `serialize` produces exactly what the node's own stream would: every node holds plain
 * content or raw text, and nothing transforms the output. Anything else goes through nodemailer's stream.
 */
function serializable(node: MimeNode, root: boolean): boolean {
  const n = node as NodeInternals
  if (root && (n._transforms.length || n._processFuncs.length || n.newline)) return false
  if (n._raw !== undefined && n._raw !== null && n._raw !== false && !plain(n._raw)) return false
  if (n.content !== undefined && n.content !== null && n.content !== '' && !plain(n.content)) return false
  return n.childNodes.every((c) => serializable(c, false))
}

/**
 * MimeNode#stream without streams: the same header block (the node's own `buildHeaders`), the same
 * encoders (nodemailer's base64 and quoted-printable; their stream forms are documented to equal
 * `wrap(encode(input))`) and the same boundaries, appended to `out`. Only for `serializable` nodes.
 */
function serialize(node: MimeNode, out: Array<string | Buffer>): void {
  const n = node as NodeInternals
  if (n._raw) {
    out.push(n._raw as string | Buffer)
  } else {
    const transferEncoding = node.getTransferEncoding()
    out.push(`${node.buildHeaders()}\r\n\r\n`)
    const content = n.content as string | Buffer | undefined
    if (content) {
      if (transferEncoding === 'base64') out.push(base64Wrap(base64Encode(content), 76))
      else if (transferEncoding === 'quoted-printable') out.push(wrap(encode(content), 76))
      else out.push(content)
    }
  }
  if (n.multipart) {
    n.childNodes.forEach((child, i) => {
      out.push(`${i ? '\r\n' : ''}--${n.boundary}\r\n`)
      serialize(child, out)
    })
    out.push(`\r\n--${n.boundary}--\r\n`)
  }
}

/** The serialised message as one Buffer ending with a line break (as nodemailer's LastNewline ensures). */
function serializeMessage(root: MimeNode): Buffer {
  const out: Array<string | Buffer> = []
  serialize(root, out)
  // Strings (headers, encoded parts) are joined and converted once; buffers (8bit content) go as they are.
  const parts: Buffer[] = []
  let text = ''
  for (const p of out) {
    if (typeof p === 'string') { text += p; continue }
    if (text) { parts.push(Buffer.from(text, 'utf8')); text = '' }
    parts.push(p)
  }
  if (text) parts.push(Buffer.from(text, 'utf8'))
  const buf = parts.length === 1 ? parts[0] : Buffer.concat(parts)
  const last = buf.length ? buf[buf.length - 1] : -1
  if (last === 0x0a) return buf
  return Buffer.concat([buf, Buffer.from(last === 0x0d ? '\n' : '\r\n')])
}

/** A local part that is a dot-atom and a lower-case ASCII domain that is not an A-label: written as given. */
const PLAIN_ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/
/** Printable ASCII with no whitespace at either end: nothing to encode, trim or drop. */
const PLAIN_TEXT = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/
/** What nodemailer would turn into an encoded word in a header's text even in ASCII: a quote, or "=?". */
const ENCODED_IN_TEXT = /"|=\?/
/** Names the composer writes as they are; other printable names it quotes. */
const WORD_NAME = /^[\w ]*$/
/**
 * Header names nodemailer gives a meaning of its own (addresses, message ids, dates, MIME structure):
 * a custom header with one of these names leaves the message to nodemailer.
 */
const COMPOSER_HEADERS = new Set(['From', 'Sender', 'To', 'Cc', 'Bcc', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'In-Reply-To', 'References',
  'Content-ID', 'Content-Type', 'Content-Disposition', 'Content-Transfer-Encoding', 'MIME-Version', 'OTP-Token', 'X-Mailer'])

/** nodemailer's spelling of a header name (`x-entity-ref-id` -> `X-Entity-Ref-Id`), computed once per name. */
const headerNames = new Map<string, string>()
function headerName(key: string): string {
  let name = headerNames.get(key)
  if (name === undefined) {
    name = (MimeNode.prototype as unknown as { _normalizeHeaderKey(k: string): string })._normalizeHeaderKey.call(null, key)
    if (headerNames.size < 1000) headerNames.set(key, name)
  }
  return name
}

/** One header line as nodemailer folds it (at whitespace, lines of 76 characters where it can). */
const headerLine = (name: string, value: string) => {
  const line = `${name}: ${value}`
  return line.length < 76 ? line : foldLines(line, 76)
}

/** An address as nodemailer writes it, or null when writing it needs more than quoting the name. */
function plainAddress(a: MessageAddress): string | null {
  if (!PLAIN_ADDRESS.test(a.address)) return null
  if (!a.name) return a.address
  if (!PLAIN_TEXT.test(a.name) || a.name.includes('  ')) return null
  return `${WORD_NAME.test(a.name) ? a.name : quoteString(a.name)} <${a.address}>`
}

/**
 * The common shape, built directly: HTML and text as multipart/alternative, no attachments, every header
 * printable ASCII. The bytes are those nodemailer's composer gives for the same message (same header
 * order, folding and boundary form; test/mail/mime.test.ts compares them), without building its tree,
 * which cost about twice the encoding of the two bodies. Anything else (attachments, one body, a name
 * or subject to encode, a custom header nodemailer treats specially) is null: the composer builds it.
 */
export function composeAlternative(m: OutboundMessage): Buffer | null {
  if (m.attachments?.length || !m.html || !m.text || !PLAIN_TEXT.test(m.subject) || ENCODED_IN_TEXT.test(m.subject)) return null
  if (!m.messageId.startsWith('<') || !m.messageId.endsWith('>') || !PLAIN_TEXT.test(m.messageId)) return null
  const from = plainAddress(m.from)
  const to = plainAddress(m.to)
  const replyTo = m.replyTo ? plainAddress({ address: m.replyTo }) : ''
  if (from === null || to === null || replyTo === null) return null
  const lines: string[] = []
  const seen = new Set<string>()
  const custom = (key: string, value: string) => {
    const name = headerName(key)
    if (!name || COMPOSER_HEADERS.has(name) || seen.has(name) || !PLAIN_TEXT.test(value) || ENCODED_IN_TEXT.test(value)) return false
    seen.add(name)
    lines.push(headerLine(name, value))
    return true
  }
  for (const [key, value] of Object.entries(m.headers ?? {})) if (!custom(key, value)) return null
  for (const [key, value] of Object.entries(m.listUnsubscribe ?? {})) if (!custom(key, value)) return null
  if (m.feedbackId && !custom('Feedback-ID', m.feedbackId)) return null
  lines.push(headerLine('From', from), headerLine('To', to))
  if (replyTo) lines.push(headerLine('Reply-To', replyTo))
  lines.push(headerLine('Subject', m.subject))
  const boundary = `--_NmP-${randomBytes(8).toString('hex')}-Part_1`
  lines.push(headerLine('Message-ID', m.messageId), `Date: ${new Date(m.date).toUTCString().replace(/GMT/, '+0000')}`, 'MIME-Version: 1.0',
    `Content-Type: multipart/alternative;\r\n boundary="${boundary}"`)
  const message = `${lines.join('\r\n')}\r\n\r\n--${boundary}\r\n${qpPart('text/plain', m.text)}\r\n--${boundary}\r\n${qpPart('text/html', m.html, m.htmlEncoded)}\r\n--${boundary}--\r\n`
  return Buffer.from(message, 'latin1')
}

/** The composer's tree for a message: the envelope is ours to give (VERP), so no Return-Path or Bcc. */
function compileMessage(m: OutboundMessage): MimeNode {
  const node = new MailComposer(composerOptions(m)).compile()
  node.keepBcc = false
  if (m.reportType && /^multipart\/mixed/i.test(String(node.getHeader('Content-Type') ?? ''))) node.setHeader('Content-Type', `multipart/report; report-type=${m.reportType}`)
  return node
}

/**
 * Builds the MIME message (CRLF line ends) synchronously: the composer's tree, serialised in one pass.
 * Throws when a part is not plain content (never the case for an OutboundMessage).
 */
export function composeMessageSync(m: OutboundMessage): Buffer {
  const direct = composeAlternative(m)
  if (direct) return direct
  const node = compileMessage(m)
  if (!serializable(node, true)) throw new Error('message parts must be strings or buffers')
  return serializeMessage(node)
}

/**
 * Builds the MIME message (CRLF line ends). Nodemailer's stream build costs several times the
 * serialisation itself; it is used only for trees the synchronous path does not cover.
 */
export function composeMessage(m: OutboundMessage): Promise<Buffer> {
  const direct = composeAlternative(m)
  if (direct) return Promise.resolve(direct)
  const node = compileMessage(m)
  if (serializable(node, true)) return Promise.resolve(serializeMessage(node))
  return node.build()
}

/** Nodemailer's own stream build of the same message (tests compare it with `composeMessage`). */
export function composeMessageStreamed(m: OutboundMessage): { node: MimeNode; build(): Promise<Buffer>; sync(): Buffer } {
  const node = compileMessage(m)
  return { node, build: () => node.build(), sync: () => serializeMessage(node) }
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
