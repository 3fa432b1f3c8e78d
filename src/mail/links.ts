/**
 * Signed links that go into every email: the subscription pages (unsubscribe, subscribe again, manage)
 * and tracking (open pixel, click redirect).
 *
 * Token = base64url(payload || mac) where
 * - payload is a compact binary record: one kind byte, then fields. A field that is a UUID (every mailctl
 *   id is one) takes 17 bytes (a 0x00 marker and the 16 raw bytes); any other string takes a varint
 *   `length + 1` and its UTF-8 bytes (click targets, ids that are not UUIDs).
 * - mac is HMAC-SHA256(key, payload) truncated to 12 bytes (96 bits), key = HMAC-SHA256(deps.secret,
 *   "mailctl/links/v1") so link MACs never collide with other uses of the secret. Checked in constant time.
 *
 * Because the click target lives inside the signed payload, an altered token fails its MAC and cannot
 * redirect anywhere (no open redirect). Links do not expire: RFC 8058 unsubscribe links must keep working
 * for as long as the mail sits in an inbox. Rotating the secret invalidates every link.
 *
 * One contact token serves the three subscription pages: it proves "the holder received mail for this
 * contact of this project", which is what unsubscribe, subscribe and manage each need. `emailId`, when
 * known, says which email the link came from (for the activity feed).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Deps } from '../deps'

/** What link helpers need from Deps (a subset, so tools and tests can pass a small object). */
export type LinkDeps = Pick<Deps, 'secret'> & { config: Pick<Deps['config'], 'publicUrl'> }

export interface ContactLink { kind: 'contact'; projectId: string; contactId: string; emailId?: string }
export interface OpenLink { kind: 'open'; emailId: string }
export interface ClickLink { kind: 'click'; emailId: string; url: string }
export type LinkPayload = ContactLink | OpenLink | ClickLink
export type LinkKind = LinkPayload['kind']

/** Public URL paths of the signed links (mounted by src/modules/subscriptions and the tracking routes). */
export const LINK_PATHS = {
  unsubscribe: '/unsubscribe',
  subscribe: '/subscribe',
  manage: '/manage',
  open: '/t/o',
  click: '/t/c',
} as const

const MAC_BYTES = 12
const KIND_BYTE: Record<LinkKind, number> = { contact: 1, open: 2, click: 3 }
const CONTACT_WITH_EMAIL = 4 // kind byte of a contact token that also carries an email id
const MAX_TOKEN_CHARS = 8192

/**
 * The HMAC of each secret's link key, keyed once: a token's MAC copies it and hashes the payload. Keying
 * an HMAC per token (node:crypto createHmac) cost about 12 µs, the copy about 5: a campaign message with
 * twenty tracked links signs twenty-one tokens.
 */
const keyed = new Map<string, Bun.CryptoHasher>()
function linkHmac(secret: string): Bun.CryptoHasher {
  let h = keyed.get(secret)
  if (!h) {
    const key = createHmac('sha256', secret).update('mailctl/links/v1').digest()
    h = new Bun.CryptoHasher('sha256', key)
    if (keyed.size > 16) keyed.clear()
    keyed.set(secret, h)
  }
  return h
}

function mac(secret: string, payload: Uint8Array): Uint8Array {
  return linkHmac(secret).copy().update(payload).digest().subarray(0, MAC_BYTES)
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The 16 bytes of a UUID written at `o` (its 32 hex digits; the dashes skipped). */
function writeUuid(out: Uint8Array, o: number, s: string): void {
  let nibble = -1
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x2d) continue
    const v = c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57
    if (nibble < 0) nibble = v
    else { out[o++] = (nibble << 4) | v; nibble = -1 }
  }
}

const isUuid = (s: string) => s.length === 36 && UUID_RE.test(s)

/**
 * A payload's bytes (kind, then each field: a UUID as 0 and its 16 bytes, any other string as the varint
 * of its UTF-8 length + 1 and the bytes), in one buffer with `room` bytes to spare at the end.
 */
function writePayload(kind: number, fields: string[], room: number): { buf: Buffer; length: number } {
  let size = 1 + room
  for (const f of fields) size += isUuid(f) ? 17 : 5 + Buffer.byteLength(f, 'utf8')
  const buf = Buffer.allocUnsafe(size)
  let o = 0
  buf[o++] = kind
  for (const f of fields) {
    if (isUuid(f)) {
      buf[o++] = 0
      writeUuid(buf, o, f)
      o += 16
      continue
    }
    let n = Buffer.byteLength(f, 'utf8') + 1
    while (n >= 0x80) { buf[o++] = (n & 0x7f) | 0x80; n = Math.floor(n / 128) }
    buf[o++] = n
    o += buf.write(f, o, 'utf8')
  }
  return { buf, length: o }
}

class Reader {
  private i = 0
  constructor(private buf: Uint8Array) {}
  get atEnd() { return this.i === this.buf.length }
  byte(): number {
    if (this.i >= this.buf.length) throw new RangeError('truncated')
    return this.buf[this.i++]
  }
  varint(): number {
    let n = 0
    let mul = 1
    for (let k = 0; k < 5; k++) {
      const b = this.byte()
      n += (b & 0x7f) * mul
      if (b < 0x80) return n
      mul *= 128
    }
    throw new RangeError('varint too long')
  }
  field(): string {
    const h = this.varint()
    if (h === 0) {
      if (this.i + 16 > this.buf.length) throw new RangeError('truncated')
      const hex = Buffer.from(this.buf.subarray(this.i, this.i + 16)).toString('hex')
      this.i += 16
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
    }
    const len = h - 1
    if (this.i + len > this.buf.length) throw new RangeError('truncated')
    const s = new TextDecoder('utf-8', { fatal: true }).decode(this.buf.subarray(this.i, this.i + len))
    this.i += len
    return s
  }
}

function fieldsOf(p: LinkPayload): { kind: number; fields: string[] } {
  switch (p.kind) {
    case 'contact': return p.emailId ? { kind: CONTACT_WITH_EMAIL, fields: [p.projectId, p.contactId, p.emailId] } : { kind: KIND_BYTE.contact, fields: [p.projectId, p.contactId] }
    case 'open': return { kind: KIND_BYTE.open, fields: [p.emailId] }
    case 'click': return { kind: KIND_BYTE.click, fields: [p.emailId, p.url] }
  }
}

function decode(payload: Uint8Array): LinkPayload | null {
  try {
    const r = new Reader(payload)
    const kind = r.byte()
    let out: LinkPayload
    if (kind === KIND_BYTE.contact || kind === CONTACT_WITH_EMAIL) {
      const projectId = r.field()
      const contactId = r.field()
      out = kind === CONTACT_WITH_EMAIL ? { kind: 'contact', projectId, contactId, emailId: r.field() } : { kind: 'contact', projectId, contactId }
    } else if (kind === KIND_BYTE.open) {
      out = { kind: 'open', emailId: r.field() }
    } else if (kind === KIND_BYTE.click) {
      out = { kind: 'click', emailId: r.field(), url: r.field() }
    } else {
      return null
    }
    return r.atEnd ? out : null
  } catch {
    return null
  }
}

/** Signs a payload into a URL-safe token (characters A-Z a-z 0-9 - _). */
export function signLinkToken(deps: Pick<Deps, 'secret'>, payload: LinkPayload): string {
  const { kind, fields } = fieldsOf(payload)
  const { buf, length } = writePayload(kind, fields, MAC_BYTES)
  buf.set(mac(deps.secret, buf.subarray(0, length)), length)
  return buf.toString('base64url', 0, length + MAC_BYTES)
}

/**
 * Checks a token's MAC (constant time) and decodes it. Returns null for anything forged, altered,
 * truncated, of another kind than `kind` (when given), or not a token at all. Never throws.
 */
export function verifyLinkToken<K extends LinkKind>(deps: Pick<Deps, 'secret'>, token: string, kind: K): Extract<LinkPayload, { kind: K }> | null
export function verifyLinkToken(deps: Pick<Deps, 'secret'>, token: string): LinkPayload | null
export function verifyLinkToken(deps: Pick<Deps, 'secret'>, token: string, kind?: LinkKind): LinkPayload | null {
  if (typeof token !== 'string' || token.length < 4 || token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) return null
  const raw = Buffer.from(token, 'base64url')
  // Reject non-canonical encodings so one payload has exactly one token.
  if (raw.toString('base64url') !== token || raw.length <= MAC_BYTES + 1) return null
  const body = raw.subarray(0, raw.length - MAC_BYTES)
  const given = raw.subarray(raw.length - MAC_BYTES)
  if (!timingSafeEqual(given, mac(deps.secret, body))) return null
  const p = decode(body)
  if (!p || (kind && p.kind !== kind)) return null
  return p
}

/** True for the URLs that click tracking may rewrite and redirect to: absolute http(s) only. */
export function isTrackableUrl(url: string): boolean {
  if (url.length > 4096) return false
  try {
    const u = new URL(url)
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== ''
  } catch {
    return false
  }
}

interface ContactRef { projectId: string; contactId: string; emailId?: string | null }

function contactToken(deps: LinkDeps, ref: ContactRef): string {
  return signLinkToken(deps, { kind: 'contact', projectId: ref.projectId, contactId: ref.contactId, ...(ref.emailId ? { emailId: ref.emailId } : {}) })
}

/** The RFC 8058 one-click unsubscribe URL of a contact (GET shows a confirm page, POST unsubscribes). */
export function unsubscribeUrl(deps: LinkDeps, ref: ContactRef): string {
  return `${deps.config.publicUrl}${LINK_PATHS.unsubscribe}/${contactToken(deps, ref)}`
}

/** The subscribe-again URL of a contact. */
export function subscribeUrl(deps: LinkDeps, ref: ContactRef): string {
  return `${deps.config.publicUrl}${LINK_PATHS.subscribe}/${contactToken(deps, ref)}`
}

/** The manage-preferences URL of a contact. */
export function manageUrl(deps: LinkDeps, ref: ContactRef): string {
  return `${deps.config.publicUrl}${LINK_PATHS.manage}/${contactToken(deps, ref)}`
}

/** The open-tracking pixel URL of an email. */
export function openPixelUrl(deps: LinkDeps, emailId: string): string {
  return `${deps.config.publicUrl}${LINK_PATHS.open}/${signLinkToken(deps, { kind: 'open', emailId })}`
}

/**
 * The click-tracking URL of one link of an email; the target is inside the signed token.
 * Throws on a target that is not an absolute http(s) URL (mailto:, tel:, anchors are left unrewritten:
 * check with isTrackableUrl first).
 */
export function clickUrl(deps: LinkDeps, emailId: string, targetUrl: string): string {
  if (!isTrackableUrl(targetUrl)) throw new Error(`clickUrl: not an absolute http(s) URL: ${targetUrl.slice(0, 100)}`)
  return checkedClickUrl(deps, emailId, targetUrl)
}

/** clickUrl of a target the caller has just checked with isTrackableUrl (the rewrite of an email's links). */
export function checkedClickUrl(deps: LinkDeps, emailId: string, targetUrl: string): string {
  return `${deps.config.publicUrl}${LINK_PATHS.click}/${signLinkToken(deps, { kind: 'click', emailId, url: targetUrl })}`
}

/**
 * The RFC 2369 / RFC 8058 headers of a marketing email to one contact: `List-Unsubscribe` with the
 * one-click https URL (POSTed by mail clients without a login) and, when given, a mailto address (for
 * clients that only mail: src/mail/outbound/verp.ts `unsubscribeAddress`), and `List-Unsubscribe-Post`.
 * Both must be covered by the DKIM signature for clients to offer one-click unsubscribe.
 */
export function listUnsubscribeHeaders(deps: LinkDeps, ref: ContactRef, mailto?: string | null): { 'List-Unsubscribe': string; 'List-Unsubscribe-Post': string } {
  const https = `<${unsubscribeUrl(deps, ref)}>`
  return {
    'List-Unsubscribe': mailto ? `${https}, <mailto:${mailto}?subject=unsubscribe>` : https,
    'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
  }
}
