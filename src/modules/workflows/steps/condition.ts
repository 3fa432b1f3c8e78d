import { contactMatches, prepareFilter } from '../../../filters'
import { conditionTree } from '../validate'
import type { StepRunner } from './types'

/**
 * CONDITION: `context.<path>` fields are the execution context (the trigger event is `context.event`, with
 * `name` and `data`), compared in memory; every other field is a contact field of the filter engine
 * (src/filters), evaluated in SQL on the contact at the engine clock's time. Branch `yes` or `no`.
 */
export const condition: StepRunner = async ({ ctx, step, exec, contact, now }) => {
  const field = String(step.config.field)
  let result: boolean
  if (field.startsWith('context.')) {
    result = compareContext(readPath(exec.context, field.slice('context.'.length)), String(step.config.operator), step.config.value)
  } else {
    const fctx = { ...ctx, now }
    const f = await prepareFilter(fctx, conditionTree(step.config), { path: 'config', lenient: true })
    result = await contactMatches(fctx, f, contact.id)
  }
  return { kind: 'next', status: 'COMPLETED', branch: result ? 'yes' : 'no', output: { result } }
}

export function readPath(obj: unknown, path: string): unknown {
  let v: unknown = obj
  for (const k of path.split('.')) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined
    v = (v as Record<string, unknown>)[k]
  }
  return v
}

const num = (v: unknown): number | null => {
  if (typeof v === 'number' && Number.isFinite(v)) return v
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v)
  return null
}

/** The comparison of a context value with the step's value (strings compare case-sensitively, as stored). */
export function compareContext(actual: unknown, op: string, expected: unknown): boolean {
  switch (op) {
    case 'exists': return actual !== undefined && actual !== null
    case 'notExists': return actual === undefined || actual === null
    case 'equals': return actual === expected || (num(actual) !== null && num(actual) === num(expected)) || String(actual) === String(expected)
    case 'notEquals': return !compareContext(actual, 'equals', expected)
    case 'contains':
      if (Array.isArray(actual)) return actual.some((x) => compareContext(x, 'equals', expected))
      return typeof actual === 'string' && actual.includes(String(expected))
    case 'notContains': return !compareContext(actual, 'contains', expected)
    case 'greaterThan': case 'lessThan': case 'greaterThanOrEqual': case 'lessThanOrEqual': {
      const a = num(actual)
      const b = num(expected)
      if (a === null || b === null) return false
      return op === 'greaterThan' ? a > b : op === 'lessThan' ? a < b : op === 'greaterThanOrEqual' ? a >= b : a <= b
    }
    default: return false
  }
}
