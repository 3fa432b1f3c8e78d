/**
 * A small, defensive MIME reader for the inbound report parsers (DSN, ARF). mailparser folds
 * message/delivery-status into the text body and hides part boundaries, so the report parsers read the
 * tree themselves. Everything here is pure and synchronous, works on a Buffer and never throws on bad
 * input: limits on depth, part count and header size keep hostile messages cheap.
 *
 * The receiver takes messages of up to 25 MB from anyone, so every scan here is linear in its input:
 * no regular expression may backtrack over an unbounded run (a `<[^>]*>` that restarts at every `<`,
 * `[^<>\s]+@[^<>\s]+>` over `a@a@a@...`, a `[x]+$` over a long run of x). Such scans are written as
 * loops over indexOf, or as patterns whose every step can only go one way. Text read for heuristics is
 * also capped per part (READABLE_PART_BYTES, REPORT_PART_BYTES): a 10 MB text part costs what its first
 * kilobytes cost.
 */

export interface Header { name: string; value: string }

export interface MimePart {
  headers: Header[]
  /** Lower-cased media type, e.g. "multipart/report"; "text/plain" when absent (RFC 2045). */
  contentType: string
  params: Record<string, string>
  /** Decoded body bytes (transfer encoding undone, at first use); empty for multiparts. */
  readonly body: Buffer
  /** The first `max` bytes of the decoded body, decoding only about that much of the encoded body. */
  bodyPrefix(max: number): Buffer
  children: MimePart[]
}

/**
 * A part whose body is decoded when first read: the report parsers never read most bodies (a 10 MB
 * attachment stays encoded), and text read for heuristics decodes only a prefix.
 */
class Part implements MimePart {
  children: MimePart[] = []
  private decoded: Buffer | null = null
  constructor(readonly headers: Header[], readonly contentType: string, readonly params: Record<string, string>, private readonly encoded: string, private readonly encoding: string | null) {}

  get body(): Buffer {
    this.decoded ??= decodeBody(this.encoded, this.encoding)
    return this.decoded
  }

  bodyPrefix(max: number): Buffer {
    // Quoted-printable takes at most 3 characters a byte, base64 4 for 3 (line breaks aside): 4 a byte is ample.
    const budget = max * 4 + 4
    if (this.decoded || this.encoded.length <= budget) return this.body.subarray(0, max)
    return decodeBody(this.encoded.slice(0, budget), this.encoding).subarray(0, max)
  }
}

const MAX_DEPTH = 8
const MAX_PARTS = 200
const MAX_HEADER_BYTES = 256 * 1024
/**
 * Bytes of each text/plain or text/html part that readableText reads: the snippet of email.received
 * and the plain-text bounce heuristics (qmail, legacy Yahoo) need the top of the text, where bounces
 * name their recipients and the returned message's headers follow a marker line within a few KB.
 */
export const READABLE_PART_BYTES = 64 * 1024
/**
 * Bytes of a message/delivery-status or message/feedback-report part that are read: a report lists
 * about 0.3 KB of fields per recipient, so this holds hundreds of recipients.
 */
export const REPORT_PART_BYTES = 256 * 1024

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
      out[out.length - 1].value += ` ${line.trim()}`
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
  if (semi >= 0) {
    for (const [rawKey, v] of contentTypeParams(value, semi)) {
      const key = rawKey.toLowerCase()
      const cont = continuation(key)
      if (cont) params[cont] = (params[cont] ?? '') + v
      else params[key.endsWith('*') ? key.slice(0, -1) : key] = v
    }
  }
  return { type: /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) ? type : 'text/plain', params }
}

/** `name*2` or `name*2*` -> `name` (an RFC 2231 continuation), else null. */
function continuation(key: string): string | null {
  let end = key.length
  if (key.endsWith('*')) end--
  let i = end
  while (i > 0 && key.charCodeAt(i - 1) >= 0x30 && key.charCodeAt(i - 1) <= 0x39) i--
  if (i === end || i < 2 || key[i - 1] !== '*') return null
  return key.slice(0, i - 1)
}

const isWs = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0xfeff || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000

/**
 * The `;name=value` pairs of a Content-Type value from the first `;` on, in one pass: a value is a
 * quoted string (backslash escapes undone; an unclosed quote runs to the end) or a token up to `;` or
 * whitespace. A segment without `=` is skipped.
 */
function contentTypeParams(value: string, from: number): Array<[string, string]> {
  const out: Array<[string, string]> = []
  const n = value.length
  let i = from
  while (i < n) {
    // At a ';': the name runs to '=', ';' or whitespace.
    i++
    while (i < n && isWs(value.charCodeAt(i))) i++
    const nameStart = i
    while (i < n && value[i] !== '=' && value[i] !== ';' && !isWs(value.charCodeAt(i))) i++
    const name = value.slice(nameStart, i)
    while (i < n && isWs(value.charCodeAt(i))) i++
    if (!name || value[i] !== '=') { i = nextSemi(value, i); continue }
    i++
    while (i < n && isWs(value.charCodeAt(i))) i++
    if (value[i] === '"') {
      let v = ''
      let j = i + 1
      let from = j
      let closed = false
      while (j < n) {
        const c = value.charCodeAt(j)
        if (c === 0x5c && j + 1 < n) { v += value.slice(from, j) + value[j + 1]; j += 2; from = j; continue }
        if (c === 0x22) { closed = true; break }
        j++
      }
      if (closed) { out.push([name, v + value.slice(from, j)]); i = nextSemi(value, j + 1); continue }
      // An unclosed quote is not a quoted string: the value is the token that starts with the quote.
    }
    const start = i
    while (i < n && value[i] !== ';' && !isWs(value.charCodeAt(i))) i++
    out.push([name, value.slice(start, i)])
    i = nextSemi(value, i)
  }
  return out
}

function nextSemi(value: string, from: number): number {
  const k = value.indexOf(';', from)
  return k < 0 ? value.length : k
}

const hexValue = (c: number) => (c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1)

/** Quoted-printable to bytes: soft line breaks dropped, then `=XX` decoded and anything else kept, in one pass. */
function decodeQuotedPrintable(qp: string): Buffer {
  const s = qp.replace(/=\r?\n/g, '')
  const out = Buffer.allocUnsafe(s.length)
  let o = 0
  const n = s.length
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x3d) {
      const hi = i + 2 < n ? hexValue(s.charCodeAt(i + 1)) : -1
      const lo = hi >= 0 ? hexValue(s.charCodeAt(i + 2)) : -1
      if (lo >= 0) { out[o++] = (hi << 4) | lo; i += 2; continue }
    }
    out[o++] = c & 0xff
  }
  return out.subarray(0, o)
}

function decodeBody(body: string, encoding: string | null): Buffer {
  const enc = (encoding ?? '').trim().toLowerCase()
  if (enc === 'base64') return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64')
  if (enc === 'quoted-printable') return decodeQuotedPrintable(body)
  return Buffer.from(body, 'latin1')
}

/**
 * The parts between `--boundary` delimiter lines, up to the closing `--boundary--`. Line by line: a
 * line is compared with the boundary only when it starts with `--`, and never past its own end (a
 * search for a long boundary, or a regular expression built from it, can cost its length at every
 * position of the body).
 */
function splitMultipart(body: string, boundary: string): string[] {
  const parts: string[] = []
  let start = -1
  for (let ls = 0; ls <= body.length;) {
    const nl = body.indexOf('\n', ls)
    const next = nl < 0 ? body.length + 1 : nl + 1
    const kind = nl < 0 && ls === body.length ? null : delimiterLine(body, ls, nl < 0 ? body.length : nl, boundary, nl < 0)
    if (kind) {
      // The line break before a delimiter belongs to it.
      const end = ls === 0 ? 0 : body.charCodeAt(ls - 2) === 0x0d ? ls - 2 : ls - 1
      if (start >= 0) parts.push(body.slice(start, end))
      if (kind === 'close') { start = -1; break }
      start = nl < 0 ? body.length : nl + 1
    }
    ls = next
  }
  // A missing closing boundary (truncated message): keep what came after the last delimiter.
  if (start >= 0 && start < body.length) parts.push(body.slice(start))
  return parts
}

/** Whether body[from, to) is `--boundary` or `--boundary--`, spaces and tabs after it, and a CR before a LF. */
function delimiterLine(body: string, from: number, to: number, boundary: string, last: boolean): 'open' | 'close' | null {
  if (body.charCodeAt(from) !== 0x2d || body.charCodeAt(from + 1) !== 0x2d) return null
  const b = from + 2
  if (to - b < boundary.length || !body.startsWith(boundary, b)) return null
  const end = !last && to > from && body.charCodeAt(to - 1) === 0x0d ? to - 1 : to
  const blanksTo = (k: number) => {
    while (k < end && (body.charCodeAt(k) === 0x20 || body.charCodeAt(k) === 0x09)) k++
    return k === end
  }
  const after = b + boundary.length
  if (body.startsWith('--', after) && after + 2 <= end && blanksTo(after + 2)) return 'close'
  return blanksTo(after) ? 'open' : null
}

function parsePart(raw: string, depth: number, counter: { n: number }): MimePart {
  if (++counter.n > MAX_PARTS) throw new MimeError(`more than ${MAX_PARTS} MIME parts`)
  const { head, body } = splitHeaderBody(raw)
  if (head.length > MAX_HEADER_BYTES) throw new MimeError('header section too large')
  const headers = parseHeaderBlock(head)
  const { type, params } = parseContentType(header(headers, 'content-type'))
  if (type.startsWith('multipart/') && params.boundary && depth < MAX_DEPTH) {
    const part = new Part(headers, type, params, '', null)
    for (const p of splitMultipart(body, params.boundary)) part.children.push(parsePart(p, depth + 1, counter))
    return part
  }
  return new Part(headers, type, params, body, header(headers, 'content-transfer-encoding'))
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
  if (head.includes('\0')) throw new MimeError('NUL bytes in the header section')
  return parsePart(text, 0, { n: 0 })
}

export interface Unreadable { kind: 'unparseable'; reason: string }

/** Why a parser failed, as its `unparseable` result. */
export function unreadable(e: unknown): Unreadable {
  return { kind: 'unparseable', reason: e instanceof MimeError ? e.message : `parser error: ${e instanceof Error ? e.message : String(e)}` }
}

/** parseMime behind the parsers' guard: the tree, or why there is none. Never throws. */
export function readMime(raw: Buffer | Uint8Array): MimePart | Unreadable {
  try {
    if (!raw || raw.length === 0) return { kind: 'unparseable', reason: 'empty message' }
    return parseMime(Buffer.isBuffer(raw) ? raw : Buffer.from(raw))
  } catch (e) {
    return unreadable(e)
  }
}

/** Every part of the tree, depth first (the root included). */
export function walk(part: MimePart): MimePart[] {
  const out: MimePart[] = [part]
  for (const c of part.children) out.push(...walk(c))
  return out
}

/**
 * Decodes a body to text with the part's charset (UTF-8 when unknown, never throws); with `maxBytes`,
 * only that many bytes of the body (a character cut in two at the end decodes to U+FFFD).
 */
export function partText(part: MimePart, maxBytes = Number.POSITIVE_INFINITY): string {
  return decodeText(part, Number.isFinite(maxBytes) ? part.bodyPrefix(maxBytes) : part.body)
}

function decodeText(part: MimePart, bytes: Uint8Array): string {
  const cs = (part.params.charset ?? 'utf-8').toLowerCase()
  try {
    return new TextDecoder(cs).decode(bytes)
  } catch {
    return new TextDecoder('utf-8').decode(bytes)
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

/** True when `s` has an `@` with at least one character before and after it. */
function hasInnerAt(s: string): boolean {
  const at = s.indexOf('@', 1)
  return at > 0 && at < s.length - 1
}

/** Addresses in a header value: `Name <a@b>, c@d` -> ["a@b", "c@d"] (lower-cased). */
export function addresses(value: string | null): string[] {
  if (!value) return []
  const out: string[] = []
  // `<[^<>\s]+>` can only stop at the next `<`, `>` or space, so its scans never overlap.
  for (const m of value.matchAll(/<([^<>\s]+)>/g)) if (hasInnerAt(m[1])) out.push(m[1])
  if (!out.length) {
    for (const tok of value.split(/[,;\s]+/)) {
      // The first `@` splits the token: the local part cannot hold one, so the match cannot backtrack.
      const m = /^["'(]*([^\s"'<>(),;@]+@[^\s"'<>(),;]+)/.exec(tok)
      const addr = m ? trimEnd(m[1], '.)"\'') : ''
      if (/^[^@]+@[^@]+$/.test(addr)) out.push(addr)
    }
  }
  return [...new Set(out.map((a) => a.toLowerCase()))]
}

/** `s` without the characters of `chars` at its end (a loop: `[...]+$` rescans the run from each start). */
function trimEnd(s: string, chars: string): string {
  let end = s.length
  while (end > 0 && chars.includes(s[end - 1])) end--
  return s.slice(0, end)
}

/** `<id@host>` from a Message-ID style header, or null. */
export function messageId(value: string | null): string | null {
  if (!value) return null
  const m = /<([^<>\s]+)>/.exec(value)
  if (m) return `<${m[1]}>`
  const t = value.trim()
  return /^[^\s<>]+$/.test(t) && hasInnerAt(t) ? `<${t}>` : null
}

/** The headers of an embedded original message (message/rfc822, text/rfc822-headers, message/global...). */
export function embeddedHeaders(part: MimePart): Header[] {
  return parseHeaderBlock(splitHeaderBody(part.bodyPrefix(MAX_HEADER_BYTES).toString('latin1')).head)
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

/**
 * Text of the human-readable parts (text/plain first, then text/html stripped of tags), for heuristics:
 * at most READABLE_PART_BYTES of each part. A part cut by that cap loses its last, partial line too
 * (when it has more than one), so no half line is read as a whole one.
 */
export function readableText(root: MimePart, maxBytesPerPart = READABLE_PART_BYTES): string {
  const parts = walk(root).filter((p) => p.children.length === 0 && (p.contentType === 'text/plain' || p.contentType === 'text/html'))
  const plain = parts.filter((p) => p.contentType === 'text/plain')
  const use = plain.length ? plain : parts
  return use.map((p) => {
    const bytes = p.bodyPrefix(maxBytesPerPart + 1)
    let t = decodeText(p, bytes.subarray(0, maxBytesPerPart))
    if (bytes.length > maxBytesPerPart) {
      const nl = t.lastIndexOf('\n')
      if (nl > 0) t = t.slice(0, nl + 1)
    }
    return p.contentType === 'text/html' ? htmlEntities(stripTags(t)) : t
  }).join('\n')
}

/**
 * Each `<...>` (up to the first `>`) replaced by a space, in one pass. A `<` with no `>` after it is
 * text, and so is everything after it: no later `<` can be closed either.
 */
export function stripTags(html: string): string {
  let out = ''
  let i = 0
  for (;;) {
    const open = html.indexOf('<', i)
    if (open < 0) break
    const close = html.indexOf('>', open + 1)
    if (close < 0) break
    out += `${html.slice(i, open)} `
    i = close + 1
  }
  return out + html.slice(i)
}

const ENTITIES: Record<string, string> = { '&lt;': '<', '&gt;': '>', '&amp;': '&' }

function htmlEntities(text: string): string {
  return text.replace(/&(?:lt|gt|amp);/g, (e) => ENTITIES[e])
}
