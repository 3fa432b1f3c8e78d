/**
 * A small, defensive MIME reader for the inbound report parsers (DSN, ARF). mailparser folds
 * message/delivery-status into the text body and hides part boundaries, so the report parsers read the
 * tree themselves. Everything here is pure and synchronous, works on a Buffer and never throws on bad
 * input: limits on depth, part count and header size keep hostile messages cheap.
 */

export interface Header { name: string; value: string }

export interface MimePart {
  headers: Header[]
  /** Lower-cased media type, e.g. "multipart/report"; "text/plain" when absent (RFC 2045). */
  contentType: string
  params: Record<string, string>
  /** Decoded body bytes (transfer encoding undone); empty for multiparts. */
  body: Buffer
  children: MimePart[]
}

const MAX_DEPTH = 8
const MAX_PARTS = 200
const MAX_HEADER_BYTES = 256 * 1024

/** Thrown only inside this module and caught by the callers' guards. */
export class MimeError extends Error {}

function splitHeaderBody(raw: string): { head: string; body: string } {
  const m = /\r?\n\r?\n/.exec(raw)
  if (!m) return { head: raw, body: '' }
  return { head: raw.slice(0, m.index), body: raw.slice(m.index + m[0].length) }
}

/** Parses a header block (latin1 string) into fields, unfolding continuation lines. */
export function parseHeaderBlock(head: string): Header[] {
  const out: Header[] = []
  for (const line of head.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) {
      out[out.length - 1].value += ' ' + line.trim()
      continue
    }
    const i = line.indexOf(':')
    if (i <= 0) continue
    const name = line.slice(0, i).trim()
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue
    out.push({ name: name.toLowerCase(), value: line.slice(i + 1).trim() })
  }
  return out
}

export function header(headers: Header[], name: string): string | null {
  const h = headers.find((x) => x.name === name)
  return h ? h.value : null
}

export function headersAll(headers: Header[], name: string): string[] {
  return headers.filter((x) => x.name === name).map((x) => x.value)
}

/** Splits `type/subtype; a=b; c="d"` into the lower-cased type and its parameters (RFC 2231 continuations joined). */
export function parseContentType(value: string | null): { type: string; params: Record<string, string> } {
  if (!value) return { type: 'text/plain', params: {} }
  const semi = value.indexOf(';')
  const type = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase()
  const params: Record<string, string> = {}
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/g
  const rest = semi < 0 ? '' : value.slice(semi)
  for (let m = re.exec(rest); m; m = re.exec(rest)) {
    const key = m[1].toLowerCase()
    const v = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]
    const cont = /^(.+)\*(\d+)\*?$/.exec(key)
    if (cont) params[cont[1]] = (params[cont[1]] ?? '') + v
    else params[key.replace(/\*$/, '')] = v
  }
  return { type: /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) ? type : 'text/plain', params }
}

function decodeQuotedPrintable(s: string): Buffer {
  const t = s.replace(/=\r?\n/g, '')
  const bytes: number[] = []
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i)
    if (c === 0x3d && /^[0-9A-Fa-f]{2}$/.test(t.slice(i + 1, i + 3))) {
      bytes.push(parseInt(t.slice(i + 1, i + 3), 16))
      i += 2
    } else {
      bytes.push(c & 0xff)
    }
  }
  return Buffer.from(bytes)
}

function decodeBody(body: string, encoding: string | null): Buffer {
  const enc = (encoding ?? '').trim().toLowerCase()
  if (enc === 'base64') return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64')
  if (enc === 'quoted-printable') return decodeQuotedPrintable(body)
  return Buffer.from(body, 'latin1')
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

function splitMultipart(body: string, boundary: string): string[] {
  const re = new RegExp(`(?:^|\\r?\\n)--${escapeRe(boundary)}(--)?[ \\t]*(?=\\r?\\n|$)`, 'g')
  const parts: string[] = []
  let start = -1
  for (let m = re.exec(body); m; m = re.exec(body)) {
    if (start >= 0) parts.push(body.slice(start, m.index))
    if (m[1]) { start = -1; break }
    start = m.index + m[0].length
    const nl = /^\r?\n/.exec(body.slice(start, start + 2))
    if (nl) start += nl[0].length
  }
  // A missing closing boundary (truncated message): keep what came after the last delimiter.
  if (start >= 0 && start < body.length) parts.push(body.slice(start))
  return parts
}

function parsePart(raw: string, depth: number, counter: { n: number }): MimePart {
  if (++counter.n > MAX_PARTS) throw new MimeError(`more than ${MAX_PARTS} MIME parts`)
  const { head, body } = splitHeaderBody(raw)
  if (head.length > MAX_HEADER_BYTES) throw new MimeError('header section too large')
  const headers = parseHeaderBlock(head)
  const { type, params } = parseContentType(header(headers, 'content-type'))
  const part: MimePart = { headers, contentType: type, params, body: Buffer.alloc(0), children: [] }
  if (type.startsWith('multipart/') && params.boundary && depth < MAX_DEPTH) {
    for (const p of splitMultipart(body, params.boundary)) part.children.push(parsePart(p, depth + 1, counter))
  } else {
    part.body = decodeBody(body, header(headers, 'content-transfer-encoding'))
  }
  return part
}

/**
 * Parses a whole message. Throws MimeError when there is no header section at all (empty input,
 * binary junk), so callers can answer "unparseable".
 */
export function parseMime(raw: Buffer): MimePart {
  const text = raw.toString('latin1')
  const { head } = splitHeaderBody(text.slice(0, MAX_HEADER_BYTES + 4))
  const headers = parseHeaderBlock(head)
  if (headers.length === 0) throw new MimeError('no header section')
  const first = head.split(/\r?\n/, 1)[0]
  if (!/^[\x21-\x39\x3b-\x7e]+:/.test(first) && !/^From /.test(first)) throw new MimeError('the message does not start with a header field')
  if (/[\x00]/.test(head)) throw new MimeError('NUL bytes in the header section')
  return parsePart(text, 0, { n: 0 })
}

/** Every part of the tree, depth first (the root included). */
export function walk(part: MimePart): MimePart[] {
  const out: MimePart[] = [part]
  for (const c of part.children) out.push(...walk(c))
  return out
}

/** Decodes a body to text with the part's charset (UTF-8 when unknown, never throws). */
export function partText(part: MimePart): string {
  const cs = (part.params.charset ?? 'utf-8').toLowerCase()
  try {
    return new TextDecoder(cs).decode(part.body)
  } catch {
    return new TextDecoder('utf-8').decode(part.body)
  }
}

/** Decodes RFC 2047 encoded words in a header value. */
export function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)/g, '$1')
    .replace(/=\?([^?\s*]+)(?:\*[^?\s]*)?\?([bBqQ])\?([^?\s]*)\?=/g, (all, cs: string, enc: string, data: string) => {
      try {
        const bytes = enc.toUpperCase() === 'B' ? Buffer.from(data, 'base64') : decodeQuotedPrintable(data.replace(/_/g, ' '))
        return new TextDecoder(cs.toLowerCase()).decode(bytes)
      } catch {
        return all
      }
    })
    .replace(/[\r\n]+/g, ' ')
}

/** Addresses in a header value: `Name <a@b>, c@d` -> ["a@b", "c@d"] (lower-cased). */
export function addresses(value: string | null): string[] {
  if (!value) return []
  const out: string[] = []
  const bracketed = value.match(/<[^<>\s]+@[^<>\s]+>/g)
  if (bracketed) {
    for (const b of bracketed) out.push(b.slice(1, -1))
  } else {
    for (const tok of value.split(/[,;\s]+/)) {
      const m = /^["'(]*([^\s"'<>(),;]+@[^\s"'<>(),;]+)/.exec(tok)
      const addr = m ? m[1].replace(/[.)"']+$/, '') : ''
      if (/^[^@]+@[^@]+$/.test(addr)) out.push(addr)
    }
  }
  return [...new Set(out.map((a) => a.toLowerCase()))]
}

/** `<id@host>` from a Message-ID style header, or null. */
export function messageId(value: string | null): string | null {
  if (!value) return null
  const m = /<([^<>\s]+)>/.exec(value)
  if (m) return `<${m[1]}>`
  const t = value.trim()
  return /^[^\s<>]+@[^\s<>]+$/.test(t) ? `<${t}>` : null
}

/** The headers of an embedded original message (message/rfc822, text/rfc822-headers, message/global...). */
export function embeddedHeaders(part: MimePart): Header[] {
  return parseHeaderBlock(splitHeaderBody(part.body.toString('latin1').slice(0, MAX_HEADER_BYTES)).head)
}

export const ORIGINAL_TYPES = new Set(['message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers', 'message/rfc822-headers'])

/**
 * Splits a report body (message/delivery-status, message/feedback-report) into groups of fields: a group
 * ends at a blank line. Folded lines are unfolded.
 */
export function fieldGroups(text: string): Header[][] {
  return text.split(/\r?\n[ \t]*\r?\n/).map((g) => parseHeaderBlock(g.replace(/^\s*\r?\n/, ''))).filter((g) => g.length > 0)
}

/** Who the report was addressed to (our VERP return path), most specific header first. */
export function addressedTo(root: MimePart): string[] {
  const out: string[] = []
  for (const name of ['delivered-to', 'x-original-to', 'envelope-to', 'to']) {
    for (const v of headersAll(root.headers, name)) out.push(...addresses(v))
  }
  return [...new Set(out)]
}

/** A summary of the embedded original message, if the report carries one. */
export interface OriginalMessage {
  messageId: string | null
  returnPath: string | null
  from: string | null
  to: string[]
  subject: string | null
  /** Every header of the original, lower-cased names, first value wins (for X-... headers set at send time). */
  headers: Record<string, string>
}

export function originalMessage(root: MimePart): OriginalMessage | null {
  const part = walk(root).find((p) => p !== root && ORIGINAL_TYPES.has(p.contentType))
  if (!part) return null
  const hs = embeddedHeaders(part)
  if (hs.length === 0) return null
  const map: Record<string, string> = {}
  for (const h of hs) if (!(h.name in map)) map[h.name] = h.value
  const subject = header(hs, 'subject')
  return {
    messageId: messageId(header(hs, 'message-id')),
    returnPath: addresses(header(hs, 'return-path'))[0] ?? null,
    from: addresses(header(hs, 'from'))[0] ?? null,
    to: addresses(header(hs, 'to')),
    subject: subject === null ? null : decodeWords(subject),
    headers: map,
  }
}

/** Text of the human-readable parts (text/plain first, then text/html stripped of tags), for heuristics. */
export function readableText(root: MimePart): string {
  const parts = walk(root).filter((p) => p.children.length === 0 && (p.contentType === 'text/plain' || p.contentType === 'text/html'))
  const plain = parts.filter((p) => p.contentType === 'text/plain')
  const use = plain.length ? plain : parts
  return use.map((p) => {
    const t = partText(p)
    return p.contentType === 'text/html' ? t.replace(/<[^>]*>/g, ' ').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&') : t
  }).join('\n')
}
