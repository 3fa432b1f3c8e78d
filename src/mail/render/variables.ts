/**
 * The variables a template can reference: the contact's stored data overlaid by the request's data,
 * the contact's `email` and `id`, and the message URLs. Values are deep-copied plain data, so nothing a
 * template reaches can be a function, a prototype or a mark character of the text derivation.
 */
import { MARK_CHARS, MARK_CHARS_G } from './marks'
import type { TemplateVars } from './sandbox'

/**
 * Keys of a contact's data that templates reserve: the contact's own fields and the message URLs are never
 * read from data (contacts refuse them as field names; src/modules/contacts/data.ts re-exports this set).
 */
export const RESERVED_DATA_KEYS: ReadonlySet<string> = new Set([
  'id', 'service_id', 'service_email', 'email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl',
])


export interface MessageUrls { unsubscribeUrl?: string; subscribeUrl?: string; manageUrl?: string }

/** `{value, persistent}`: a request-only (persistent: false) or stored value, docs/decisions.md, Contact data, rule 4. */
function unwrapDataValue(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>
    const keys = Object.keys(o)
    if ('value' in o && typeof o.persistent === 'boolean' && keys.length === 2) return o.value
  }
  return v
}

/**
 * Keys never copied into variables: `__proto__` would set a prototype, and own `toString`, `valueOf` or
 * `toHTML` values would make Handlebars' string conversion of the object throw at send time.
 */
const UNSAFE_KEYS = new Set(['__proto__', 'toString', 'valueOf', 'toHTML'])

/** A deep copy of JSON-like data: no functions, no unsafe keys, dates as ISO strings, bounded depth. */
function plain(v: unknown, depth = 0): unknown {
  // The characters that mark constructs in derived text templates never come from data.
  if (typeof v === 'string') return MARK_CHARS.test(v) ? v.replace(MARK_CHARS_G, '') : v
  if (v === null || typeof v !== 'object') return typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint' ? undefined : v
  if (depth > 32) return undefined
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1))
  if (v instanceof Date) return v.toISOString()
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v)) {
    if (!UNSAFE_KEYS.has(k)) out[k] = plain((v as Record<string, unknown>)[k], depth + 1)
  }
  return out
}

/**
 * The variables of one message: the contact's stored data, overlaid by the request's `data`
 * (`{value, persistent: false}` unwrapped; null removes a value for this message; an empty string
 * keeps the contact's value), then `email` and `id` of the contact and the message URLs.
 * Reserved keys coming from data are dropped.
 */
export function templateVariables(input: {
  contact?: { id?: string | null; email?: string | null; data?: Record<string, unknown> | null } | null
  data?: Record<string, unknown> | null
  urls?: MessageUrls | null
}): TemplateVars {
  const vars: TemplateVars = {}
  const contactData = input.contact?.data ?? {}
  for (const k of Object.keys(contactData)) {
    if (!RESERVED_DATA_KEYS.has(k) && !UNSAFE_KEYS.has(k)) vars[k] = plain(contactData[k])
  }
  const data = input.data ?? {}
  for (const k of Object.keys(data)) {
    if (RESERVED_DATA_KEYS.has(k) || UNSAFE_KEYS.has(k)) continue
    const v = unwrapDataValue(data[k])
    if (v === '' || v === undefined) continue
    if (v === null) { delete vars[k]; continue }
    vars[k] = plain(v)
  }
  if (input.contact?.email) vars.email = plain(input.contact.email)
  if (input.contact?.id) vars.id = plain(input.contact.id)
  const urls = input.urls ?? {}
  for (const k of ['unsubscribeUrl', 'subscribeUrl', 'manageUrl'] as const) {
    if (urls[k]) vars[k] = plain(urls[k])
  }
  return vars
}
