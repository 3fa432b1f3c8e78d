/**
 * The five `data` rules of the contract (docs/decisions.md, Contact data), in one pure function used by every writer of contacts
 * (create, update, track, send, import, workflows):
 * 1. a primitive or plain object value is stored and usable as a template variable;
 * 2. null deletes the field;
 * 3. an empty string is ignored (the stored value stays);
 * 4. `{value, persistent: false}` is used for this request only (template data), never stored;
 * 5. reserved keys are dropped silently.
 * And the limits of `data`, checked here so that every writer shares them (deeper or larger data broke
 * SQLite's JSON functions and PostgreSQL's parser: docs/decisions.md, Contact data): `data` nests at most
 * MAX_DATA_DEPTH levels of objects and arrays (`data` itself the first), and the request's `data` as well as
 * the contact's stored data after the change take at most MAX_DATA_BYTES as compact JSON (UTF-8).
 */

import { validation, type AppError } from '../../errors'
import { isEmail, normalizeEmail } from '../../mail/address'
import { RESERVED_DATA_KEYS } from '../../mail/render/variables'

/** Keys of a contact's data that templates reserve (src/mail/render/variables.ts, where they are defined). */
export { RESERVED_DATA_KEYS }

export type ContactData = Record<string, unknown>

export interface DataPatch {
  /** The data to store (a new object; the input `existing` is not modified). */
  data: ContactData
  /** True when `data` differs from `existing`. */
  changed: boolean
  /** Stored data plus this request's non-persistent values: what templates see. */
  templateData: ContactData
}

/** Levels of objects and arrays in `data`, counting `data` itself (SQLite's JSON functions give up at 1,000). */
export const MAX_DATA_DEPTH = 10
/** Bytes of `data` as compact JSON in UTF-8: per request (contact and event data) and per stored contact. */
export const MAX_DATA_BYTES = 65_536

/** Strings JSON writes as they are, between quotes (printable ASCII except the quote and the backslash). */
const PLAIN_JSON_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** Bytes of `s` as a JSON string, or -1 when it holds U+0000 (which PostgreSQL's jsonb cannot store). */
function jsonStringBytes(s: string): number {
  if (PLAIN_JSON_STRING.test(s)) return s.length + 2
  return s.includes('\0') ? -1 : Buffer.byteLength(JSON.stringify(s))
}

/** Drops what JSON.stringify leaves out of an object (and writes as null in an array). */
function skipped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol'
}

/**
 * The size of `JSON.stringify(value)` in UTF-8 bytes, computed in one iterative walk (no string is built,
 * and a hostile depth cannot overflow the stack), or 'too_deep' as soon as objects and arrays nest deeper
 * than `maxDepth` (`value` itself being level 1), or 'nul' for a string or key holding U+0000. Stops
 * early, returning a size above `maxBytes`, once the size passes it.
 */
export function measureJson(value: unknown, maxDepth: number, maxBytes = Number.POSITIVE_INFINITY): number | 'too_deep' | 'nul' {
  let bytes = 0
  const values: unknown[] = [value]
  const depths: number[] = [0]
  for (let depth = depths.pop(); depth !== undefined; depth = depths.pop()) {
    const v = values.pop()
    switch (typeof v) {
      case 'string': {
        const n = jsonStringBytes(v)
        if (n < 0) return 'nul'
        bytes += n
        break
      }
      case 'number': bytes += Number.isFinite(v) ? String(v).length : 4; break
      case 'boolean': bytes += v ? 4 : 5; break
      case 'bigint': bytes += String(v).length; break
      case 'object': {
        if (v === null) { bytes += 4; break }
        if (depth >= maxDepth) return 'too_deep'
        if (Array.isArray(v)) {
          bytes += v.length ? v.length + 1 : 2
          for (let i = v.length - 1; i >= 0; i--) {
            values.push(skipped(v[i]) ? null : v[i])
            depths.push(depth + 1)
          }
        } else if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
          // Dates and the like (never from a JSON body): as JSON.stringify writes them.
          bytes += Buffer.byteLength(JSON.stringify(v) ?? 'null')
        } else {
          let n = 0
          for (const key of Object.keys(v)) {
            const x = (v as Record<string, unknown>)[key]
            if (skipped(x)) continue
            const k = jsonStringBytes(key)
            if (k < 0) return 'nul'
            n++
            bytes += k + 1
            values.push(x)
            depths.push(depth + 1)
          }
          bytes += n ? n + 1 : 2
        }
        break
      }
      default: bytes += 4 // undefined, a function or a symbol where JSON expects a value: null
    }
    if (bytes > maxBytes) return bytes
  }
  return bytes
}

/** The 422 for data deeper than MAX_DATA_DEPTH. */
function tooDeep(): AppError {
  const message = `data: objects and arrays may nest at most ${MAX_DATA_DEPTH} levels deep (data itself is the first)`
  return validation([{ field: 'data', message, code: 'too_deep' }], message)
}

/** The 422 for data over MAX_DATA_BYTES: the request's own, or the contact's after the change. */
function tooBig(stored: boolean): AppError {
  const message = stored
    ? `data: the contact's data would grow past the limit of ${MAX_DATA_BYTES} bytes as JSON (delete fields with null to make room)`
    : `data: takes more than the limit of ${MAX_DATA_BYTES} bytes as JSON`
  return validation([{ field: 'data', message, code: 'too_big' }], message)
}

/**
 * Throws the 422 VALIDATION_ERROR (field `data`, code too_deep, too_big or invalid_string) when `data` of a
 * request breaks the limits. `applyDataRules` calls it for every writer; track and send call it first,
 * before any other work (before an Idempotency-Key is claimed, before the track writer thread gets the write).
 */
export function checkDataLimits(data: unknown): void {
  if (data === null || typeof data !== 'object') return
  const size = measureJson(data, MAX_DATA_DEPTH, MAX_DATA_BYTES)
  if (size === 'too_deep') throw tooDeep()
  if (size === 'nul') {
    const message = 'data: strings and keys may not contain the NUL character (\\u0000)'
    throw validation([{ field: 'data', message, code: 'invalid_string' }], message)
  }
  if (size > MAX_DATA_BYTES) throw tooBig(false)
}

/** True for the errors of `checkDataLimits` and `applyDataRules` (a bad row of an import, not a failed batch). */
export function isDataLimitError(err: unknown): err is AppError {
  const e = err as AppError | null
  return e?.code === 'VALIDATION_ERROR' && e.opts.errors?.[0]?.field === 'data' && ['too_deep', 'too_big', 'invalid_string'].includes(e.opts.errors[0].code)
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/**
 * `{value, persistent}` wrapper (rule 4). `persistent: true` stores `value` like a plain value; the wrapper
 * is recognised only when it has exactly these two keys and `persistent` is a boolean.
 */
function unwrap(v: unknown): { value: unknown; persistent: boolean } | null {
  if (!isPlainObject(v)) return null
  const keys = Object.keys(v)
  if (keys.length !== 2 || !('value' in v) || typeof v.persistent !== 'boolean') return null
  return { value: v.value, persistent: v.persistent }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false
  return JSON.stringify(a) === JSON.stringify(b)
}

/**
 * Applies `input` to `existing` by the five rules, within the limits: throws the 422 of `checkDataLimits`
 * for `input` (unless `inputChecked`: the caller ran it already), and a too_big 422 when the stored data
 * would grow past MAX_DATA_BYTES (data already over it, stored before the limits, may still shrink).
 */
export function applyDataRules(existing: ContactData, input: ContactData | null | undefined, inputChecked = false): DataPatch {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return { data: existing, changed: false, templateData: existing }
  if (!inputChecked) checkDataLimits(input)
  let data: ContactData | null = null
  let transient: ContactData | null = null
  const write = () => (data ??= { ...existing })
  for (const key of Object.keys(input)) {
    if (RESERVED_DATA_KEYS.has(key) || key === '__proto__') continue
    let value = input[key]
    if (value === undefined || value === '') continue
    const wrapped = unwrap(value)
    if (wrapped) {
      if (!wrapped.persistent) {
        if (wrapped.value !== undefined && wrapped.value !== '') {
          transient ??= {}
          transient[key] = wrapped.value
        }
        continue
      }
      value = wrapped.value
      if (value === undefined || value === '') continue
    }
    if (value === null) {
      if (key in (data ?? existing)) delete write()[key]
      continue
    }
    if (!sameValue((data ?? existing)[key], value)) write()[key] = value
  }
  if (data !== null) checkStoredSize(existing, data)
  const stored = data ?? existing
  return { data: stored, changed: data !== null, templateData: transient ? { ...stored, ...transient } : stored }
}

/**
 * The contact's data after a change stays within MAX_DATA_BYTES. The input alone was within it, so only a
 * change that adds to existing fields needs the walk; the depth of stored data is not checked again (the
 * input's depth was, and data stored before the limits must not block unrelated changes).
 */
function checkStoredSize(existing: ContactData, next: ContactData) {
  let some = false
  for (const _ in existing) { some = true; break }
  if (!some) return
  const size = measureJson(next, Number.POSITIVE_INFINITY, MAX_DATA_BYTES)
  // 'nul' comes only from data stored before the limits (the input was checked): not judged here.
  if (typeof size !== 'number' || size <= MAX_DATA_BYTES) return
  const after = measureJson(next, Number.POSITIVE_INFINITY) as number
  const before = measureJson(existing, Number.POSITIVE_INFINITY) as number
  if (after > before) throw tooBig(true)
}

/** Address syntax lives with the mail layer (src/mail/address.ts); contacts use the same rules. */
export { isEmail, normalizeEmail }
