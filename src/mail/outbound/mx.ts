/**
 * Where direct delivery goes for a recipient domain (RFC 5321 section 5): its MX hosts in preference
 * order, else the domain itself (implicit MX) when it has no MX record; each host with its IPv4 then
 * IPv6 addresses. A null MX (RFC 7505) or a domain that does not exist is a permanent failure; a DNS
 * failure without a definitive answer is temporary.
 */
import { isDnsError, type Resolver } from '../../dns'
import { parseReply, type SmtpReply } from './replies'

export interface MxHost { name: string; addresses: string[] }

export class RouteError extends Error {
  /** `suppress`: a permanent failure about the address itself (no such domain, null MX): suppress it. */
  constructor(readonly permanent: boolean, readonly reply: SmtpReply, readonly suppress = permanent) {
    super(reply.text)
  }
}

const temporary = (text: string) => new RouteError(false, parseReply(`451 4.4.3 ${text}`))
const permanent = (text: string, code = '550 5.1.2') => new RouteError(true, parseReply(`${code} ${text}`))

async function addressesOf(resolver: Resolver, host: string): Promise<{ addresses: string[]; temporaryError: boolean }> {
  const [a, aaaa] = await Promise.allSettled([resolver.resolveA(host), resolver.resolveAAAA(host)])
  const addresses = [...(a.status === 'fulfilled' ? a.value : []), ...(aaaa.status === 'fulfilled' ? aaaa.value : [])]
  const temporaryError = [a, aaaa].some((r) => r.status === 'rejected' && !(isDnsError(r.reason) && !r.reason.temporary))
  return { addresses, temporaryError }
}

/** The hosts to try for `domain`, best first. Throws RouteError. */
export async function resolveRoute(resolver: Resolver, domain: string): Promise<MxHost[]> {
  let names: string[]
  let implicit = false
  try {
    const mx = await resolver.resolveMx(domain)
    if (mx.nullMx && !mx.records.length) throw permanent(`Domain ${domain} does not accept mail (null MX)`, '556 5.1.10')
    names = mx.records.map((r) => r.exchange.replace(/\.$/, '').toLowerCase())
    if (!names.length) { names = [domain]; implicit = true }
  } catch (err) {
    if (err instanceof RouteError) throw err
    if (!isDnsError(err)) throw temporary(`MX look-up for ${domain} failed: ${err instanceof Error ? err.message : String(err)}`)
    if (err.code === 'NXDOMAIN') throw permanent(`Domain ${domain} does not exist`)
    if (err.code === 'BADNAME') throw permanent(`Invalid recipient domain ${domain}`, '553 5.1.3')
    if (err.code !== 'NODATA') throw temporary(`MX look-up for ${domain} failed: ${err.code}`)
    names = [domain]
    implicit = true
  }
  const hosts: MxHost[] = []
  let sawTemporary = false
  for (const name of names) {
    const r = await addressesOf(resolver, name)
    if (r.temporaryError) sawTemporary = true
    if (r.addresses.length) hosts.push({ name, addresses: r.addresses })
  }
  if (hosts.length) return hosts
  if (sawTemporary) throw temporary(`No address could be looked up for the mail servers of ${domain}`)
  if (implicit) throw permanent(`Domain ${domain} has no mail server (no MX, A or AAAA record)`)
  // MX records that name hosts without addresses: a broken but possibly transient configuration.
  throw temporary(`The mail servers of ${domain} (${names.join(', ')}) have no address`)
}
