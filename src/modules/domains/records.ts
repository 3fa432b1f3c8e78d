import type { RecordCheck } from '../../db/schema/domains'
import { DnsError, type Resolver } from '../../dns'
import { dkimRecordName, dmarcRecordName, returnPathDomain } from '../../mail/names'

/**
 * The DNS records a sending domain publishes, and the live check of each one.
 * - DKIM (required for `verified`): TXT `<selector>._domainkey.<domain>` = `v=DKIM1; k=rsa; p=<key>`.
 * - RETURN_PATH_MX / RETURN_PATH_SPF (recommended): the bounce subdomain receives bounces on
 *   MAILCTL_HOSTNAME and authorises it in SPF, so VERP envelope senders align with the From domain.
 * - DMARC (recommended): `_dmarc.<domain>`; any valid policy, or one inherited from a parent domain.
 */

export type Purpose = 'DKIM' | 'RETURN_PATH_MX' | 'RETURN_PATH_SPF' | 'DMARC'
export const PURPOSES: readonly Purpose[] = ['DKIM', 'RETURN_PATH_MX', 'RETURN_PATH_SPF', 'DMARC']

export interface ExpectedRecord {
  purpose: Purpose
  type: 'TXT' | 'MX'
  name: string
  value: string
  /** MX only. */
  priority?: number
  required: boolean
}

export interface DomainKeyInfo { domain: string; selector: string; dkimPublicKey: string }

export function dkimValue(publicKey: string): string {
  return `v=DKIM1; k=rsa; p=${publicKey}`
}

export function spfValue(hostname: string): string {
  return `v=spf1 a:${hostname} ~all`
}

export function expectedRecords(d: DomainKeyInfo, hostname: string): ExpectedRecord[] {
  const bounce = returnPathDomain(d.domain)
  return [
    { purpose: 'DKIM', type: 'TXT', name: dkimRecordName(d.selector, d.domain), value: dkimValue(d.dkimPublicKey), required: true },
    { purpose: 'RETURN_PATH_MX', type: 'MX', name: bounce, value: hostname, priority: 10, required: false },
    { purpose: 'RETURN_PATH_SPF', type: 'TXT', name: bounce, value: spfValue(hostname), required: false },
    { purpose: 'DMARC', type: 'TXT', name: dmarcRecordName(d.domain), value: 'v=DMARC1; p=none;', required: false },
  ]
}

type Outcome = Omit<RecordCheck, 'checkedAt'> & {
  /** A definitive negative answer (missing or wrong), as opposed to a temporary look-up failure. */
  definitive: boolean
}

const verified = (reason: string | null = null): Outcome => ({ status: 'verified', reason, definitive: true })
const failed = (reason: string): Outcome => ({ status: 'failed', reason, definitive: true })

/** Shows a found value in a reason without flooding it (keys are ~400 characters). */
function show(value: string, max = 80): string {
  const v = value.length > max ? `${value.slice(0, max - 25)}...${value.slice(-20)}` : value
  return JSON.stringify(v)
}

/** What a failed look-up's code means, in words for the people who fix DNS. */
const LOOKUP_WORDS: Record<string, string> = {
  SERVFAIL: "the domain's DNS servers gave no answer (often a name server that is down or misconfigured)",
  REFUSED: 'the DNS server refused to answer',
  NOTIMP: 'the DNS server did not understand the question',
  FORMERR: 'the DNS server did not understand the question',
  TIMEOUT: 'no DNS server answered in time',
  BADRESP: 'the DNS server sent an answer that could not be read',
  NETWORK: 'this server could not reach its DNS server',
  BADNAME: 'the name is not a valid DNS name',
}

function lookupFailure(err: unknown, type: string, name: string): Outcome {
  if (err instanceof DnsError && err.notFound) {
    return failed(`missing: no ${type} record at ${name}${err.code === 'NXDOMAIN' ? ' (the name does not exist)' : ''}`)
  }
  const code = err instanceof DnsError ? err.code : 'error'
  const words = LOOKUP_WORDS[code] ?? 'the look-up went wrong'
  return { status: 'pending', reason: `DNS look-up of ${name} failed temporarily (${code}): ${words}; it will be checked again`, definitive: false }
}

/** DKIM tag list (RFC 6376 3.2): `tag=value` pairs separated by `;`, whitespace around both ignored. */
export function parseTags(record: string): Map<string, string> | null {
  const tags = new Map<string, string>()
  for (const part of record.split(';')) {
    const p = part.trim()
    if (!p) continue
    const eq = p.indexOf('=')
    if (eq <= 0) return null
    const tag = p.slice(0, eq).trim()
    if (tags.has(tag)) return null
    tags.set(tag, p.slice(eq + 1).trim())
  }
  return tags
}

function checkDkimValues(values: string[], expectedKey: string, name: string): Outcome {
  if (!values.length) return failed(`missing: no TXT record at ${name}`)
  const dkim = values.map((v) => ({ v, tags: parseTags(v) })).filter((x) => x.tags?.has('p') || /^\s*v\s*=\s*DKIM1/i.test(x.v))
  if (!dkim.length) return failed(`wrong value: found ${show(values[0])} at ${name}, which is not a DKIM record; expected "v=DKIM1; k=rsa; p=..."`)
  if (dkim.length > 1) return failed(`found ${dkim.length} DKIM records at ${name}; publish exactly one`)
  const { v, tags } = dkim[0]
  if (!tags) return failed(`wrong value: found ${show(v)} at ${name}, which is not a valid DKIM tag list`)
  const version = tags.get('v')
  if (version !== undefined && (version !== 'DKIM1' || [...tags.keys()][0] !== 'v')) return failed(`wrong value: found ${show(v)} at ${name}; it must start with v=DKIM1`)
  const k = tags.get('k')
  if (k !== undefined && k.toLowerCase() !== 'rsa') return failed(`wrong value: found k=${k} at ${name}; expected k=rsa`)
  const p = (tags.get('p') ?? '').replace(/\s+/g, '')
  if (!p) return failed(`wrong value: found ${show(v)} at ${name} with an empty key (p=), which revokes it`)
  if (p !== expectedKey) {
    if (expectedKey.startsWith(p)) return failed(`wrong value: the key at ${name} is truncated (${p.length} of ${expectedKey.length} characters); publish the whole value, split into strings of at most 255 characters if your DNS host needs it`)
    return failed(`wrong value: found a different key at ${name} (p=${show(p, 40)}); expected the key of selector ${name.split('.')[0]}`)
  }
  return verified()
}

async function checkDkim(dns: Resolver, d: DomainKeyInfo): Promise<Outcome> {
  const name = dkimRecordName(d.selector, d.domain)
  try {
    return checkDkimValues(await dns.resolveTxt(name), d.dkimPublicKey, name)
  } catch (err) {
    return lookupFailure(err, 'TXT', name)
  }
}

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '')

async function checkReturnPathMx(dns: Resolver, domain: string, hostname: string): Promise<Outcome> {
  const name = returnPathDomain(domain)
  try {
    const mx = await dns.resolveMx(name)
    if (mx.nullMx) return failed(`wrong value: ${name} publishes a null MX (accepts no mail); expected MX 10 ${hostname}`)
    const best = mx.records[0].priority
    const ours = mx.records.find((r) => sameHost(r.exchange, hostname))
    const found = mx.records.map((r) => `${r.priority} ${r.exchange}`).join(', ')
    if (!ours) return failed(`wrong value: found MX ${found} at ${name}; expected ${hostname}`)
    if (ours.priority !== best) return failed(`wrong value: found MX ${found} at ${name}; ${hostname} must be the most preferred`)
    return verified()
  } catch (err) {
    return lookupFailure(err, 'MX', name)
  }
}

async function checkSpf(dns: Resolver, domain: string, hostname: string): Promise<Outcome> {
  const name = returnPathDomain(domain)
  let values: string[]
  try {
    values = await dns.resolveTxt(name)
  } catch (err) {
    const out = lookupFailure(err, 'TXT', name)
    return out.definitive ? failed(`missing: no SPF (v=spf1) TXT record at ${name}`) : out
  }
  const spf = values.filter((v) => /^v=spf1(\s|$)/i.test(v.trim()))
  if (!spf.length) return failed(`missing: no SPF (v=spf1) TXT record at ${name}${values.length ? ` (found ${show(values[0])})` : ''}`)
  if (spf.length > 1) return failed(`found ${spf.length} SPF records at ${name}; publish exactly one`)
  const terms = spf[0].trim().split(/\s+/).slice(1).map((t) => t.toLowerCase())
  const host = hostname.toLowerCase()
  const authorises = terms.some((t) => t === `a:${host}` || t === `+a:${host}` || t === `include:${host}` || t === `+include:${host}` || t === 'mx' || t === '+mx')
  if (!authorises) return failed(`wrong value: found ${show(spf[0])} at ${name}, which does not authorise ${hostname}; expected ${JSON.stringify(spfValue(hostname))}`)
  return verified()
}

async function checkDmarc(dns: Resolver, domain: string): Promise<Outcome> {
  // The organisational domain's policy applies to subdomains (RFC 7489 6.6.3); approximated by walking parents.
  const labels = domain.split('.')
  for (let i = 0; i <= labels.length - 2; i++) {
    const name = dmarcRecordName(labels.slice(i).join('.'))
    let values: string[]
    try {
      values = await dns.resolveTxt(name)
    } catch (err) {
      const out = lookupFailure(err, 'TXT', name)
      if (!out.definitive) return out
      continue
    }
    const dmarc = values.filter((v) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(v.trim()))
    if (dmarc.length > 1) return failed(`found ${dmarc.length} DMARC records at ${name}; publish exactly one`)
    if (dmarc.length === 1) {
      const p = parseTags(dmarc[0])?.get('p')
      if (!p || !/^(none|quarantine|reject)$/i.test(p)) return failed(`wrong value: found ${show(dmarc[0])} at ${name}; it needs p=none, quarantine or reject`)
      return verified(i === 0 ? null : `inherited from ${name}`)
    }
    if (i === 0 && values.length) return failed(`wrong value: found ${show(values[0])} at ${name}; expected "v=DMARC1; p=none;"`)
  }
  return failed(`missing: no DMARC record at ${dmarcRecordName(domain)}`)
}

export type CheckResult = Record<Purpose, Outcome>

/** Looks every record up now (in parallel) against `dns`. */
export async function checkRecords(dns: Resolver, d: DomainKeyInfo, hostname: string): Promise<CheckResult> {
  const [DKIM, RETURN_PATH_MX, RETURN_PATH_SPF, DMARC] = await Promise.all([
    checkDkim(dns, d),
    checkReturnPathMx(dns, d.domain, hostname),
    checkSpf(dns, d.domain, hostname),
    checkDmarc(dns, d.domain),
  ])
  return { DKIM, RETURN_PATH_MX, RETURN_PATH_SPF, DMARC }
}
