import { beforeAll, describe, expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { AppError, type FieldError } from '../../src/errors'
import { checkTree, parseIsoDate, prepareFilter, type FilterCtx } from '../../src/filters'
import type { FilterTree } from '../../src/filters/types'

const f = (field: string, operator: string, value?: unknown, unit?: unknown) => ({ field, operator, value, unit })
const tree = (...filters: unknown[]): FilterTree => ({ logic: 'AND', groups: [{ filters: filters as FilterTree['groups'][number]['filters'] }] })

function errorsOf(raw: unknown, path?: string): FieldError[] {
  const r = checkTree(raw, path)
  return r.errors
}

describe('filter tree validation: 422 with the path of the bad part', () => {
  const cases: Array<[string, unknown, string, string]> = [
    ['not an object', 'everyone', 'condition', 'invalid_type'],
    ['an array', [], 'condition', 'invalid_type'],
    ['groups missing', { logic: 'AND' }, 'condition.groups', 'required'],
    ['groups not an array', { logic: 'AND', groups: {} }, 'condition.groups', 'invalid_type'],
    ['unknown logic', { logic: 'XOR', groups: [] }, 'condition.logic', 'invalid_enum_value'],
    ['a group that is not an object', { groups: ['x'] }, 'condition.groups.0', 'invalid_type'],
    ['filters not an array', { groups: [{ filters: 'x' }] }, 'condition.groups.0.filters', 'invalid_type'],
    ['a filter that is not an object', tree(7), 'condition.groups.0.filters.0', 'invalid_type'],
    ['field missing', tree({ operator: 'equals', value: 1 }), 'condition.groups.0.filters.0.field', 'required'],
    ['unknown field', tree(f('plan', 'equals', 'x')), 'condition.groups.0.filters.0.field', 'unknown_field'],
    ['empty data key', tree(f('data..x', 'equals', 'x')), 'condition.groups.0.filters.0.field', 'unknown_field'],
    ['bare data', tree(f('data.', 'exists')), 'condition.groups.0.filters.0.field', 'unknown_field'],
    ['bare event', tree(f('event.', 'triggered')), 'condition.groups.0.filters.0.field', 'unknown_field'],
    ['email.* other than the three', tree(f('email.sent', 'triggered')), 'condition.groups.0.filters.0.field', 'unknown_field'],
    ['operator missing', tree({ field: 'email', value: 'x' }), 'condition.groups.0.filters.0.operator', 'required'],
    ['unknown operator', tree(f('email', 'startsWith', 'x')), 'condition.groups.0.filters.0.operator', 'unknown_operator'],
    ['operator case matters', tree(f('email', 'EQUALS', 'x')), 'condition.groups.0.filters.0.operator', 'unknown_operator'],
    ['operator not for the field', tree(f('email', 'greaterThan', 'x')), 'condition.groups.0.filters.0.operator', 'unknown_operator'],
    ['event operator on a data field', tree(f('data.plan', 'triggered')), 'condition.groups.0.filters.0.operator', 'unknown_operator'],
    ['value operator on an event', tree(f('event.signup', 'equals', true)), 'condition.groups.0.filters.0.operator', 'unknown_operator'],
    ['segment operator on a contact field', tree(f('email', 'memberOfSegment')), 'condition.groups.0.filters.0.operator', 'unknown_operator'],
    ['unknown unit', tree(f('createdAt', 'within', 3, 'weeks')), 'condition.groups.0.filters.0.unit', 'invalid_enum_value'],
    ['unit on a non-window operator', tree(f('data.age', 'greaterThan', 3, 'days')), 'condition.groups.0.filters.0.unit', 'unexpected'],
    ['window value not a number', tree(f('createdAt', 'within', 'soon', 'days')), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['window value <= 0', tree(f('event.x', 'triggeredWithin', 0, 'days')), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['window too long', tree(f('createdAt', 'within', 1e9, 'days')), 'condition.groups.0.filters.0.value', 'too_big'],
    ['subscribed not a boolean', tree(f('subscribed', 'equals', 'yes')), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['email value not a string', tree(f('email', 'equals', 5)), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['date value not a date', tree(f('createdAt', 'greaterThan', 'yesterday')), 'condition.groups.0.filters.0.value', 'invalid_date'],
    ['impossible month', tree(f('createdAt', 'greaterThan', '2024-13-01')), 'condition.groups.0.filters.0.value', 'invalid_date'],
    ['data compare with a word', tree(f('data.age', 'greaterThan', 'old')), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['data equals an object', tree(f('data.plan', 'equals', { a: 1 })), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['data equals null', tree(f('data.plan', 'equals', null)), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['contains a number', tree(f('data.plan', 'contains', 5)), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['count not whole', tree(f('event.x', 'triggeredMoreThan', 1.5)), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['count negative', tree(f('event.x', 'triggeredMoreThan', -1)), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['email.opened equals a string', tree(f('email.opened', 'equals', 'yes')), 'condition.groups.0.filters.0.value', 'invalid_type'],
    ['value too long', tree(f('data.plan', 'equals', 'x'.repeat(1001))), 'condition.groups.0.filters.0.value', 'too_big'],
  ]
  for (const [name, raw, field, code] of cases) {
    test(name, () => {
      const errors = errorsOf(raw)
      expect(errors.length).toBeGreaterThan(0)
      expect({ field: errors[0].field, code: errors[0].code }).toEqual({ field, code })
      expect(errors[0].message.startsWith(`${field}: `)).toBe(true)
    })
  }

  test('the path reaches into nested conditions and later groups', () => {
    const raw = { logic: 'OR', groups: [
      { filters: [f('email', 'equals', 'a@b.c')] },
      { filters: [f('email', 'equals', 'a@b.c'), f('data.x', 'equals', 1)], conditions: { logic: 'AND', groups: [{ filters: [f('data.y', 'nope')] }] } },
    ] }
    expect(errorsOf(raw, 'audienceCondition').map((e) => e.field)).toEqual(['audienceCondition.groups.1.conditions.groups.0.filters.0.operator'])
  })

  test('every bad filter is reported, not only the first', () => {
    const errors = errorsOf(tree(f('nope', 'equals', 1), f('email', 'equals', 'ok'), f('subscribed', 'equals', 1)))
    expect(errors.map((e) => e.field)).toEqual(['condition.groups.0.filters.0.field', 'condition.groups.0.filters.2.value'])
  })

  test('nesting: five levels pass, six are refused at the sixth', () => {
    const nest = (levels: number): FilterTree => {
      let t: FilterTree = { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: 'a' }] }] }
      for (let i = 1; i < levels; i++) t = { logic: 'AND', groups: [{ conditions: t }] }
      return t
    }
    expect(errorsOf(nest(5))).toEqual([])
    const errors = errorsOf(nest(6))
    expect(errors.map((e) => [e.field, e.code])).toEqual([[`condition${'.groups.0.conditions'.repeat(5)}`, 'too_deep']])
  })

  test('at most 100 filters', () => {
    const ok = { groups: [{ filters: Array.from({ length: 100 }, () => f('email', 'contains', 'a')) }] }
    expect(errorsOf(ok)).toEqual([])
    const big = { groups: [{ filters: Array.from({ length: 101 }, () => f('email', 'contains', 'a')) }] }
    expect(errorsOf(big).map((e) => [e.field, e.code])).toEqual([['condition.groups.0.filters.100', 'too_big']])
  })

  test('lenient where harmless: logic defaults to AND, unit to days, unknown keys are ignored', () => {
    const r = checkTree({ groups: [{ filters: [{ field: 'createdAt', operator: 'within', value: '7', extra: 1 }], more: true }] })
    expect(r.errors).toEqual([])
    expect(r.tree).toEqual({ logic: 'AND', groups: [{ predicates: [{ kind: 'column-window', column: 'created_at', op: 'within', windowMs: 7 * 86_400_000 }], conditions: null }] })
  })

  test('ISO dates: the grammar both stores share', () => {
    expect(parseIsoDate('2024-01-05')).toEqual({ ms: Date.UTC(2024, 0, 5), dayOnly: true })
    expect(parseIsoDate('2024-01-05T10:00:00.5Z')).toEqual({ ms: Date.UTC(2024, 0, 5, 10, 0, 0, 500), dayOnly: false })
    expect(parseIsoDate('2024-01-05T10:00-02:30')).toEqual({ ms: Date.UTC(2024, 0, 5, 12, 30), dayOnly: false })
    expect(parseIsoDate('2024-01-05T10:00:00')).toEqual({ ms: Date.UTC(2024, 0, 5, 10), dayOnly: false })
    for (const bad of ['2024-1-5', '2024-01-05T25:00', '2024-01-05Z', '05/01/2024', '2024-01-05T10:00+0100', 'now']) expect(parseIsoDate(bad)).toBeNull()
  })
})

forEachStore('segment references in filters', (env) => {
  let ctx: FilterCtx
  const ids = { a: '', b: '', c: '', s: '' }
  const member = (id: string, op = 'memberOfSegment') => tree(f(`segment.${id}`, op))

  beforeAll(async () => {
    const p = await env.project()
    ctx = { store: env.store, projectId: p.id, now: new Date() }
    for (const k of Object.keys(ids) as Array<keyof typeof ids>) ids[k] = Bun.randomUUIDv7()
    const now = new Date()
    const base = { projectId: p.id, description: null, trackMembership: false as boolean, memberCount: 0, countedAt: null, computedAt: null, createdAt: now, updatedAt: now }
    // a -> b -> c (c has a plain condition), s is STATIC
    await env.store.tx((db) => db.insert(env.store.t.segments).values([
      { ...base, id: ids.a, name: 'a', slug: 'a', type: 'DYNAMIC' as const, condition: member(ids.b) },
      { ...base, id: ids.b, name: 'b', slug: 'b', type: 'DYNAMIC' as const, condition: member(ids.c, 'notMemberOfSegment') },
      { ...base, id: ids.c, name: 'c', slug: 'c', type: 'DYNAMIC' as const, condition: tree(f('email', 'contains', 'x')) },
      { ...base, id: ids.s, name: 's', slug: 's', type: 'STATIC' as const, condition: null },
    ]))
  })

  async function rejection(p: Promise<unknown>): Promise<FieldError[]> {
    const err = await p.then(() => null, (e) => e)
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).status).toBe(422)
    return (err as AppError).opts.errors ?? []
  }

  test('existing segments are accepted, and their segments loaded', async () => {
    const prepared = await prepareFilter(ctx, member(ids.a))
    expect([...prepared.segments.keys()].sort()).toEqual([ids.a, ids.b, ids.c].sort())
    expect(prepared.deps.contacts).toBe(true)
    const s = await prepareFilter(ctx, member(ids.s))
    expect([...s.deps.staticSegments]).toEqual([ids.s])
  })

  test('an unknown segment is a 422 at the filter', async () => {
    const errors = await rejection(prepareFilter(ctx, tree(f('email', 'contains', 'a'), f('segment.nope', 'memberOfSegment'))))
    expect(errors.map((e) => [e.field, e.code])).toEqual([['condition.groups.0.filters.1.field', 'unknown_segment']])
  })

  test('a segment referring to itself is a cycle', async () => {
    const errors = await rejection(prepareFilter(ctx, member(ids.a), { selfSegmentId: ids.a }))
    expect(errors.map((e) => [e.field, e.code])).toEqual([['condition.groups.0.filters.0.field', 'segment_cycle']])
  })

  test('a cycle through other segments is found', async () => {
    // c would refer to a, which refers to b, which refers to c.
    const errors = await rejection(prepareFilter(ctx, member(ids.a), { selfSegmentId: ids.c }))
    expect(errors[0].code).toBe('segment_cycle')
    expect(errors[0].message).toContain(`this segment -> ${ids.a} -> ${ids.b} -> ${ids.c}`)
  })

  test('lenient preparation compiles a missing segment as "not a member" instead of failing', async () => {
    const prepared = await prepareFilter(ctx, tree(f('segment.gone', 'memberOfSegment')), { lenient: true })
    expect(prepared.segments.size).toBe(0)
  })
})
