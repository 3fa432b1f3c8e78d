import { isIP } from 'node:net'
import { domainToASCII } from 'node:url'

/**
 * Domain-name rules of mail, used by the domains module, the sender gate and inbound routing:
 * normalisation (IDNA), the names of the records we ask users to publish, and the parent-domain walk of
 * the sender gate.
 */

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/** Why a name cannot be a sending domain, or null when it can. `ascii` is the normalised name. */
export function parseDomain(input: string): { ascii: string; error: null } | { ascii: null; error: string } {
  const trimmed = input.trim().replace(/\.$/, '')
  if (!trimmed) return { ascii: null, error: 'Domain is empty' }
  if (/[\s@/\\:?#[\]]/.test(trimmed)) return { ascii: null, error: 'Give a bare domain name such as example.com (no scheme, path, port or address)' }
  if (isIP(trimmed)) return { ascii: null, error: 'An IP address cannot be a sending domain' }
  const ascii = domainToASCII(trimmed).toLowerCase()
  if (!ascii) return { ascii: null, error: `"${trimmed}" is not a valid domain name` }
  if (isIP(ascii)) return { ascii: null, error: 'An IP address cannot be a sending domain' }
  const labels = ascii.split('.')
  if (labels.length < 2) return { ascii: null, error: 'A sending domain needs at least two labels, such as example.com' }
  if (!labels.every((l) => LABEL.test(l))) return { ascii: null, error: `"${trimmed}" is not a valid host name (letters, digits and hyphens only)` }
  const tld = labels[labels.length - 1]
  if (/^[0-9]+$/.test(tld)) return { ascii: null, error: 'An IP address cannot be a sending domain' }
  if (tld === 'localhost' || tld === 'local' || tld === 'invalid') return { ascii: null, error: `".${tld}" names cannot send mail on the internet` }
  // The longest name we publish is <selector>._domainkey.<domain>; keep it within 253 characters.
  if (ascii.length > 200) return { ascii: null, error: 'Domain name is too long' }
  return { ascii, error: null }
}

/** The return-path (bounce) subdomain of a sending domain: VERP envelope senders live here. */
export function returnPathDomain(domain: string): string {
  return `bounce.${domain}`
}

export function dkimRecordName(selector: string, domain: string): string {
  return `${selector}._domainkey.${domain}`
}

export function dmarcRecordName(domain: string): string {
  return `_dmarc.${domain}`
}

/**
 * The domain of an address and each parent with at least two labels, most specific first, in ASCII
 * lower case: `a@mail.example.com` -> [mail.example.com, example.com]. Empty for an unusable address.
 */
export function senderDomainCandidates(email: string): string[] {
  const at = email.lastIndexOf('@')
  if (at < 1) return []
  const parsed = parseDomain(email.slice(at + 1))
  if (!parsed.ascii) return []
  const labels = parsed.ascii.split('.')
  const out: string[] = []
  for (let i = 0; i <= labels.length - 2; i++) out.push(labels.slice(i).join('.'))
  return out
}
