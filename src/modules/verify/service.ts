/**
 * POST /v1/verify: what can be known about an address without sending it mail. Checks, in order:
 * syntax (syntax.ts), typo of a popular provider (typo.ts), disposable domain (mailchecker's list),
 * forwarding/role alias and plus addressing (lists.ts), free-mail provider (email-providers' list), then
 * DNS through src/dns with its answer cache (answers kept for their TTL, at most 5 minutes, 10,000
 * entries; temporary failures are never cached).
 *
 * - `domainExists`: the domain answered (any record or NODATA) for MX, A or AAAA; NXDOMAIN means it does not.
 * - `hasMxRecords`: at least one MX host; a null MX (RFC 7505, `MX 0 .`) is false with its own reason.
 * - `hasWebsite`: an A or AAAA record at the domain or at www.<domain>. DNS only: no HTTP request is made
 *   (a request would let any caller make this server fetch arbitrary hosts).
 * - `valid`: syntax is correct, the domain exists and has MX records. Like the hosted service, an address
 *   without MX records is not valid even where RFC 5321's implicit MX (the A record) might still deliver.
 *   Disposable, typo, alias, plus and personal are signals for the caller and do not change `valid`.
 * - `reasons`: one sentence per problem or signal: every false among valid/domainExists/hasMxRecords/
 *   hasWebsite and every true among isDisposable/isTypo/isAlias/isPlusAddressed; "Email appears to be
 *   valid" when there is nothing to say.
 */
import { blacklist } from 'mailchecker'
import providers from 'email-providers/all.json'
import type { Config } from '../../config'
import { AppError } from '../../errors'
import { resolverFor, isDnsError, type DnsError, type MxAnswer, type Resolver } from '../../dns'
import { RELAY_DOMAINS, RESERVED_SUFFIXES, ROLE_LOCAL_PARTS } from './lists'
import { parseAddress } from './syntax'
import { suggestDomain } from './typo'

export interface VerifyResult {
  email: string
  valid: boolean
  isDisposable: boolean
  isAlias: boolean
  isTypo: boolean
  isPlusAddressed: boolean
  isPersonalEmail: boolean
  domainExists: boolean
  hasWebsite: boolean
  hasMxRecords: boolean
  reasons: string[]
  suggestedEmail?: string
}

const disposable = blacklist()
const personal = new Set<string>((providers as string[]).map((d) => d.toLowerCase()))

/** The domain or one of its parents is on the list (mailchecker lists parents of throwaway subdomains). */
function onDisposableList(domain: string): boolean {
  const labels = domain.split('.')
  for (let i = 0; i < labels.length - 1; i++) if (disposable.has(labels.slice(i).join('.'))) return true
  return false
}

function reserved(domain: string): boolean {
  return RESERVED_SUFFIXES.some((s) => domain === s || domain.endsWith(`.${s}`))
}

type Lookup<T> = { ok: true; value: T } | { ok: false; error: DnsError | Error }

async function attempt<T>(p: Promise<T>): Promise<Lookup<T>> {
  try {
    return { ok: true, value: await p }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error : new Error(String(error)) }
  }
}

const notFound = (l: Lookup<unknown>) => !l.ok && isDnsError(l.error) && l.error.notFound
const nxdomain = (l: Lookup<unknown>) => !l.ok && isDnsError(l.error) && l.error.code === 'NXDOMAIN'
const answered = (l: Lookup<unknown>) => l.ok || notFound(l)
const hasAddresses = (l: Lookup<string[]>) => l.ok && l.value.length > 0
function failure(l: Lookup<unknown>): string {
  if (l.ok) return ''
  return isDnsError(l.error) ? l.error.code : l.error.message
}

/** The verify resolver: MAILCTL_DNS_SERVERS with the shared answer cache. */
export function verifyResolver(deps: { config: Pick<Config, 'dnsServers'> }): Resolver {
  return resolverFor(deps.config, { cache: true })
}

/** Verifies one address. `ctx` is a service Ctx (only its deps.config is read); `resolver` is for tests. */
export async function verifyEmail(ctx: { deps: { config: Pick<Config, 'dnsServers'> } }, input: string, resolver: Resolver = verifyResolver(ctx.deps)): Promise<VerifyResult> {
  const email = input.trim().toLowerCase().normalize('NFC')
  const result: VerifyResult = {
    email, valid: false, isDisposable: false, isAlias: false, isTypo: false, isPlusAddressed: false,
    isPersonalEmail: false, domainExists: false, hasWebsite: false, hasMxRecords: false, reasons: [],
  }
  const reasons = result.reasons
  const syntax = parseAddress(email)

  // The typo check also helps addresses whose only fault is the domain ("user@gmailcom").
  const lexicalDomain = syntax.ok ? syntax.asciiDomain : syntax.domain && /^[\x21-\x7e]+$/.test(syntax.domain) ? syntax.domain : null
  const suggestion = lexicalDomain ? suggestDomain(lexicalDomain) : null
  const local = syntax.local ?? ''
  if (suggestion && local) {
    result.isTypo = true
    result.suggestedEmail = `${local}@${suggestion}`
    reasons.push(`Possible typo: did you mean ${result.suggestedEmail}?`)
  }

  if (!syntax.ok) {
    reasons.unshift(`Invalid email syntax: ${syntax.reason}`)
    reasons.push('Domain, MX and website were not checked because the address is not well formed')
    return result
  }
  const domain = syntax.asciiDomain
  const base = local.split('+')[0]

  result.isPlusAddressed = local.indexOf('+') > 0
  if (result.isPlusAddressed) reasons.push(`Plus addressing: mail goes to the mailbox ${base}@${syntax.domain} with the tag "${local.slice(base.length + 1)}"`)

  const relay = RELAY_DOMAINS.has(domain)
  const role = ROLE_LOCAL_PARTS.has(base)
  result.isAlias = relay || role
  if (relay) reasons.push(`Alias: ${domain} is a forwarding service that relays to a hidden mailbox`)
  if (role) reasons.push(`Alias: "${base}" is a role address that usually reaches a team, not one person`)

  result.isDisposable = !relay && onDisposableList(domain)
  if (result.isDisposable) reasons.push(`Disposable: ${domain} is a known throwaway email provider`)
  result.isPersonalEmail = personal.has(domain) && !result.isDisposable && !result.isTypo && !reserved(domain)

  const [mx, a, aaaa] = await Promise.all([
    attempt<MxAnswer>(resolver.resolveMx(domain)),
    attempt(resolver.resolveA(domain)),
    attempt(resolver.resolveAAAA(domain)),
  ])
  const lookups = [mx, a, aaaa]
  result.domainExists = lookups.some(answered) && !nxdomain(mx)
  if (!result.domainExists) {
    // One reason covers the three checks that need the domain: MX records and website too.
    if (lookups.some(nxdomain)) reasons.push(`Domain does not exist: ${domain} has no DNS records (NXDOMAIN), so no MX records and no website`)
    else reasons.push(`Domain could not be checked: DNS look-ups for ${domain} failed (${failure(mx) || failure(a)}); try again later`)
  }

  if (mx.ok && mx.value.nullMx) {
    reasons.push(`No MX records: ${domain} publishes a null MX (RFC 7505), it accepts no mail`)
  } else if (mx.ok && mx.value.records.length > 0) {
    result.hasMxRecords = true
  } else if (result.domainExists) {
    reasons.push(notFound(mx) || mx.ok
      ? `No MX records: ${domain} cannot receive email`
      : `MX records could not be checked (${failure(mx)}); try again later`)
  }

  if (hasAddresses(a) || hasAddresses(aaaa)) {
    result.hasWebsite = true
  } else if (result.domainExists) {
    const [wa, waaaa] = await Promise.all([attempt(resolver.resolveA(`www.${domain}`)), attempt(resolver.resolveAAAA(`www.${domain}`))])
    result.hasWebsite = hasAddresses(wa) || hasAddresses(waaaa)
    if (!result.hasWebsite) reasons.push(`No website: neither ${domain} nor www.${domain} has an A or AAAA record`)
  }

  result.valid = result.domainExists && result.hasMxRecords
  if (reasons.length === 0) reasons.push('Email appears to be valid')
  return result
}

/**
 * POST /v1/verify: a malformed address is refused with 422 VALIDATION_ERROR (the syntax reason, and a typo
 * suggestion when there is one, as in "jane@gmailcom"); a well-formed address gets the full result, where
 * `valid: false` means it failed the DNS checks.
 */
export async function verifyWellFormed(ctx: { deps: { config: Pick<Config, 'dnsServers'> } }, input: string): Promise<VerifyResult> {
  const result = await verifyEmail(ctx, input)
  const syntax = parseAddress(result.email)
  if (syntax.ok) return result
  const message = `email: Invalid email syntax: ${syntax.reason}`
  throw new AppError('VALIDATION_ERROR', message, {
    errors: [{ field: 'email', message, code: 'invalid_string', received: input }],
    ...(result.suggestedEmail ? { suggestion: `Did you mean ${result.suggestedEmail}?`, details: { suggestedEmail: result.suggestedEmail } } : {}),
  })
}
