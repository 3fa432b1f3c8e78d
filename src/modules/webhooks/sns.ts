/**
 * Amazon SNS HTTP(S) delivery: the message envelope, its signature (SignatureVersion 1: SHA1withRSA,
 * 2: SHA256withRSA over the canonical "Key\nValue\n" string), and the URLs SNS hands us. The signing
 * certificate and the SubscribeURL must be https on sns.<region>.amazonaws.com (or .amazonaws.com.cn):
 * anything else is refused before any request is made, so a forged message cannot make the server fetch
 * an arbitrary URL. Certificates are cached by URL.
 */
import { createVerify, X509Certificate } from 'node:crypto'
import type { FetchLike } from '../../deps'

export type SnsType = 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation'

export interface SnsMessage {
  Type: SnsType
  MessageId: string
  TopicArn: string
  Message: string
  Timestamp: string
  SignatureVersion: string
  Signature: string
  SigningCertURL: string
  Subject?: string | null
  Token?: string
  SubscribeURL?: string
  UnsubscribeURL?: string
}

export class SnsError extends Error {
  constructor(readonly kind: 'malformed' | 'untrusted' | 'signature' | 'fetch', message: string) {
    super(message)
  }
}

const TYPES = new Set<SnsType>(['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation'])
const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/

/** Reads the JSON envelope (SNS posts it as text/plain). Throws SnsError('malformed'). */
export function parseSnsMessage(text: string): SnsMessage {
  let v: unknown
  try { v = JSON.parse(text) } catch { throw new SnsError('malformed', 'The body is not JSON') }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new SnsError('malformed', 'The body is not a JSON object')
  const o = v as Record<string, unknown>
  const str = (k: string) => {
    if (typeof o[k] !== 'string' || !o[k]) throw new SnsError('malformed', `SNS field ${k} is missing`)
    return o[k] as string
  }
  const type = str('Type') as SnsType
  if (!TYPES.has(type)) throw new SnsError('malformed', `Unknown SNS message type ${type.slice(0, 50)}`)
  const msg: SnsMessage = {
    Type: type, MessageId: str('MessageId'), TopicArn: str('TopicArn'), Message: typeof o.Message === 'string' ? o.Message : str('Message'),
    Timestamp: str('Timestamp'), SignatureVersion: str('SignatureVersion'), Signature: str('Signature'), SigningCertURL: str('SigningCertURL'),
  }
  if (typeof o.Subject === 'string') msg.Subject = o.Subject
  if (type !== 'Notification') {
    msg.Token = str('Token')
    msg.SubscribeURL = str('SubscribeURL')
  }
  if (typeof o.UnsubscribeURL === 'string') msg.UnsubscribeURL = o.UnsubscribeURL
  return msg
}

/** True for https://sns.<region>.amazonaws.com[.cn]/... (and, with `pem`, a path ending in .pem). */
export function isSnsUrl(url: string, pem = false): boolean {
  let u: URL
  try { u = new URL(url) } catch { return false }
  if (u.protocol !== 'https:' || u.username || u.password || (u.port && u.port !== '443')) return false
  if (!SNS_HOST.test(u.hostname.toLowerCase())) return false
  return !pem || u.pathname.toLowerCase().endsWith('.pem')
}

/** The canonical string SNS signs for this message type. */
export function stringToSign(m: SnsMessage): string {
  const keys: Array<keyof SnsMessage> = m.Type === 'Notification'
    ? ['Message', 'MessageId', ...(m.Subject !== undefined && m.Subject !== null ? ['Subject' as const] : []), 'Timestamp', 'TopicArn', 'Type']
    : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type']
  return keys.map((k) => `${k}\n${m[k]}\n`).join('')
}

const MAX_CERT_BYTES = 64 * 1024
const CERT_TTL_MS = 24 * 3600_000
const certCache = new Map<string, { pem: string; at: number }>()

/** Fetches (or takes from the cache) the PEM certificate at an SNS URL. */
export async function signingCert(url: string, fetcher: FetchLike): Promise<string> {
  const hit = certCache.get(url)
  if (hit && Date.now() - hit.at < CERT_TTL_MS) return hit.pem
  let pem: string
  try {
    const res = await fetcher(url, { signal: AbortSignal.timeout(10_000), redirect: 'error' })
    if (!res.ok) throw new Error(`HTTP ${res.status}`)
    const buf = new Uint8Array(await res.arrayBuffer())
    if (buf.length > MAX_CERT_BYTES) throw new Error('certificate too large')
    pem = new TextDecoder().decode(buf)
    new X509Certificate(pem)
  } catch (err) {
    throw new SnsError('fetch', `Could not load the SNS signing certificate: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (certCache.size > 100) certCache.clear()
  certCache.set(url, { pem, at: Date.now() })
  return pem
}

/** Forgets cached certificates (tests). */
export function clearCertCache(): void {
  certCache.clear()
}

/** Verifies the message's signature; throws SnsError('untrusted' | 'signature' | 'fetch'). */
export async function verifySnsMessage(m: SnsMessage, fetcher: FetchLike): Promise<void> {
  if (!isSnsUrl(m.SigningCertURL, true)) throw new SnsError('untrusted', 'SigningCertURL is not an https URL of sns.<region>.amazonaws.com')
  const algorithm = m.SignatureVersion === '1' ? 'RSA-SHA1' : m.SignatureVersion === '2' ? 'RSA-SHA256' : null
  if (!algorithm) throw new SnsError('signature', `Unsupported SignatureVersion ${m.SignatureVersion.slice(0, 10)}`)
  const pem = await signingCert(m.SigningCertURL, fetcher)
  let ok = false
  try {
    ok = createVerify(algorithm).update(stringToSign(m), 'utf8').verify(pem, m.Signature, 'base64')
  } catch {
    ok = false
  }
  if (!ok) throw new SnsError('signature', 'The SNS signature does not verify')
}
