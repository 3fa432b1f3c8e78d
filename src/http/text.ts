import { type AppError, badRequest, validation } from '../errors'

/**
 * Text that PostgreSQL cannot store, refused before any query on every route (src/http/app.ts): a NUL
 * character (U+0000: PostgreSQL's `text` and `jsonb` refuse it) and a lone UTF-16 surrogate (half of a
 * character, which has no UTF-8 form). SQLite would store both, so it refuses them too: whatever one store
 * takes, the other takes (a SQLite install can always move to PostgreSQL).
 */
export function isStorableText(s: string): boolean {
  return !s.includes('\0') && (s as unknown as WellFormed).isWellFormed()
}

/** String.prototype.isWellFormed (ES2024, in Bun; not in this project's TypeScript lib). */
interface WellFormed { isWellFormed(): boolean }

/**
 * The path of the first string (key or value) in `value` that is not storable ('' for `value` itself), or
 * null. `value` has passed the depth check (http/depth.ts), so the recursion is bounded.
 */
export function unstorableField(value: unknown): string | null {
  const visit = (v: unknown, path: string): string | null => {
    if (typeof v === 'string') return isStorableText(v) ? null : path
    if (v === null || typeof v !== 'object') return null
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const hit = visit(v[i], path ? `${path}.${i}` : String(i))
        if (hit !== null) return hit
      }
      return null
    }
    // Only plain objects (JSON): files of a form are read by their own routes.
    const proto = Object.getPrototypeOf(v)
    if (proto !== Object.prototype && proto !== null) return null
    for (const k in v) {
      const at = path ? `${path}.${k}` : k
      if (!isStorableText(k)) return at
      const hit = visit((v as Record<string, unknown>)[k], at)
      if (hit !== null) return hit
    }
    return null
  }
  return visit(value, '')
}

const MESSAGE = 'contains a NUL character (\\u0000) or a lone UTF-16 surrogate, which cannot be stored'

/**
 * The error for a request whose URL or body carries unstorable text (null when it has none): 400
 * BAD_REQUEST for the path or the query string (as for any invalid parameter), 422 VALIDATION_ERROR naming
 * the field for a body. A URL whose percent-encoding is not UTF-8 (how a lone surrogate arrives there) is
 * refused the same way.
 */
export function unstorableRequest(url: string, body: unknown): AppError | null {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const target = start < 0 ? '' : url.slice(start)
  if (target.includes('%')) {
    const q = target.indexOf('?')
    if (!storableEncoded(q < 0 ? target : target.slice(0, q))) return badRequest(`The request's path ${MESSAGE}`)
    if (q >= 0 && !storableEncoded(target.slice(q + 1))) return badRequest(`The request's query string ${MESSAGE}`)
  }
  if (body === undefined || body === null) return null
  const field = unstorableField(body)
  if (field === null) return null
  const name = field || 'body'
  return validation([{ field: name, message: `${name}: ${MESSAGE}`, code: 'invalid_text' }], `${name}: ${MESSAGE}`)
}

/** Whether every run of %XX escapes in `raw` decodes to storable UTF-8 text (a lone "%" is left alone). */
function storableEncoded(raw: string): boolean {
  for (const run of raw.match(/(?:%[0-9a-fA-F]{2})+/g) ?? []) {
    let text: string
    try { text = decodeURIComponent(run) } catch { return false }
    if (!isStorableText(text)) return false
  }
  return true
}
