/**
 * DKIM signing (RFC 6376, relaxed/relaxed; RSA-SHA256 per RFC 8301, Ed25519-SHA256 per RFC 8463).
 *
 * Written for throughput: the body's bytes are checked with native searches and hashed as they are
 * when already canonical inside (the composer's output), else canonicalised in one pass; only the
 * header block becomes a string; parsed private keys are cached. The cost per message is close to the
 * one asymmetric signature.
 */
import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto'

/** Headers signed when present, in this order. `from` is over-signed (listed once more than present). */
export const SIGNED_HEADERS = [
  'from', 'sender', 'reply-to', 'subject', 'date', 'message-id', 'to', 'cc', 'mime-version', 'content-type',
  'content-transfer-encoding', 'in-reply-to', 'references', 'list-id', 'list-unsubscribe', 'list-unsubscribe-post',
  'feedback-id',
] as const

export interface DkimKey {
  /** The signing domain (d=). */
  domain: string
  selector: string
  /** PKCS#8 or PKCS#1 PEM (RSA) or PKCS#8 PEM (Ed25519). */
  privateKeyPem: string
}

const keyCache = new Map<string, KeyObject>()

function keyObject(pem: string): KeyObject {
  let k = keyCache.get(pem)
  if (!k) {
    k = createPrivateKey(pem)
    if (keyCache.size >= 1000) keyCache.delete(keyCache.keys().next().value as string)
    keyCache.set(pem, k)
  }
  return k
}

/**
 * Relaxed body canonicalisation (RFC 6376 3.4.4) of the body's bytes in one pass: line ends become CRLF,
 * runs of spaces and tabs one space, whitespace ending a line goes, and trailing empty lines go (a
 * non-empty body ends with one CRLF). A CR not followed by LF is an ordinary byte.
 */
export function canonBodyRelaxedBytes(body: Buffer): Uint8Array {
  const len = body.length
  if (isCanonicalInside(body)) {
    // Only trailing empty lines to drop (native scans; the usual case for the composer's output).
    let end = len
    while (end >= 2 && body[end - 1] === 0x0a && body[end - 2] === 0x0d) end -= 2
    if (end === 0) return body.subarray(0, 0)
    if (end + 2 <= len) return body.subarray(0, end + 2)
    const out = new Uint8Array(end + 2)
    out.set(body.subarray(0, end))
    out[end] = 0x0d
    out[end + 1] = 0x0a
    return out
  }
  // Every input byte gives at most one output byte, a bare LF two, and the final CRLF two more.
  const out = new Uint8Array(len * 2 + 2)
  let o = 0
  let space = false
  for (let i = 0; i < len; i++) {
    const c = body[i]
    if (c === 0x20 || c === 0x09) { space = true; continue }
    if (c === 0x0d && i + 1 < len && body[i + 1] === 0x0a) continue
    if (c === 0x0a) {
      space = false
      out[o++] = 0x0d
      out[o++] = 0x0a
      continue
    }
    if (space) { out[o++] = 0x20; space = false }
    out[o++] = c
  }
  while (o >= 2 && out[o - 1] === 0x0a && out[o - 2] === 0x0d) o -= 2
  if (o === 0) return out.subarray(0, 0)
  out[o++] = 0x0d
  out[o++] = 0x0a
  return out.subarray(0, o)
}

/**
 * Whether relaxed canonicalisation leaves the body's lines as they are: no tab, no run of spaces, no
 * space ending a line or the body, every LF preceded by CR. Native searches, no per-byte JavaScript.
 */
function isCanonicalInside(body: Buffer): boolean {
  const len = body.length
  if (!len) return true
  if (body[len - 1] === 0x20 || body.indexOf(0x09) >= 0 || body.indexOf('  ') >= 0 || body.indexOf(' \r\n') >= 0) return false
  for (let i = body.indexOf(0x0a); i >= 0; i = body.indexOf(0x0a, i + 1)) {
    if (i === 0 || body[i - 1] !== 0x0d) return false
  }
  return true
}

/** Relaxed body canonicalisation of a latin1 string (see canonBodyRelaxedBytes). */
export function canonBodyRelaxed(body: string): string {
  if (!body) return ''
  return Buffer.from(canonBodyRelaxedBytes(Buffer.from(body, 'latin1'))).toString('latin1')
}

/** Relaxed header canonicalisation (RFC 6376 3.4.2) of one field given as `name` and raw `value`. */
export function canonHeaderRelaxed(name: string, value: string): string {
  return `${name.replace(/[ \t]+/g, '').toLowerCase()}:${value.replace(/\r?\n(?=[ \t])/g, '').replace(/[ \t]+/g, ' ').replace(/^ | $/g, '')}\r\n`
}

interface HeaderField { name: string; lower: string; value: string }

/** Splits a header block into fields (continuation lines stay in their field's raw value). */
function parseHeaders(block: string): HeaderField[] {
  const out: HeaderField[] = []
  const lines = block.split('\r\n')
  for (const line of lines) {
    if (!line) continue
    if ((line[0] === ' ' || line[0] === '\t') && out.length) {
      out[out.length - 1].value += `\r\n${line}`
      continue
    }
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon)
    out.push({ name, lower: name.trim().toLowerCase(), value: line.slice(colon + 1) })
  }
  return out
}

/** The header block (latin1, without the blank line) and the body bytes of a message. */
function splitMessage(raw: Buffer): { head: string; body: Buffer } {
  const i = raw.indexOf('\r\n\r\n')
  if (i < 0) return { head: raw.toString('latin1'), body: raw.subarray(raw.length) }
  return { head: raw.toString('latin1', 0, i), body: raw.subarray(i + 4) }
}

/** Folds a tag list after `;` so no header line exceeds 78 characters where avoidable. */
function foldTags(tags: string[]): string {
  let out = ''
  let lineLen = 'DKIM-Signature:'.length
  for (let i = 0; i < tags.length; i++) {
    const t = tags[i] + (i < tags.length - 1 ? ';' : '')
    if (lineLen + 1 + t.length > 76 && out) {
      out += '\r\n'
      lineLen = 0
    }
    out += ` ${t}`
    lineLen += 1 + t.length
  }
  return out
}

/** Breaks a long base64 value into folded chunks (FWS inside b= is ignored by verifiers). */
function foldValue(v: string, first: number): string {
  const parts: string[] = []
  let i = 0
  let width = Math.max(8, 76 - first)
  while (i < v.length) {
    parts.push(v.slice(i, i + width))
    i += width
    width = 74
  }
  return parts.join('\r\n ')
}

export interface SignOptions {
  /** Signature time (t=), seconds since epoch; default now. */
  time?: number
}

/**
 * Returns the `DKIM-Signature: ...\r\n` field to prepend to `raw` (a complete message with CRLF line
 * ends). The message itself is not copied.
 */
export function dkimSignatureHeader(raw: Buffer | string, key: DkimKey, opts: SignOptions = {}): string {
  const { head, body } = splitMessage(typeof raw === 'string' ? Buffer.from(raw, 'latin1') : raw)
  const bh = createHash('sha256').update(canonBodyRelaxedBytes(body)).digest('base64')
  const fields = parseHeaders(head)
  const byName = new Map<string, HeaderField[]>()
  for (const f of fields) {
    const list = byName.get(f.lower)
    if (list) list.push(f)
    else byName.set(f.lower, [f])
  }
  const h: string[] = []
  let signed = ''
  for (const name of SIGNED_HEADERS) {
    const list = byName.get(name)
    if (!list) continue
    // Bottom-up for repeated fields (RFC 6376 5.4.2).
    for (let i = list.length - 1; i >= 0; i--) {
      h.push(name)
      signed += canonHeaderRelaxed(list[i].name, list[i].value)
    }
  }
  // Over-sign From: a From added later would not verify.
  if (byName.has('from')) h.push('from')
  const pk = keyObject(key.privateKeyPem)
  const ed = pk.asymmetricKeyType === 'ed25519'
  const tags = [
    'v=1', `a=${ed ? 'ed25519-sha256' : 'rsa-sha256'}`, 'c=relaxed/relaxed', `d=${key.domain}`, `s=${key.selector}`,
    `t=${opts.time ?? Math.floor(Date.now() / 1000)}`, `h=${h.join(':')}`, `bh=${bh}`, 'b=',
  ]
  const value = foldTags(tags)
  signed += canonHeaderRelaxed('DKIM-Signature', value).slice(0, -2)
  const data = Buffer.from(signed, 'latin1')
  const sig = ed
    ? sign(null, createHash('sha256').update(data).digest(), pk).toString('base64')
    : sign('sha256', data, pk).toString('base64')
  const lastLine = value.slice(value.lastIndexOf('\n') + 1)
  return `DKIM-Signature:${value}${foldValue(sig, lastLine.length)}\r\n`
}

/** Signs a message: the DKIM-Signature field followed by the message. */
export function dkimSign(raw: Buffer, key: DkimKey, opts: SignOptions = {}): Buffer {
  return Buffer.concat([Buffer.from(dkimSignatureHeader(raw, key, opts), 'latin1'), raw])
}
