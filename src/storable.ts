import { type AppError, validation } from './errors'

/**
 * What both stores can hold, so that whatever one takes the other takes too (a SQLite install can always
 * move to PostgreSQL): input outside it is refused before any query (400/422), on both stores.
 *
 * - Text: no NUL character (U+0000: PostgreSQL's `text` and `jsonb` refuse it) and no lone UTF-16
 *   surrogate (half of a character, which has no UTF-8 form). SQLite would store both.
 * - Instants: years 0001 to 9999. PostgreSQL reads a timestamp sent as ISO-8601 text, and
 *   Date.prototype.toISOString writes other years as `+010000-…` or `-000001-…`, which it refuses, as it
 *   refuses the year 0000; SQLite would store any number.
 */

/** What an error about such text says of it. */
export const UNSTORABLE = 'contains a NUL character (\\u0000) or a lone UTF-16 surrogate, which cannot be stored'

export function isStorableText(s: string): boolean {
  return !s.includes('\0') && (s as unknown as WellFormed).isWellFormed()
}

/** String.prototype.isWellFormed (ES2024, in Bun; not in this project's TypeScript lib). */
interface WellFormed { isWellFormed(): boolean }

/**
 * The path of the first string (key or value) in `value` that is not storable ('' for `value` itself), or
 * null. Plain objects and arrays only (JSON); the depth of input was bounded before (http/depth.ts).
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

/**
 * The 422 VALIDATION_ERROR (field code `invalid_text`, naming the first such string's path) for input that
 * holds text no store can hold, or null: the same for a request body (src/http/text.ts), an MCP tool's
 * arguments and the CLI's input.
 */
export function unstorableInput(value: unknown): AppError | null {
  const field = unstorableField(value)
  if (field === null) return null
  const name = field || 'body'
  return validation([{ field: name, message: `${name}: ${UNSTORABLE}`, code: 'invalid_text' }], `${name}: ${UNSTORABLE}`)
}

/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z in epoch milliseconds: the instants both stores take. */
export const MIN_TIME_MS = -62_135_596_800_000
export const MAX_TIME_MS = 253_402_300_799_999

/** Whether `ms` (epoch milliseconds) is an instant both stores take. */
export function isStorableTime(ms: number): boolean {
  return Number.isFinite(ms) && ms >= MIN_TIME_MS && ms <= MAX_TIME_MS
}

/** Where an instant is read back into the range (a derived bound, such as the end of the day 9999-12-31). */
export function clampTime(ms: number): number {
  return Math.min(MAX_TIME_MS, Math.max(MIN_TIME_MS, ms))
}

/**
 * `s` cut to at most `max` UTF-16 code units, never between the two halves of a surrogate pair: a cut there
 * leaves a lone surrogate, which PostgreSQL cannot store (an emoji at the limit of a bounce's diagnostic).
 */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s
  const last = s.charCodeAt(max - 1)
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max)
}

/**
 * `value` with every string in it (keys too) made storable: each NUL and lone surrogate becomes U+FFFD.
 * Only for text that can no longer be refused, read from something already accepted (a received
 * message, answered 250 before it was parsed): it is kept, changed as little as it can be. Plain objects
 * and arrays are copied; other objects (a Date) are kept as they are.
 */
export function storableCopy<T>(value: T): T {
  const fix = (s: string) => (isStorableText(s) ? s : (s.replaceAll('\0', '\uFFFD') as unknown as WellFormedCopy).toWellFormed())
  const visit = (v: unknown): unknown => {
    if (typeof v === 'string') return fix(v)
    if (v === null || typeof v !== 'object') return v
    if (Array.isArray(v)) return v.map(visit)
    const proto = Object.getPrototypeOf(v)
    if (proto !== Object.prototype && proto !== null) return v
    const out: Record<string, unknown> = {}
    // defineProperty: a "__proto__" key read from JSON stays a key (an assignment would set the prototype).
    for (const [k, x] of Object.entries(v)) Object.defineProperty(out, fix(k), { value: visit(x), enumerable: true, writable: true, configurable: true })
    return out
  }
  return visit(value) as T
}

/** String.prototype.toWellFormed (ES2024, in Bun; not in this project's TypeScript lib). */
interface WellFormedCopy { toWellFormed(): string }
