/**
 * Direct delivery never connects to internal addresses: an MX host (or implicit MX) that
 * resolves to a loopback, private, link-local, metadata or other refused address (src/net/address-guard.ts,
 * the check customer webhooks get) is not tried, so an internal server's banner and replies never reach a
 * tenant through `/emails/:id/attempts`. Public addresses of the same route are still tried. When nothing
 * is left, the email bounces at once with the reason (550 5.4.4, "unable to route"); the address is not
 * suppressed, since the fault is the domain's DNS, not the mailbox. The operator can allow hosts, addresses
 * or CIDR ranges with MAILCTL_DELIVERY_ALLOW_HOSTS (the test suites allow 127.0.0.0/8 for their sinks).
 */
import { forbiddenReason, isAllowedAddress, isAllowedHost, type ForbiddenReason } from '../../net/address-guard'
import { RouteError, type MxHost } from './mx'
import { parseReply } from './replies'

export interface RefusedTarget { host: string; address: string; reason: ForbiddenReason }

/** The hosts and addresses of a route that may be connected to, and those refused. */
export function allowedTargets(hosts: readonly MxHost[], allow: readonly string[]): { hosts: MxHost[]; refused: RefusedTarget[] } {
  const kept: MxHost[] = []
  const refused: RefusedTarget[] = []
  for (const h of hosts) {
    if (isAllowedHost(h.name, allow)) { kept.push(h); continue }
    const addresses: string[] = []
    for (const address of h.addresses) {
      const reason = forbiddenReason(address)
      if (reason && !isAllowedAddress(address, allow)) refused.push({ host: h.name, address, reason })
      else addresses.push(address)
    }
    if (addresses.length) kept.push({ name: h.name, addresses })
  }
  return { hosts: kept, refused }
}

/**
 * The route to deliver `domain` over: `hosts` without refused targets. Throws a permanent RouteError
 * (not suppressing) when every target is refused.
 */
export function guardRoute(domain: string, hosts: readonly MxHost[], allow: readonly string[]): MxHost[] {
  const r = allowedTargets(hosts, allow)
  if (r.hosts.length) return r.hosts
  const shown = r.refused.slice(0, 3).map((t) => `${t.host} ${t.address}: ${t.reason}`).join('; ')
  throw new RouteError(true, parseReply(
    `550 5.4.4 Not delivered: the mail servers of ${domain} resolve only to internal addresses (${shown}), which this server does not deliver to`,
  ), false)
}
