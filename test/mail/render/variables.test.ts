import { describe, expect, test } from 'bun:test'
import { RESERVED_DATA_KEYS } from '../../../src/modules/contacts/data'
import { templateVariables } from '../../../src/mail/render/variables'

describe('templateVariables', () => {
  test('every reserved key is dropped from contact data and request data; only the message sets them', () => {
    const data = Object.fromEntries([...RESERVED_DATA_KEYS].map((k) => [k, `from-data-${k}`]))
    expect(templateVariables({ contact: { data }, data })).toEqual({})
    const vars = templateVariables({
      contact: { id: 'c1', email: 'a@b.test', data }, data,
      urls: { unsubscribeUrl: 'https://u.test/u', subscribeUrl: 'https://u.test/s', manageUrl: 'https://u.test/m' },
    })
    expect(vars).toEqual({ id: 'c1', email: 'a@b.test', unsubscribeUrl: 'https://u.test/u', subscribeUrl: 'https://u.test/s', manageUrl: 'https://u.test/m' })
  })

  test('values are plain copies: dates as ISO text, no functions, symbols or bigints, input never shared', () => {
    const list = [1, { x: 'y' }]
    const vars = templateVariables({
      data: { when: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)), fn: () => 1, sym: Symbol('s'), big: 10n, list, n: 0, b: false },
    })
    expect(vars).toEqual({ when: '2026-01-02T03:04:05.000Z', fn: undefined, sym: undefined, big: undefined, list: [1, { x: 'y' }], n: 0, b: false })
    expect(vars.list).not.toBe(list)
    ;(vars.list as Array<Record<string, unknown>>)[1].x = 'changed'
    expect(list[1]).toEqual({ x: 'y' })
  })

  test('nesting deeper than 32 levels is cut off', () => {
    let deep: Record<string, unknown> = { leaf: 'x' }
    for (let i = 0; i < 40; i++) deep = { n: deep }
    let cur = templateVariables({ data: { deep } }).deep as Record<string, unknown> | undefined
    let levels = 0
    while (cur) { levels++; cur = cur.n as Record<string, unknown> | undefined }
    expect(levels).toBe(33)
  })

  test('the {value, persistent} wrapper is unwrapped only with exactly those two keys and a boolean persistent', () => {
    const vars = templateVariables({
      data: {
        a: { value: 'A', persistent: false },
        b: { value: 'B', persistent: true },
        c: { value: 'C', persistent: 'no' },
        d: { value: 'D', persistent: false, extra: 1 },
        e: { value: null, persistent: false },
      },
      contact: { data: { e: 'stored' } },
    })
    expect(vars).toEqual({ a: 'A', b: 'B', c: { value: 'C', persistent: 'no' }, d: { value: 'D', persistent: false, extra: 1 } })
  })

  test('unsafe keys and mark characters are removed at every depth', () => {
    const data = JSON.parse('{"o": {"__proto__": {"p": 1}, "toString": "t", "valueOf": "v", "toHTML": "h", "k": "a\\u0001b\\ue000c"}}')
    const vars = templateVariables({ data })
    expect(Object.keys(vars.o as object)).toEqual(['k'])
    expect(vars.o).toEqual({ k: 'abc' })
    expect(Object.getPrototypeOf(vars.o)).toBe(Object.prototype)
  })
})
