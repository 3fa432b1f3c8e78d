/**
 * VERP return-paths: every message's envelope sender names its email, so a bounce maps back to it
 * without parsing guesswork:
 *
 *   b+<emailId>.<tag>@<return-path domain>     e.g. b+0193a6f2-...-9c1e.5f1c2a9be0@bounce.example.com
 *
 * `tag` is 40 bits of HMAC-SHA256(secret, emailId): a forged bounce to a guessed address is ignored.
 * The local part is 49 characters (the limit is 64), lowercase only, so it survives case-folding MTAs.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

const TAG_HEX = 10
const VERP_RE = /^b\+([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([0-9a-f]{10})@(.+)$/

function tag(secret: string, emailId: string): string {
  return createHmac('sha256', secret).update(`mailctl/verp/v1:${emailId}`).digest('hex').slice(0, TAG_HEX)
}

/** The envelope sender (MAIL FROM) of an email. */
export function verpAddress(deps: { secret: string }, emailId: string, returnPathDomain: string): string {
  return `b+${emailId.toLowerCase()}.${tag(deps.secret, emailId.toLowerCase())}@${returnPathDomain.toLowerCase()}`
}

/**
 * The email id of a VERP address (the RCPT TO of a bounce, or a DSN's original envelope sender), or null
 * when the address is not one of ours or its tag does not match. Case-insensitive; never throws.
 */
export function parseVerp(deps: { secret: string }, address: string): { emailId: string; domain: string } | null {
  const m = VERP_RE.exec(address.trim().replace(/^<|>$/g, '').toLowerCase())
  if (!m) return null
  const expected = Buffer.from(tag(deps.secret, m[1]))
  const given = Buffer.from(m[2])
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  return { emailId: m[1], domain: m[3] }
}

/**
 * The List-Unsubscribe mailto of an email (RFC 2369), next to its one-click https URL:
 *
 *   u+<emailId>.<tag>@<return-path domain>
 *
 * Same shape as the VERP address, with its own HMAC label, so neither can be made from the other. The
 * inbound receiver accepts it (src/modules/inbound/routing.ts) and a message to it unsubscribes the email's
 * contact (src/modules/inbound/service.ts).
 */
const UNSUB_RE = /^u\+([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([0-9a-f]{10})@(.+)$/

function unsubTag(secret: string, emailId: string): string {
  return createHmac('sha256', secret).update(`mailctl/unsubscribe/v1:${emailId}`).digest('hex').slice(0, TAG_HEX)
}

export function unsubscribeAddress(deps: { secret: string }, emailId: string, returnPathDomain: string): string {
  const id = emailId.toLowerCase()
  return `u+${id}.${unsubTag(deps.secret, id)}@${returnPathDomain.toLowerCase()}`
}

/** The email id of a List-Unsubscribe mailto address, or null (not one of ours, or a wrong tag). Never throws. */
export function parseUnsubscribeAddress(deps: { secret: string }, address: string): { emailId: string; domain: string } | null {
  const m = UNSUB_RE.exec(address.trim().replace(/^<|>$/g, '').toLowerCase())
  if (!m) return null
  const expected = Buffer.from(unsubTag(deps.secret, m[1]))
  const given = Buffer.from(m[2])
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  return { emailId: m[1], domain: m[3] }
}
