/**
 * Which recipients the inbound receiver serves (no open relay): decided at RCPT TO.
 *
 * - `b+<emailId>.<tag>@<MAILCTL_HOSTNAME>` (the VERP return path used while a domain's bounce MX is not
 *   verified) with a valid tag, and postmaster@ / abuse@ that host: bounces and feedback reports; also
 *   `u+<emailId>.<tag>@` that host, the List-Unsubscribe mailto (outbound/verp.ts);
 * - any address at `bounce.<domain>` where <domain> is registered in a project (verified or pending):
 *   the return-path subdomain, where DSNs and feedback loop reports arrive;
 * - any address at a verified domain of a project, or a subdomain of one: ordinary inbound mail
 *   (replies), recorded as email.received in that project;
 * - everything else is refused with 550 5.7.1.
 */
import type { Deps } from '../../deps'
import { parseDomain, returnPathDomain } from '../../mail/names'
import { parseUnsubscribeAddress, parseVerp } from '../../mail/outbound/verp'
import { domainOwners } from './repo'

export type Route =
  /** A bounce or feedback address; `projectId` when the domain has one verified owner. */
  | { accept: true; kind: 'bounce'; projectId: string | null }
  /** Mail for a verified domain of `projectId`. */
  | { accept: true; kind: 'domain'; projectId: string; domain: string }
  | { accept: false; code: number; message: string }

const RELAY_DENIED: Route = { accept: false, code: 550, message: '5.7.1 Relaying denied: this server accepts mail only for the domains it serves' }
const NO_SUCH_USER: Route = { accept: false, code: 550, message: '5.1.1 No such user here' }
const SERVICE_LOCAL = new Set(['postmaster', 'abuse'])
const BOUNCE_PREFIX = returnPathDomain('')

/** The domain and each parent with at least two labels, most specific first. */
function candidates(domain: string): string[] {
  const labels = domain.split('.')
  const out: string[] = []
  for (let i = 0; i <= labels.length - 2; i++) out.push(labels.slice(i).join('.'))
  return out
}

export async function routeRecipient(deps: Pick<Deps, 'config' | 'store' | 'secret'>, address: string): Promise<Route> {
  const addr = address.trim().toLowerCase()
  const at = addr.lastIndexOf('@')
  if (at < 1 || at === addr.length - 1) return NO_SUCH_USER
  const local = addr.slice(0, at)
  const parsed = parseDomain(addr.slice(at + 1))
  const ownHost = deps.config.hostname.toLowerCase().replace(/\.$/, '')
  const rawDomain = addr.slice(at + 1).replace(/\.$/, '')
  if (rawDomain === ownHost) {
    if (SERVICE_LOCAL.has(local) || parseVerp(deps, addr) || parseUnsubscribeAddress(deps, addr)) return { accept: true, kind: 'bounce', projectId: null }
    return NO_SUCH_USER
  }
  if (!parsed.ascii) return RELAY_DENIED
  const domain = parsed.ascii
  const names = candidates(domain)
  const bounceParent = domain.startsWith(BOUNCE_PREFIX) ? domain.slice(BOUNCE_PREFIX.length) : null
  const owners = await domainOwners(deps.store, bounceParent ? [...names, bounceParent] : names)
  if (bounceParent) {
    const regs = owners.filter((o) => o.domain === bounceParent)
    if (regs.length) {
      const verified = regs.filter((o) => o.verified)
      return { accept: true, kind: 'bounce', projectId: verified.length === 1 ? verified[0].projectId : null }
    }
  }
  for (const name of names) {
    const owner = owners.find((o) => o.domain === name && o.verified)
    if (owner) return { accept: true, kind: 'domain', projectId: owner.projectId, domain: owner.domain }
  }
  return RELAY_DENIED
}
