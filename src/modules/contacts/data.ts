/**
 * The five `data` rules of API.md (Contact), in one pure function used by every writer of contacts
 * (create, update, track, send, import, workflows):
 * 1. a primitive or plain object value is stored and usable as a template variable;
 * 2. null deletes the field;
 * 3. an empty string is ignored (the stored value stays);
 * 4. `{value, persistent: false}` is used for this request only (template data), never stored;
 * 5. reserved keys are dropped silently.
 */

export const RESERVED_DATA_KEYS: ReadonlySet<string> = new Set([
  'id', 'service_id', 'service_email', 'email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl',
])

export type ContactData = Record<string, unknown>

export interface DataPatch {
  /** The data to store (a new object; the input `existing` is not modified). */
  data: ContactData
  /** True when `data` differs from `existing`. */
  changed: boolean
  /** Stored data plus this request's non-persistent values: what templates see. */
  templateData: ContactData
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

/** Applies `input` to `existing` by the five rules. */
export function applyDataRules(existing: ContactData, input: ContactData | null | undefined): DataPatch {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return { data: existing, changed: false, templateData: existing }
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
        if (wrapped.value !== undefined && wrapped.value !== '') (transient ??= {})[key] = wrapped.value
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
  const stored = data ?? existing
  return { data: stored, changed: data !== null, templateData: transient ? { ...stored, ...transient } : stored }
}

/** Trims and lower-cases an email address (DECISIONS.md: before storage and comparison). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** The email syntax HTTP bodies are validated with (Elysia's `format: 'email'`), for inputs that do not come through HTTP. */
const EMAIL_RE = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i

export function isEmail(email: string): boolean {
  return email.length <= 320 && EMAIL_RE.test(email)
}
