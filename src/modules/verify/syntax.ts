import { domainToASCII } from 'node:url'

/**
 * Address syntax, the practical subset of RFC 5321/5322 that mail systems accept:
 * - `local@domain`, at most 254 characters in all (the 256-octet path of RFC 5321 less its brackets);
 * - local part: a dot-atom of at most 64 octets: letters, digits and ! # $ % & ' * + / = ? ^ _ ` { | } ~ -,
 *   dots only between characters, never two in a row; UTF-8 letters are allowed (RFC 6531). Quoted local
 *   parts ("john doe"@x) and comments are refused: valid in RFC 5322, rejected by nearly every provider;
 * - domain: a host name (no address literals like [192.0.2.1]), at least two labels, each 1-63 characters
 *   of letters, digits and hyphens, not starting or ending with a hyphen, 253 characters at most, a
 *   top-level label that is not all digits. Internationalised domains are converted to punycode (UTS #46)
 *   and the rules apply to the ASCII form.
 */
export type Syntax =
  | { ok: true; local: string; domain: string; asciiDomain: string }
  | { ok: false; reason: string; local: string | null; domain: string | null }

const ATEXT = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uFFFF-]+$/
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

function fail(reason: string, local: string | null = null, domain: string | null = null): Syntax {
  return { ok: false, reason, local, domain }
}

export function parseAddress(input: string): Syntax {
  const email = input.normalize('NFC')
  if (email.length === 0) return fail('the address is empty')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: an address may not contain C0 controls or DEL, which this class names
  if (/[\s\x00-\x1f\x7f]/.test(email)) return fail('the address contains spaces or control characters')
  const at = email.lastIndexOf('@')
  if (at < 0) return fail('the address has no @')
  const local = email.slice(0, at)
  const domain = email.slice(at + 1)
  if (!local) return fail('the part before the @ is empty', local, domain)
  if (!domain) return fail('the domain after the @ is empty', local, domain)
  if (local.startsWith('"') || local.includes('@')) return fail('quoted local parts and extra @ signs are not accepted', local, domain)
  if (email.length > 254) return fail('the address is longer than 254 characters', local, domain)
  if (new TextEncoder().encode(local).length > 64) return fail('the part before the @ is longer than 64 characters', local, domain)
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..')) return fail('the part before the @ has a leading, trailing or doubled dot', local, domain)
  if (!local.split('.').every((atom) => ATEXT.test(atom))) return fail('the part before the @ contains characters that are not allowed', local, domain)
  if (domain.startsWith('[')) return fail('address literals ([IP]) are not accepted', local, domain)
  if (domain.endsWith('.') || domain.startsWith('.') || domain.includes('..')) return fail('the domain has an empty label', local, domain)
  const ascii = /^[\x21-\x7e]+$/.test(domain) ? domain.toLowerCase() : domainToASCII(domain)
  if (!ascii) return fail('the domain is not a valid internationalised domain name', local, domain)
  if (ascii.length > 253) return fail('the domain is longer than 253 characters', local, domain)
  const labels = ascii.split('.')
  if (labels.length < 2) return fail('the domain has no top-level domain (e.g. ".com")', local, domain)
  if (!labels.every((l) => LABEL.test(l))) return fail('the domain contains characters that are not allowed in a host name', local, domain)
  if (/^\d+$/.test(labels[labels.length - 1])) return fail('the top-level domain is numeric', local, domain)
  if (labels.some((l) => l.startsWith('xn--')) && domainToASCII(ascii) === '') return fail('the domain is not valid punycode', local, domain)
  return { ok: true, local, domain, asciiDomain: ascii }
}
