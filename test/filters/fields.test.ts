import { expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { listFilterFields, prepareFilter, type FilterCtx } from '../../src/filters'
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
    expect(fields.find((f) => f.field === 'data.plan')!.types).toEqual(['number', 'string'])
    expect(fields.find((f) => f.field === 'data.since')!.types).toEqual(['date'])
    expect(fields.find((f) => f.field === 'segment.seg-1')!.label).toBe('VIPs')

    // Every listed field with each of its operators passes validation (segment ids aside: they must exist).
    for (const f of fields.filter((x) => x.kind !== 'segment')) {
      for (const operator of f.operators) {
        const value = ['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'].includes(operator) ? 3
          : operator === 'triggeredMoreThan' ? 1
          : f.kind === 'subscribed' || f.kind === 'emailActivity' ? true
          : f.kind === 'date' ? '2024-01-01'
          : ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'].includes(operator) ? 5 : 'x'
        await prepareFilter(ctx, { logic: 'AND', groups: [{ filters: [{ field: f.field, operator, value }] }] })
      }
    }
  })
})
