import type { Ctx } from '../../deps'
import { validation, type FieldError } from '../../errors'
import { prepareFilter } from '../../filters'
import { isEmail, normalizeEmail, checkDataLimits } from '../contacts/data'
import type { StepType } from './model'
import { existingTemplates, type StepRow, type TransitionRow } from './repo'

/**
 * The rules of a workflow's graph and of each step's config (docs/decisions.md, Workflows). Step configs are
 * checked whenever a step is added or changed; the graph when a workflow is enabled and on every edit of an
 * enabled workflow. Every fault names its step: `steps.<id>` and `step "<name>" (<TYPE>): <what>`.
 */

export const MAX_DELAY_MS = 365 * 86_400_000
export const UNIT_MS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const
export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
/** CONDITION operators on `context.<path>` fields (the execution context, evaluated in memory). */
export const CONTEXT_OPERATORS = ['equals', 'notEquals', 'contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists'] as const

/** Branch names each step type's outgoing transitions must carry (null: one unlabelled transition). */
export function branchesOf(type: string, config: Record<string, unknown>): readonly string[] | null {
  if (type === 'CONDITION') return ['yes', 'no']
  if (type === 'WAIT_FOR_EVENT') return config.timeout !== undefined && config.timeout !== null ? ['event', 'timeout'] : ['event']
  return null
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function fault(field: string, message: string, code = 'invalid_config', received?: unknown): FieldError {
  return { field, message, code, received }
}

/** The filter tree a contact CONDITION tests: one filter. */
export function conditionTree(config: Record<string, unknown>) {
  const filter: Record<string, unknown> = { field: config.field, operator: config.operator }
  if ('value' in config) filter.value = config.value
  if ('unit' in config) filter.unit = config.unit
  return { logic: 'AND', groups: [{ filters: [filter] }] }
}

/**
 * Checks and normalises a step's config (422 naming `config.<key>`). `field` prefixes the errors (the route's
 * body: "config"). Templates are checked to exist in the project.
 */
export async function checkStepConfig(ctx: Ctx, type: StepType, raw: Record<string, unknown> | undefined, field = 'config'): Promise<Record<string, unknown>> {
  const c: Record<string, unknown> = { ...(raw ?? {}) }
  const errors: FieldError[] = []
  const f = (k: string) => `${field}.${k}`
  switch (type) {
    case 'TRIGGER':
      break
    case 'SEND_EMAIL': {
      if (typeof c.templateId !== 'string' || !c.templateId) errors.push(fault(f('templateId'), 'SEND_EMAIL needs config.templateId, a template of this project', 'required'))
      const r = c.recipient
      if (r === undefined || r === null) c.recipient = { type: 'CONTACT' }
      else if (!isObj(r) || (r.type !== 'CONTACT' && r.type !== 'CUSTOM')) errors.push(fault(f('recipient'), 'recipient must be {type: "CONTACT"} or {type: "CUSTOM", email}', 'invalid_config', r))
      else if (r.type === 'CUSTOM') {
        if (typeof r.email !== 'string' || !isEmail(normalizeEmail(r.email))) errors.push(fault(f('recipient.email'), 'a CUSTOM recipient needs a valid email', 'invalid_string', r.email))
        else c.recipient = { type: 'CUSTOM', email: normalizeEmail(r.email) }
      } else c.recipient = { type: 'CONTACT' }
      if (typeof c.templateId === 'string' && c.templateId) {
        const found = await existingTemplates(ctx.store, ctx.store.db, ctx.projectId, [c.templateId])
        if (!found.has(c.templateId)) errors.push(fault(f('templateId'), `template ${c.templateId} does not exist in this project`, 'unknown_template', c.templateId))
      }
      break
    }
    case 'DELAY': {
      const unit = c.unit as keyof typeof UNIT_MS
      if (!Number.isInteger(c.amount) || (c.amount as number) < 1) errors.push(fault(f('amount'), 'DELAY needs config.amount, a whole number >= 1', 'invalid_config', c.amount))
      if (!(unit in UNIT_MS)) errors.push(fault(f('unit'), 'DELAY needs config.unit: minutes, hours or days', 'invalid_config', c.unit))
      else if (Number.isInteger(c.amount) && (c.amount as number) * UNIT_MS[unit] > MAX_DELAY_MS) errors.push(fault(f('amount'), 'a DELAY is at most 365 days', 'too_big', c.amount))
      break
    }
    case 'WAIT_FOR_EVENT': {
      if (typeof c.eventName !== 'string' || !c.eventName.trim() || c.eventName.length > 255) errors.push(fault(f('eventName'), 'WAIT_FOR_EVENT needs config.eventName (1-255 characters)', 'required', c.eventName))
      else c.eventName = c.eventName.trim()
      if (c.timeout === null) delete c.timeout
      if (c.timeout !== undefined && (!Number.isInteger(c.timeout) || (c.timeout as number) < 1 || (c.timeout as number) * 1000 > MAX_DELAY_MS)) {
        errors.push(fault(f('timeout'), 'timeout is a whole number of seconds from 1 to 365 days', 'invalid_config', c.timeout))
      }
      break
    }
    case 'CONDITION': {
      if (typeof c.field !== 'string' || !c.field) errors.push(fault(f('field'), 'CONDITION needs config.field', 'required'))
      else if (typeof c.operator !== 'string') errors.push(fault(f('operator'), 'CONDITION needs config.operator', 'required'))
      else if (c.field.startsWith('context.')) {
        if (c.field.length <= 'context.'.length) errors.push(fault(f('field'), 'context.<key> names a key of the execution context', 'invalid_config', c.field))
        if (!(CONTEXT_OPERATORS as readonly string[]).includes(c.operator)) errors.push(fault(f('operator'), `on context fields the operator is one of ${CONTEXT_OPERATORS.join(', ')}`, 'invalid_config', c.operator))
      } else {
        await prepareFilter(ctx, conditionTree(c), { path: field })
      }
      break
    }
    case 'WEBHOOK': {
      let ok = false
      if (typeof c.url === 'string') {
        try { const u = new URL(c.url); ok = u.protocol === 'http:' || u.protocol === 'https:' } catch { ok = false }
      }
      if (!ok) errors.push(fault(f('url'), 'WEBHOOK needs config.url, an http(s) URL', 'invalid_string', c.url))
      c.method = c.method === undefined ? 'POST' : c.method
      if (typeof c.method !== 'string' || !(WEBHOOK_METHODS as readonly string[]).includes(c.method.toUpperCase())) errors.push(fault(f('method'), `method is one of ${WEBHOOK_METHODS.join(', ')}`, 'invalid_config', c.method))
      else c.method = c.method.toUpperCase()
      if (c.headers !== undefined) {
        if (!isObj(c.headers) || Object.entries(c.headers).some(([k, v]) => typeof v !== 'string' || /[\r\n]/.test(k) || /[\r\n]/.test(v as string) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k))) {
          errors.push(fault(f('headers'), 'headers is an object of header names to string values, without line breaks', 'invalid_config'))
        }
      }
      break
    }
    case 'UPDATE_CONTACT': {
      if (c.data === undefined && c.subscribed === undefined) errors.push(fault(field, 'UPDATE_CONTACT needs config.data, config.subscribed or both', 'required'))
      if (c.data !== undefined && !isObj(c.data)) errors.push(fault(f('data'), 'data must be an object (the contact data rules apply)', 'invalid_config'))
      else if (c.data !== undefined) checkDataLimits(c.data)
      if (c.subscribed !== undefined && typeof c.subscribed !== 'boolean') errors.push(fault(f('subscribed'), 'subscribed must be a boolean', 'invalid_config', c.subscribed))
      break
    }
    case 'EXIT':
      if (c.reason !== undefined && c.reason !== null && (typeof c.reason !== 'string' || c.reason.length > 500)) errors.push(fault(f('reason'), 'reason is a string of at most 500 characters', 'invalid_config'))
      break
  }
  if (errors.length) throw validation(errors, errors[0].message)
  return c
}

const label = (s: StepRow) => `step "${s.name}" (${s.type})`

/**
 * The faults of a workflow's graph, for enabling it: one trigger, every step reachable from it, the branches
 * each step needs, templates that exist (`templates`: the ids found in the project), and no cycle that runs
 * without a DELAY or a WAIT_FOR_EVENT.
 */
export function graphFaults(steps: StepRow[], transitions: TransitionRow[], templates: Set<string>): FieldError[] {
  const errors: FieldError[] = []
  const at = (s: StepRow, message: string, code: string) => errors.push({ field: `steps.${s.id}`, message: `${label(s)}: ${message}`, code })
  const triggers = steps.filter((s) => s.type === 'TRIGGER')
  if (triggers.length !== 1) errors.push({ field: 'steps', message: `a workflow has exactly one TRIGGER step (found ${triggers.length})`, code: 'trigger_count' })
  const out = new Map<string, TransitionRow[]>()
  for (const s of steps) out.set(s.id, [])
  for (const t of transitions) out.get(t.fromStepId)?.push(t)

  for (const s of steps) {
    const outs = out.get(s.id) ?? []
    const need = branchesOf(s.type, s.config)
    if (s.type === 'EXIT') {
      if (outs.length) at(s, 'an EXIT step ends the execution and has no outgoing transition', 'exit_has_transition')
    } else if (need) {
      for (const b of need) {
        const n = outs.filter((t) => t.branch === b).length
        if (n === 0) at(s, `needs a transition on branch "${b}"`, 'missing_branch')
        else if (n > 1) at(s, `has ${n} transitions on branch "${b}" (one allowed)`, 'duplicate_branch')
      }
      for (const t of outs) if (!t.branch || !need.includes(t.branch)) at(s, `transition ${t.id} has branch ${t.branch ?? 'none'}; allowed: ${need.join(', ')}`, 'invalid_branch')
    } else {
      if (outs.length > 1) at(s, `has ${outs.length} outgoing transitions (one allowed)`, 'too_many_transitions')
      for (const t of outs) if (t.branch) at(s, `transition ${t.id} has branch "${t.branch}", but only CONDITION and WAIT_FOR_EVENT steps branch`, 'invalid_branch')
    }
    if (s.type === 'SEND_EMAIL') {
      const id = s.config.templateId
      if (typeof id !== 'string' || !templates.has(id)) at(s, `template ${String(id)} does not exist in this project`, 'unknown_template')
    }
  }

  if (triggers.length === 1) {
    const seen = new Set<string>([triggers[0].id])
    const todo = [triggers[0].id]
    while (todo.length) {
      const id = todo.pop() as string
      for (const t of out.get(id) ?? []) if (!seen.has(t.toStepId)) { seen.add(t.toStepId); todo.push(t.toStepId) }
    }
    for (const s of steps) if (!seen.has(s.id)) at(s, 'is not reachable from the trigger', 'unreachable')
  }

  // A cycle must pass a DELAY or a WAIT_FOR_EVENT: look for one among the other steps only.
  const pausing = new Set(steps.filter((s) => s.type === 'DELAY' || s.type === 'WAIT_FOR_EVENT').map((s) => s.id))
  const byId = new Map(steps.map((s) => [s.id, s]))
  const state = new Map<string, 1 | 2>()
  const visit = (id: string): string | null => {
    state.set(id, 1)
    for (const t of out.get(id) ?? []) {
      if (pausing.has(t.toStepId)) continue
      const st = state.get(t.toStepId)
      if (st === 1) return t.toStepId
      if (st === undefined) {
        const found = visit(t.toStepId)
        if (found) return found
      }
    }
    state.set(id, 2)
    return null
  }
  for (const s of steps) {
    if (pausing.has(s.id) || state.has(s.id)) continue
    const on = visit(s.id)
    if (on) {
      const step = byId.get(on)
      if (step) at(step, 'is on a cycle that has no DELAY or WAIT_FOR_EVENT step (it would run forever)', 'cycle')
      break
    }
  }
  return errors
}
