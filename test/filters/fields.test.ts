import { expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { countMatching, listFilterFields, pageMatching, prepareFilter, type FilterCtx } from '../../src/filters'
import { DAY, seed } from './seed'

/** The field catalogue GET /workflows/fields will serve: every field it lists is one a filter accepts. */
forEachStore('filter fields', (env) => {
  test('standard, custom (dotted), event and segment fields, each with operators a filter accepts', async () => {
    const p = await env.project()
    const ctx: FilterCtx = { store: env.store, projectId: p.id, now: new Date() }
    await seed(env.store, p.id, ctx.now, [
      { email: 'a@x.io', age: DAY, data: { plan: 'pro', age: 3, address: { city: 'Oslo', geo: { lat: 59.9 } }, since: '2024-01-05', gone: null } },
      { email: 'b@x.io', age: DAY, data: { plan: 7, vip: true } },
    ], [
      { email: 'a@x.io', name: 'signup', ago: DAY }, { email: 'a@x.io', name: 'purchase', ago: DAY }, { email: 'b@x.io', name: 'purchase', ago: 2 * DAY },
      { email: 'b@x.io', name: 'email.open', ago: DAY },
    ])
    const other = await env.project()
    await seed(env.store, other.id, ctx.now, [{ email: 'z@x.io', age: DAY, data: { secret: 1 } }], [{ email: 'z@x.io', name: 'hidden', ago: DAY }])

    const fields = await listFilterFields(ctx, [{ id: 'seg-1', name: 'VIPs' }])
    const names = fields.map((f) => f.field)
    expect(names).toEqual([
      'email', 'subscribed', 'createdAt', 'updatedAt', 'email.opened', 'email.clicked', 'email.bounced',
      'data.address.city', 'data.address.geo.lat', 'data.age', 'data.plan', 'data.since', 'data.vip',
      'event.email.open', 'event.purchase', 'event.signup',
      'segment.seg-1',
    ])
    expect(fields.find((f) => f.field === 'data.plan')?.types).toEqual(['number', 'string'])
    expect(fields.find((f) => f.field === 'data.since')?.types).toEqual(['date'])
    expect(fields.find((f) => f.field === 'segment.seg-1')?.label).toBe('VIPs')

    // Every listed field with each of its operators is accepted and runs: the contacts each matches, as
    // 'operator:initials' ('-' for none; z@x.io of the other project never matches). Values: a seeded one where
    // it makes the operator meaningful, else a placeholder. within/olderThan read a number as ms since the epoch.
    const same: Record<string, unknown> = { email: 'a@x.io', 'data.plan': 'pro', 'data.address.city': 'Oslo', 'data.age': 3, 'data.vip': true }
    const part: Record<string, string> = { email: 'b@', 'data.plan': 'r', 'data.address.city': 'sl' }
    const results: Record<string, string> = {}
    for (const f of fields.filter((x) => x.kind !== 'segment')) {
      const ops: string[] = []
      for (const operator of f.operators) {
        const value = ['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'].includes(operator) ? 3
          : operator === 'triggeredMoreThan' ? 1
          : ['equals', 'notEquals'].includes(operator) && f.field in same ? same[f.field]
          : ['contains', 'notContains'].includes(operator) && f.field in part ? part[f.field]
          : f.kind === 'subscribed' || f.kind === 'emailActivity' ? true
          : f.kind === 'date' ? '2024-01-01'
          : ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'].includes(operator) ? 5 : 'x'
        const prepared = await prepareFilter(ctx, { logic: 'AND', groups: [{ filters: [{ field: f.field, operator, value }] }] })
        const rows = await pageMatching(ctx, prepared, { offset: 0, limit: 10 })
        expect(await countMatching(ctx, prepared)).toBe(rows.length)
        ops.push(`${operator}:${rows.map((r) => r.email[0]).sort().join('') || '-'}`)
      }
      results[f.field] = ops.join(' ')
    }
    expect(results).toEqual({
      email: 'equals:a notEquals:b contains:b notContains:a',
      subscribed: 'equals:ab notEquals:-',
      createdAt: 'equals:- notEquals:ab greaterThan:ab lessThan:- greaterThanOrEqual:ab lessThanOrEqual:- within:ab olderThan:-',
      updatedAt: 'equals:- notEquals:ab greaterThan:ab lessThan:- greaterThanOrEqual:ab lessThanOrEqual:- within:ab olderThan:-',
      'email.opened': 'triggered:b notTriggered:a triggeredWithin:b notTriggeredWithin:a triggeredMoreThan:- equals:b notEquals:a',
      'email.clicked': 'triggered:- notTriggered:ab triggeredWithin:- notTriggeredWithin:ab triggeredMoreThan:- equals:- notEquals:ab',
      'email.bounced': 'triggered:- notTriggered:ab triggeredWithin:- notTriggeredWithin:ab triggeredMoreThan:- equals:- notEquals:ab',
      'data.address.city': 'equals:a notEquals:b contains:a notContains:b greaterThan:- lessThan:- greaterThanOrEqual:- lessThanOrEqual:- exists:a notExists:b within:- olderThan:-',
      'data.address.geo.lat': 'equals:- notEquals:ab contains:- notContains:ab greaterThan:a lessThan:- greaterThanOrEqual:a lessThanOrEqual:- exists:a notExists:b within:- olderThan:a',
      'data.age': 'equals:a notEquals:b contains:- notContains:ab greaterThan:- lessThan:a greaterThanOrEqual:- lessThanOrEqual:a exists:a notExists:b within:- olderThan:a',
      'data.plan': 'equals:a notEquals:b contains:a notContains:b greaterThan:b lessThan:- greaterThanOrEqual:b lessThanOrEqual:- exists:ab notExists:- within:- olderThan:b',
      'data.since': 'equals:- notEquals:ab contains:- notContains:ab greaterThan:- lessThan:- greaterThanOrEqual:- lessThanOrEqual:- exists:a notExists:b within:- olderThan:a',
      'data.vip': 'equals:b notEquals:a contains:- notContains:ab greaterThan:- lessThan:- greaterThanOrEqual:- lessThanOrEqual:- exists:b notExists:a within:- olderThan:-',
      'event.email.open': 'triggered:b notTriggered:a triggeredWithin:b notTriggeredWithin:a triggeredMoreThan:-',
      'event.purchase': 'triggered:ab notTriggered:- triggeredWithin:ab notTriggeredWithin:- triggeredMoreThan:-',
      'event.signup': 'triggered:a notTriggered:b triggeredWithin:a notTriggeredWithin:b triggeredMoreThan:-',
    })
  })
})
