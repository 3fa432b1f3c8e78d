/**
 * Headers a tenant may not set on its mail, on POST /v1/send and through the SMTP relay:
 * the ones receivers read as the platform's word about trust (authentication results, signatures, the
 * sending project's Feedback-ID) or about where mail goes and came from (resent, return and delivery
 * traces). Setting them would let one project speak for another, or for the platform. Each is refused
 * with a 422 naming it. List-Unsubscribe and List-Unsubscribe-Post are the platform's one-click link on
 * marketing mail: a tenant may set them on transactional mail only.
 */
const TRUST_AND_ROUTING = new Set([
  'feedback-id', 'authentication-results', 'arc-authentication-results', 'arc-message-signature', 'arc-seal',
  'received-spf', 'dkim-signature', 'domainkey-signature', 'x-google-dkim-signature', 'received', 'return-path',
  'delivered-to', 'x-original-to', 'envelope-to', 'errors-to', 'x-mailctl-relay', 'sender',
])
const REFUSED_PREFIXES = ['resent-', 'arc-', 'x-mailctl-']
const LIST_UNSUBSCRIBE = new Set(['list-unsubscribe', 'list-unsubscribe-post'])

/** Why a tenant may not set header `name` on mail of `type`, or null when it may. */
export function refusedHeader(name: string, type: 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS'): string | null {
  const lower = name.toLowerCase()
  if (TRUST_AND_ROUTING.has(lower) || REFUSED_PREFIXES.some((p) => lower.startsWith(p))) {
    return `${name} is a trust or routing header that only the server sets`
  }
  if (LIST_UNSUBSCRIBE.has(lower) && type !== 'TRANSACTIONAL') {
    return `${name} is set by the server on ${type.toLowerCase()} mail (its one-click unsubscribe link); only transactional mail may carry its own`
  }
  return null
}
