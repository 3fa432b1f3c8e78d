/**
 * DKIM signing (RFC 6376, relaxed/relaxed; RSA-SHA256 per RFC 8301, Ed25519-SHA256 per RFC 8463).
 *
 * Written for throughput: the message is handled as one latin1 string (binary safe), the body is
 * canonicalised with three regular expressions and hashed natively, and parsed private keys are cached,
 * so the cost per message is close to the one asymmetric signature.
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

/** Relaxed body canonicalisation (RFC 6376 3.4.4) of a latin1 string with CRLF line ends. */
export function canonBodyRelaxed(body: string): string {
  if (!body) return ''
  let b = body.replace(/\r?\n/g, '\r\n')
  b = b.replace(/[ \t]+/g, ' ').replace(/ \r\n/g, '\r\n')
  // Trailing whitespace on a last line without CRLF, then trailing empty lines.
  b = b.replace(/ $/, '')
  b = b.replace(/(\r\n)+$/, '')
  return b ? b + '\r\n' : ''
}

/** Relaxed header canonicalisation (RFC 6376 3.4.2) of one field given as `name` and raw `value`. */
export function canonHeaderRelaxed(name: string, value: string): string {
  return name.replace(/[ \t]+/g, '').toLowerCase() + ':' + value.replace(/\r?\n(?=[ \t])/g, '').replace(/[ \t]+/g, ' ').replace(/^ | $/g, '') + '\r\n'
}

interface HeaderField { name: string; lower: string; value: string }

/** Splits a header block into fields (continuation lines stay in their field's raw value). */
function parseHeaders(block: string): HeaderField[] {
  const out: HeaderField[] = []
  const lines = block.split('\r\n')
  for (const line of lines) {
    if (!line) continue
    if ((line[0] === ' ' || line[0] === '\t') && out.length) {
      out[out.length - 1].value += '\r\n' + line
      continue
    }
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon)
    out.push({ name, lower: name.trim().toLowerCase(), value: line.slice(colon + 1) })
  }
  return out
}

function splitMessage(raw: string): { head: string; body: string } {
  const i = raw.indexOf('\r\n\r\n')
  if (i < 0) return { head: raw, body: '' }
  return { head: raw.slice(0, i), body: raw.slice(i + 4) }
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
    out += ' ' + t
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
  const text = typeof raw === 'string' ? raw : raw.toString('latin1')
  const { head, body } = splitMessage(text)
  const bh = createHash('sha256').update(canonBodyRelaxed(body), 'latin1').digest('base64')
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
