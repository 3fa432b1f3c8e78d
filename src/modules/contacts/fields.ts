import type { Ctx } from '../../deps'
import { ctxFor } from '../../deps'
import { conflict, invalidField, notFound } from '../../errors'
import { defineJob, enqueue } from '../../jobs/queue'
import { RESERVED_DATA_KEYS } from './data'
import * as contactRepo from './repo/contact'
import * as repo from './repo/fields'
import { countContacts } from './repo/list'
import { fieldUsage as usageOf } from './usage'

/** The custom-field endpoints: the keys of contacts' `data`, with inferred types and coverage. */

export const STANDARD_FIELDS = [
  { name: 'email', type: 'string' },
  { name: 'subscribed', type: 'boolean' },
  { name: 'createdAt', type: 'date' },
  { name: 'updatedAt', type: 'date' },
] as const

export const STANDARD_NAMES: ReadonlySet<string> = new Set(STANDARD_FIELDS.map((f) => f.name))

function percent(n: number, total: number): number {
  return total ? Math.round((n / total) * 1000) / 10 : 0
}

/** GET /contacts/fields: standard fields, then custom fields by coverage (most common first). */
export async function listFields(ctx: Ctx) {
  const [total, kinds] = await Promise.all([countContacts(ctx.store, ctx.projectId), repo.fieldKinds(ctx.store, ctx.projectId)])
  const custom = new Map<string, { types: Record<string, number>; count: number }>()
  for (const k of kinds) {
    const f = custom.get(k.key) ?? { types: {}, count: 0 }
    f.types[k.kind] = (f.types[k.kind] ?? 0) + k.n
    f.count += k.n
    custom.set(k.key, f)
  }
  const fields = [
    ...STANDARD_FIELDS.map((f) => ({ name: f.name, standard: true, type: f.type, types: { [f.type]: total }, count: total, coverage: total ? 100 : 0 })),
    ...[...custom.entries()]
      .map(([name, f]) => {
        const kindsSeen = Object.keys(f.types)
        return { name, standard: false, type: kindsSeen.length === 1 ? kindsSeen[0] : 'mixed', types: f.types, count: f.count, coverage: percent(f.count, total) }
      })
      .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name)),
  ]
  return { totalContacts: total, fields }
}

/** GET /contacts/fields/:field/values: distinct values with counts (custom fields and `subscribed`). */
export async function fieldValues(ctx: Ctx, field: string, q: { limit?: number; search?: string }) {
  const limit = Math.max(1, Math.min(1000, Math.trunc(q.limit ?? 100) || 100))
  if (field === 'subscribed') {
    const values = await repo.subscribedValues(ctx.store, ctx.projectId)
    return { field, values, distinct: values.length }
  }
  if (STANDARD_NAMES.has(field)) {
    throw invalidField('field', `Distinct values are listed for custom fields and subscribed, not for ${field}`, 'invalid_enum_value', field)
  }
  const r = await repo.fieldValues(ctx.store, ctx.projectId, field, limit, q.search?.trim() || undefined)
  if (!r.values.length && !q.search && !(await repo.fieldCount(ctx.store, ctx.projectId, field))) throw notFound('field')
  return { field, ...r }
}

/** GET /contacts/fields/:field/usage: segments, campaigns and workflows that reference `data.<field>`. */
export async function fieldUsage(ctx: Ctx, field: string) {
  const usage = await usageOf(ctx, field)
  if (!usage.inUse && !STANDARD_NAMES.has(field) && !(await repo.fieldCount(ctx.store, ctx.projectId, field))) throw notFound('field')
  return { field, ...usage }
}

/** DELETE /contacts/fields/:field: removes the field from every contact of the project. */
export async function deleteField(ctx: Ctx, field: string) {
  if (STANDARD_NAMES.has(field)) throw invalidField('field', `${field} is a standard field and cannot be deleted`, 'invalid_enum_value', field)
  const updated = await ctx.store.tx((db) => repo.deleteField(ctx.store, db, ctx.projectId, field, new Date()))
  if (!updated) throw notFound('field')
  return { field, deleted: true, contactsUpdated: updated }
}

// Rename and retype ---------------------------------------------------------------------------------

export const FIELD_JOB = 'contacts.field'
/** A rename or retype of a field held by more contacts than this runs as a job (progress by GET /contacts/bulk/:jobId). */
export const FIELD_INLINE_MAX = 5000
const FIELD_BATCH = 1000

export type FieldType = 'string' | 'number' | 'boolean' | 'date'
export type FieldOp = { op: 'rename'; field: string; to: string } | { op: 'retype'; field: string; type: FieldType }

const NUMBER_RE = /^-?(\d+(\.\d+)?|\.\d+)([eE][-+]?\d+)?$/
const DATE_ONLY_RE = /^\d{4}-\d{2}-\d{2}$/
const DATETIME_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/
const TRUE = new Set(['true', 'yes', 'y', '1', 'on'])
const FALSE = new Set(['false', 'no', 'n', '0', 'off'])

/**
 * `value` as `type`, or undefined when it does not fit (docs/decisions.md, Custom fields): numbers from
 * numeric text; booleans from true/false, yes/no, 1/0, on/off; dates from ISO 8601 text (a date-time
 * becomes UTC ISO, a date stays YYYY-MM-DD); strings from numbers and booleans. Objects and arrays fit
 * no type but themselves.
 */
export function convertValue(value: unknown, type: FieldType): unknown {
  if (type === 'string') {
    if (typeof value === 'string') return value
    if (typeof value === 'number' || typeof value === 'boolean') return String(value)
    return undefined
  }
  if (type === 'number') {
    if (typeof value === 'number') return value
    if (typeof value === 'string' && NUMBER_RE.test(value.trim())) {
      const n = Number(value.trim())
      return Number.isFinite(n) ? n : undefined
    }
    if (typeof value === 'boolean') return undefined
    return undefined
  }
  if (type === 'boolean') {
    if (typeof value === 'boolean') return value
    if (typeof value === 'number') return value === 1 ? true : value === 0 ? false : undefined
    if (typeof value === 'string') {
      const v = value.trim().toLowerCase()
      if (TRUE.has(v)) return true
      if (FALSE.has(v)) return false
    }
    return undefined
  }
  if (typeof value !== 'string') return undefined
  const v = value.trim()
  if (DATE_ONLY_RE.test(v)) return Number.isNaN(Date.parse(`${v}T00:00:00Z`)) ? undefined : v
  if (DATETIME_RE.test(v)) {
    const t = Date.parse(v.replace(' ', 'T'))
    return Number.isNaN(t) ? undefined : new Date(t).toISOString()
  }
  return undefined
}

function checkCustomName(name: string, what: string) {
  if (STANDARD_NAMES.has(name) || RESERVED_DATA_KEYS.has(name)) {
    throw invalidField(what, `${name} is a standard or reserved name, not a custom field`, 'reserved_field', name)
  }
}

/** Applies `op` to the data of one contact; null when it does not change. */
function applyOp(data: Record<string, unknown>, op: FieldOp): Record<string, unknown> | null {
  if (!(op.field in data)) return null
  if (op.op === 'rename') {
    const { [op.field]: value, ...rest } = data
    return { ...rest, [op.to]: value }
  }
  const next = convertValue(data[op.field], op.type)
  if (next === undefined || Object.is(next, data[op.field])) return null
  return { ...data, [op.field]: next }
}

/** Walks every contact holding the field, FIELD_BATCH per transaction; returns how many changed. */
export async function runFieldOp(ctx: Ctx, op: FieldOp, progress?: (done: number) => Promise<void>): Promise<{ changed: number; seen: number }> {
  let after = ''
  let changed = 0
  let seen = 0
  for (;;) {
    const n = await ctx.store.tx(async (db) => {
      const ids = await repo.idsWithField(ctx.store, db, ctx.projectId, op.field, after, FIELD_BATCH)
      if (!ids.length) return 0
      after = ids[ids.length - 1]
      const rows = await contactRepo.findByIds(ctx.store, db, ctx.projectId, ids, true)
      const now = new Date()
      const next = []
      for (const row of rows) {
        const data = applyOp(row.data ?? {}, op)
        if (data) next.push({ ...row, data, updatedAt: now })
      }
      await contactRepo.saveStates(ctx.store, db, next)
      changed += next.length
      return ids.length
    })
    seen += n
    if (progress && n) await progress(seen)
    if (n < FIELD_BATCH) return { changed, seen }
  }
}

async function startFieldOp(ctx: Ctx, op: FieldOp, contacts: number) {
  if (contacts > FIELD_INLINE_MAX) {
    const jobId = await enqueue(ctx.store, FIELD_JOB, { ...op }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, total: contacts, maxAttempts: 3 })
    if (!jobId) throw new Error(`the ${FIELD_JOB} job was not queued`)
    return { jobId, changed: 0 }
  }
  const r = await runFieldOp(ctx, op)
  return { jobId: null, changed: r.changed }
}

/** POST /contacts/fields/:field/rename: the field's values move to the new name on every contact. */
export async function renameField(ctx: Ctx, field: string, to: string) {
  checkCustomName(field, 'field')
  const name = to.trim()
  if (!name) throw invalidField('to', 'to: the new name is empty', 'too_small', to)
  checkCustomName(name, 'to')
  if (name === field) throw invalidField('to', 'to: the new name is the current name', 'unchanged', to)
  const [contacts, taken] = await Promise.all([repo.fieldCount(ctx.store, ctx.projectId, field), repo.fieldCount(ctx.store, ctx.projectId, name)])
  if (!contacts) throw notFound('field')
  if (taken) throw conflict(`${taken} contacts already have a field ${name}: delete or rename it first`, { field: 'to', contacts: taken })
  const r = await startFieldOp(ctx, { op: 'rename', field, to: name }, contacts)
  return { field: name, contacts, ...r }
}

/** POST /contacts/fields/:field/retype: converts the values that fit (counted first; dryRun counts only). */
export async function retypeField(ctx: Ctx, field: string, type: FieldType, dryRun = false) {
  checkCustomName(field, 'field')
  const values = await repo.allFieldValues(ctx.store, ctx.projectId, field)
  if (!values.length) throw notFound('field')
  let fit = 0
  let misfit = 0
  const examples: unknown[] = []
  for (const v of values) {
    if (convertValue(v.value, type) !== undefined) fit += v.count
    else {
      misfit += v.count
      if (examples.length < 5) examples.push(v.value)
    }
  }
  const contacts = fit + misfit
  const r = dryRun ? { jobId: null, changed: 0 } : await startFieldOp(ctx, { op: 'retype', field, type }, contacts)
  return { field, type, contacts, fit, misfit, examples, dryRun, ...r }
}

export const fieldJob = defineJob<FieldOp>({
  name: FIELD_JOB,
  maxAttempts: 3,
  leaseMs: 120_000,
  async run(jc, payload) {
    const projectId = jc.job.projectId
    if (!projectId) throw new Error('field job without a project')
    const ctx = ctxFor(jc.deps, projectId, { kind: 'job', name: FIELD_JOB })
    const total = jc.job.total
    const r = await runFieldOp(ctx, payload, (done) => jc.progress(done, Math.max(total, done)))
    await jc.progress(r.seen, r.seen)
    return { created: 0, updated: r.changed, skipped: r.seen - r.changed, failed: 0, errors: [] }
  },
})
