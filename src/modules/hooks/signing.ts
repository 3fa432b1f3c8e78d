import { createHmac, randomBytes } from 'node:crypto'
import type { Config } from '../../config'
import { dkimKey } from '../../secrets'
import { decryptPrivateKey, encryptPrivateKey } from '../domains/keys'

/**
 * Signing secrets and signatures of the Standard Webhooks convention: a secret is `whsec_` and the base64
 * of 32 random bytes; a signature is `v1,` and the base64 HMAC-SHA256, keyed with the secret's bytes, of
 * `<webhook-id>.<webhook-timestamp>.<body>`. Several signatures (a rotation's grace period) are separated
 * by spaces in one `webhook-signature` header; a receiver accepts the message when any one verifies.
 */

export const SECRET_PREFIX = 'whsec_'

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`
}

/** One `v1,<base64>` signature of a message under `secret`. */
export function sign(secret: string, id: string, timestampSec: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSec}.${body}`).digest('base64')}`
}

/** The three Standard Webhooks headers of one attempt, signed by every secret given (current first). */
export function signatureHeaders(secrets: string[], id: string, timestampSec: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': secrets.map((s) => sign(s, id, timestampSec, body)).join(' '),
  }
}

// A cache, not state: a key derived from the settings (one HMAC).
const keys = new WeakMap<Config, Buffer>()

/** The key that encrypts stored secrets: derived from the DKIM master key (src/secrets.ts), one label of its own. */
function secretsKey(config: Config): Buffer {
  let k = keys.get(config)
  if (!k) {
    k = createHmac('sha256', dkimKey(config)).update('mailctl webhook secrets v1').digest()
    keys.set(config, k)
  }
  return k
}

/** The stored form of an endpoint's secret: AES-256-GCM, bound to the endpoint id. */
export function sealSecret(config: Config, endpointId: string, secret: string): string {
  return encryptPrivateKey(secretsKey(config), secret, `webhook:${endpointId}`)
}

export function openSecret(config: Config, endpointId: string, sealed: string): string {
  return decryptPrivateKey(secretsKey(config), sealed, `webhook:${endpointId}`)
}

/** Whether an event name is wanted by an endpoint's types (`*`, `prefix.*`, or an exact name). */
export function wants(types: readonly string[], name: string): boolean {
  for (const t of types) {
    if (t === '*' || t === name) return true
    if (t.endsWith('.*') && name.startsWith(t.slice(0, -1))) return true
  }
  return false
}
