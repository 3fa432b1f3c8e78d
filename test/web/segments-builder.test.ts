import { beforeAll, expect, test } from 'bun:test'
import { forEachStore } from '../helpers/env'
import { OPERATORS_BY_KIND } from '../../src/filters/fields'
import { emptyRow, emptyTree, fromApi, kindOf, OPERATORS, type Row, toApi, type Tree, valueTypes } from '../../web/pages/segments/builder'

/**
 * The dashboard's filter builder covers every field kind and operator of the filter engine, and every row it
 * can build is a condition the API accepts (POST /segments/preview answers 200), then reads back unchanged.
 */
test('the builder offers exactly the operators the engine accepts, per field kind', () => {
  for (const [kind, ops] of Object.entries(OPERATORS_BY_KIND)) {
    expect({ kind, ops: [...OPERATORS[kind as keyof typeof OPERATORS]].sort() }).toEqual({ kind, ops: [...ops].sort() })
  }
})

forEachStore('the filter builder against the API', (env) => {
  let key = ''
  let segmentId = ''
  beforeAll(async () => {
    const p = await env.project()
    key = p.secretKey
    expect((await env.request('POST', '/contacts', { key, body: { email: 'ann@example.com', data: { age: 30, plan: 'pro', vip: true, since: '2024-01-02' } } })).status).toBe(201)
    segmentId = (await env.request('POST', '/segments', { key, body: { name: 'Static', type: 'STATIC' } })).body.id
  })

  test('every field kind x operator x value type the builder can produce is valid and round-trips', async () => {
    const fields = ['email', 'subscribed', 'createdAt', 'data.age', 'event.purchase', 'email.opened', `segment.${segmentId}`]
    const rows: Row[] = []
    for (const field of fields) {
      const kind = kindOf(field)
      if (!kind) throw new Error(field)
      for (const operator of OPERATORS[kind]) {
        const base = { ...emptyRow(field), operator, unit: 'hours' }
        if (['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'].includes(operator)) rows.push({ ...base, raw: '7' })
        else if (operator === 'triggeredMoreThan') rows.push({ ...base, raw: '1' })
        else if (kind === 'data') {
          for (const vtype of valueTypes(operator)) rows.push({ ...base, vtype, raw: { text: 'pro', number: '30', boolean: 'false', date: '2024-01-02' }[vtype] })
        } else if (kind === 'date') rows.push({ ...base, raw: '2024-01-02' })
        else if (kind === 'subscribed' || kind === 'emailActivity') rows.push({ ...base, raw: 'false' })
        else rows.push({ ...base, raw: 'ann' })
      }
    }
    expect(rows.length).toBeGreaterThan(50)
    for (const row of rows) {
      const tree: Tree = { ...emptyTree('OR'), groups: [{ id: 0, filters: [row], conditions: null }] }
      const condition = toApi(tree)
      const r = await env.request('POST', '/segments/preview', { key, body: { condition } })
      expect({ filter: condition.groups[0].filters?.[0], status: r.status, errors: r.body.error?.errors }).toEqual({ filter: condition.groups[0].filters?.[0], status: 200, errors: undefined })
      // What the API stores comes back into the builder as the same condition.
      expect(toApi(fromApi(condition, new Set([row.field])))).toEqual(condition)
    }
  })

  test('nested trees keep their shape both ways', () => {
    const condition = {
      logic: 'AND',
      groups: [{
        filters: [{ field: 'data.age', operator: 'greaterThan', value: 18 }, { field: 'event.purchase', operator: 'triggered' }],
        conditions: { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }, { filters: [{ field: 'email', operator: 'contains', value: 'dan' }] }] },
      }],
    }
    expect(toApi(fromApi(condition, new Set()))).toEqual(condition)
  })
})
