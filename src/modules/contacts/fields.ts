import type { Ctx } from '../../deps'
import { invalidField, notFound } from '../../errors'
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

const STANDARD_NAMES: ReadonlySet<string> = new Set(STANDARD_FIELDS.map((f) => f.name))

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
