import type { FieldError } from '../errors'
import { isStorableTime } from '../storable'
import { OPERATORS_BY_KIND, parseField, type ParsedField } from './fields'
import {
  LOGICS, MAX_DEPTH, MAX_FILTERS, MAX_STRING_VALUE, MAX_WINDOW_MS, OPERATORS, UNIT_MS, UNITS,
  type CheckedTree, type Comparable, type CompareOp, type Filter, type FilterGroup, type FilterTree, type Logic, type Operator,
  type Predicate, type Unit,
} from './types'

/**
 * Validates a filter tree as clients send it and turns it into the checked form the compiler reads.
 * Every problem is reported with the path of the bad part (`condition.groups.0.filters.1.operator`),
 * never silently ignored. Segment references are checked later (they need the database): see prepare.ts.
 */

const ISO_DATE = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(\.\d{1,9})?)?(Z|z|([+-])([01]\d):([0-5]\d))?)?$/
const JSON_NUMBER = /^\s*-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d{1,4})?\s*$/

/**
 * Milliseconds since the epoch of an ISO-8601 date ('YYYY-MM-DD') or date-time ('YYYY-MM-DDTHH:MM[:SS[.fff]]',
 * optional 'Z' or '+HH:MM'; no offset means UTC). The same grammar the stores apply to stored values
 * (SQLite unixepoch(), PostgreSQL mailctl_date_ms()). Null for anything else.
 */
export function parseIsoDate(s: string): { ms: number; dayOnly: boolean } | null {
  const m = ISO_DATE.exec(s)
  if (!m) return null
  const [, y, mo, d, h, mi, sec, frac, zone, sign, zh, zm] = m
  let ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(sec ?? 0))
  if (Number(y) < 100) ms = new Date(ms).setUTCFullYear(Number(y))
  if (frac) ms += Number(`0${frac}`) * 1000
  if (zone && sign) ms -= (sign === '-' ? -1 : 1) * (Number(zh) * 60 + Number(zm)) * 60_000
  return { ms, dayOnly: h === undefined }
}

/** Stored numbers read as dates are epoch milliseconds, or epoch seconds when below 1e11 (before 1973 in ms). */
export const EPOCH_SECONDS_BELOW = 1e11

function epochMs(n: number): number {
  return Math.abs(n) < EPOCH_SECONDS_BELOW ? n * 1000 : n
}

class Checker {
  errors: FieldError[] = []
  filters = 0

  fail(field: string, message: string, code: string, received?: unknown) {
    this.errors.push({ field, message: `${field}: ${message}`, code, ...(received !== undefined ? { received } : {}) })
  }

  tree(raw: unknown, path: string, depth: number): CheckedTree | null {
    if (depth > MAX_DEPTH) {
      this.fail(path, `filter trees nest at most ${MAX_DEPTH} levels deep`, 'too_deep')
      return null
    }
    if (!isObject(raw)) {
      this.fail(path, 'a filter tree is an object {logic, groups}', 'invalid_type', raw)
      return null
    }
    let logic: Logic = 'AND'
    if (raw.logic !== undefined && raw.logic !== null) {
      if (typeof raw.logic !== 'string' || !(LOGICS as readonly string[]).includes(raw.logic.toUpperCase())) {
        this.fail(`${path}.logic`, `logic is AND or OR`, 'invalid_enum_value', raw.logic)
      } else logic = raw.logic.toUpperCase() as Logic
    }
    if (!Array.isArray(raw.groups)) {
      this.fail(`${path}.groups`, 'groups is an array of {filters, conditions?}', raw.groups === undefined ? 'required' : 'invalid_type', raw.groups)
      return null
    }
    const groups: CheckedTree['groups'] = []
    raw.groups.forEach((g: unknown, i: number) => {
      const gp = `${path}.groups.${i}`
      if (!isObject(g)) { this.fail(gp, 'a group is an object {filters, conditions?}', 'invalid_type', g); return }
      const predicates: Predicate[] = []
      if (g.filters !== undefined && g.filters !== null) {
        if (!Array.isArray(g.filters)) this.fail(`${gp}.filters`, 'filters is an array', 'invalid_type', g.filters)
        else g.filters.forEach((f: unknown, j: number) => {
          const p = this.filter(f, `${gp}.filters.${j}`)
          if (p) predicates.push(p)
        })
      }
      let conditions: CheckedTree | null = null
      if (g.conditions !== undefined && g.conditions !== null) conditions = this.tree(g.conditions, `${gp}.conditions`, depth + 1)
      groups.push({ predicates, conditions })
    })
    return { logic, groups }
  }

  filter(raw: unknown, path: string): Predicate | null {
    if (++this.filters === MAX_FILTERS + 1) this.fail(path, `a filter tree holds at most ${MAX_FILTERS} filters`, 'too_big')
    if (!isObject(raw)) { this.fail(path, 'a filter is an object {field, operator, value?, unit?}', 'invalid_type', raw); return null }
    if (typeof raw.field !== 'string' || !raw.field) {
      this.fail(`${path}.field`, 'field is required (a string)', raw.field === undefined ? 'required' : 'invalid_type', raw.field)
      return null
    }
    const field = parseField(raw.field)
    if (typeof field === 'string') { this.fail(`${path}.field`, `${field}`, 'unknown_field', raw.field); return null }
    if (typeof raw.operator !== 'string' || !(OPERATORS as readonly string[]).includes(raw.operator)) {
      this.fail(`${path}.operator`, raw.operator === undefined ? 'operator is required' : `unknown operator; expected one of ${OPERATORS.join(', ')}`,
        raw.operator === undefined ? 'required' : 'unknown_operator', raw.operator)
      return null
    }
    const op = raw.operator as Operator
    const allowed = OPERATORS_BY_KIND[field.kind]
    if (!allowed.includes(op)) {
      this.fail(`${path}.operator`, `operator ${op} does not apply to ${raw.field}; expected one of ${allowed.join(', ')}`, 'unknown_operator', op)
      return null
    }
    return this.predicate(field, op, raw.value, raw.unit, path)
  }

  /** A time window: value N (> 0) of unit (minutes, hours or days; days when omitted). */
  window(value: unknown, unit: unknown, path: string): number | null {
    let u: Unit = 'days'
    if (unit !== undefined && unit !== null) {
      if (typeof unit !== 'string' || !(UNITS as readonly string[]).includes(unit)) {
        this.fail(`${path}.unit`, `unit is one of ${UNITS.join(', ')}`, 'invalid_enum_value', unit)
        return null
      }
      u = unit as Unit
    }
    const n = toNumber(value)
    if (n === null || n <= 0) { this.fail(`${path}.value`, 'value is a number greater than 0 (how many units)', 'invalid_type', value); return null }
    const ms = n * UNIT_MS[u]
    if (ms > MAX_WINDOW_MS) { this.fail(`${path}.value`, 'the time window is at most 100 years', 'too_big', value); return null }
    return ms
  }

  noUnit(unit: unknown, op: string, path: string): boolean {
    if (unit === undefined || unit === null) return true
    this.fail(`${path}.unit`, `unit does not apply to ${op}`, 'unexpected', unit)
    return false
  }

  string(value: unknown, path: string): string | null {
    if (typeof value !== 'string') { this.fail(`${path}.value`, 'value is a string', 'invalid_type', value); return null }
    if (value.length > MAX_STRING_VALUE) { this.fail(`${path}.value`, `value has at most ${MAX_STRING_VALUE} characters`, 'too_big'); return null }
    if (value.includes('\u0000')) { this.fail(`${path}.value`, 'value cannot contain a NUL character', 'invalid_string'); return null }
    return value
  }

  boolean(value: unknown, path: string): boolean | null {
    if (typeof value !== 'boolean') { this.fail(`${path}.value`, 'value is true or false', 'invalid_type', value); return null }
    return value
  }

  date(value: unknown, path: string): (Comparable & { type: 'date' }) | null {
    const d = typeof value === 'number' && Number.isFinite(value)
      ? { ms: epochMs(value), dayOnly: false }
      : typeof value === 'string' ? parseIsoDate(value) : null
    if (!d) { this.fail(`${path}.value`, 'value is an ISO-8601 date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ) or epoch milliseconds', 'invalid_date', value); return null }
    // A column's date is compared with a timestamp on PostgreSQL: outside the years it holds, a 422 here
    // instead of its error (the same on SQLite, which would compare any number).
    if (!isStorableTime(d.ms)) { this.fail(`${path}.value`, 'value is a date in the years 0001 to 9999', 'invalid_date', value); return null }
    return { type: 'date', ...d }
  }

  predicate(f: ParsedField, op: Operator, value: unknown, unit: unknown, path: string): Predicate | null {
    const isWindowOp = op === 'within' || op === 'olderThan' || op === 'triggeredWithin' || op === 'notTriggeredWithin'
    if (!isWindowOp && !this.noUnit(unit, op, path)) return null
    switch (f.kind) {
      case 'email': {
        const s = this.string(value, path)
        return s === null ? null : { kind: 'email', op: op as 'equals', value: s.trim().toLowerCase() }
      }
      case 'subscribed': {
        const b = this.boolean(value, path)
        return b === null ? null : { kind: 'subscribed', op: op as 'equals', value: b }
      }
      case 'date': {
        if (op === 'within' || op === 'olderThan') {
          const w = this.window(value, unit, path)
          return w === null ? null : { kind: 'column-window', column: f.column, op, windowMs: w }
        }
        const d = this.date(value, path)
        return d === null ? null : { kind: 'column-date', column: f.column, op: op as CompareOp, value: d }
      }
      case 'data': return this.dataPredicate(f.path, op, value, unit, path)
      case 'event':
      case 'emailActivity': {
        const name = f.kind === 'event' ? f.name : f.event
        if (op === 'equals' || op === 'notEquals') {
          const b = this.boolean(value, path)
          if (b === null) return null
          return { kind: 'event', name, op: b === (op === 'equals') ? 'triggered' : 'notTriggered' }
        }
        if (op === 'triggered' || op === 'notTriggered') return { kind: 'event', name, op }
        if (op === 'triggeredWithin' || op === 'notTriggeredWithin') {
          const w = this.window(value, unit, path)
          return w === null ? null : { kind: 'event', name, op, windowMs: w }
        }
        const n = toNumber(value)
        if (n === null || !Number.isInteger(n) || n < 0) { this.fail(`${path}.value`, 'value is a whole number >= 0 (the event count to exceed)', 'invalid_type', value); return null }
        // A count is compared in SQL as a 64-bit integer: 1e308 is whole, but no store can take it.
        if (n > Number.MAX_SAFE_INTEGER) { this.fail(`${path}.value`, `value is at most ${Number.MAX_SAFE_INTEGER} (the event count to exceed)`, 'too_big', value); return null }
        return { kind: 'event', name, op: 'triggeredMoreThan', count: n }
      }
      case 'segment': return { kind: 'segment', segmentId: f.segmentId, op: op as 'memberOfSegment' }
    }
  }

  dataPredicate(dataPath: string[], op: Operator, value: unknown, unit: unknown, path: string): Predicate | null {
    switch (op) {
      case 'exists': case 'notExists': return { kind: 'data', path: dataPath, op }
      case 'within': case 'olderThan': {
        const w = this.window(value, unit, path)
        return w === null ? null : { kind: 'data-window', path: dataPath, op, windowMs: w }
      }
      case 'contains': case 'notContains': {
        const s = this.string(value, path)
        return s === null ? null : { kind: 'data', path: dataPath, op, value: { type: 'string', s } }
      }
      case 'equals': case 'notEquals': {
        let v: Comparable | null = null
        if (typeof value === 'boolean') v = { type: 'boolean', b: value }
        else if (typeof value === 'number' && Number.isFinite(value)) v = { type: 'number', n: value }
        else if (typeof value === 'string') {
          const s = this.string(value, path)
          if (s === null) return null
          const d = parseIsoDate(s)
          v = d ? { type: 'date', ...d } : { type: 'string', s }
        }
        if (!v) { this.fail(`${path}.value`, 'value is a string, a number or a boolean', 'invalid_type', value); return null }
        return { kind: 'data', path: dataPath, op, value: v }
      }
      case 'greaterThan': case 'lessThan': case 'greaterThanOrEqual': case 'lessThanOrEqual': {
        if (typeof value === 'number' && Number.isFinite(value)) return { kind: 'data', path: dataPath, op, value: { type: 'number', n: value } }
        if (typeof value === 'string') {
          if (JSON_NUMBER.test(value)) return { kind: 'data', path: dataPath, op, value: { type: 'number', n: Number(value) } }
          const d = parseIsoDate(value)
          if (d) return { kind: 'data', path: dataPath, op, value: { type: 'date', ...d } }
        }
        this.fail(`${path}.value`, 'value is a number or an ISO-8601 date', 'invalid_type', value)
        return null
      }
      default:
        this.fail(`${path}.operator`, `operator ${op} does not apply to data fields`, 'unknown_operator', op)
        return null
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v === 'string' && JSON_NUMBER.test(v)) return Number(v)
  return null
}

/** Checks `raw` (the tree at `path`); returns the checked tree or the field errors (never both). */
export function checkTree(raw: unknown, path = 'condition'): { tree: CheckedTree; errors: [] } | { tree: null; errors: FieldError[] } {
  const c = new Checker()
  const tree = c.tree(raw, path, 1)
  if (c.errors.length || !tree) return { tree: null, errors: c.errors.length ? c.errors : [{ field: path, message: `${path}: invalid filter tree`, code: 'invalid_type' }] }
  return { tree, errors: [] }
}

/** Every segment id the tree references, with the path of the filter that names it. */
export function segmentRefs(raw: unknown, path = 'condition'): Array<{ segmentId: string; path: string }> {
  const out: Array<{ segmentId: string; path: string }> = []
  const walk = (t: unknown, p: string, depth: number) => {
    if (!isObject(t) || !Array.isArray(t.groups) || depth > MAX_DEPTH) return
    t.groups.forEach((g: unknown, i: number) => {
      if (!isObject(g)) return
      if (Array.isArray(g.filters)) g.filters.forEach((f: unknown, j: number) => {
        if (isObject(f) && typeof f.field === 'string' && f.field.startsWith('segment.')) out.push({ segmentId: f.field.slice(8), path: `${p}.groups.${i}.filters.${j}` })
      })
      if (g.conditions) walk(g.conditions, `${p}.groups.${i}.conditions`, depth + 1)
    })
  }
  walk(raw, path, 1)
  return out
}

/**
 * The tree as stored: only the keys the contract names (logic upper-cased, unknown keys dropped).
 * Call it on a tree that passed `checkTree`.
 */
export function cleanTree(raw: unknown): FilterTree {
  const t = raw as Record<string, unknown>
  const groups = (t.groups as unknown[]).map((g) => {
    const group = g as Record<string, unknown>
    const out: FilterGroup = {
      filters: Array.isArray(group.filters) ? group.filters.map((f) => {
        const { field, operator, value, unit } = f as Record<string, unknown>
        return { field, operator, ...(value !== undefined ? { value } : {}), ...(unit !== undefined && unit !== null ? { unit } : {}) } as Filter
      }) : [],
    }
    if (group.conditions !== undefined && group.conditions !== null) out.conditions = cleanTree(group.conditions)
    return out
  })
  return { logic: typeof t.logic === 'string' ? t.logic.toUpperCase() : 'AND', groups }
}
