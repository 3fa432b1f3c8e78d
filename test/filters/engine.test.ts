import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'
import { AppError } from '../../src/errors'
import { countMatching, matchingAmong, pageMatching, prepareFilter, type FilterCtx } from '../../src/filters'
import type { FilterTree } from '../../src/filters/types'
import { DAY, HOUR, MIN, seed } from './seed'
import { must } from '../helpers/must'

/**
 * Table-driven: one case per operator and field kind, each checking the exact members, in both compile
 * modes (set: the whole project in one query; correlated: a list of contacts), on both stores.
 */
const one = (field: string, operator: string, value?: unknown, unit?: string): FilterTree =>
  ({ logic: 'AND', groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) }] }] })

const ALL = ['alice', 'bob', 'carol', 'dave', 'eve']
const but = (...names: string[]) => ALL.filter((n) => !names.includes(n))

forEachStore('filter engine', (env) => {
  const now = new Date()
  let ctx: FilterCtx
  let other: FilterCtx
  let ids: Map<string, string>
  let staticId: string
  let dynamicId: string
  const iso = (ago: number) => new Date(now.getTime() - ago).toISOString()
  const day = (ago: number) => iso(ago).slice(0, 10)

  beforeAll(async () => {
    const p = await env.project()
    const q = await env.project()
    ctx = { store: env.store, projectId: p.id, now }
    other = { store: env.store, projectId: q.id, now }
    ids = await seed(env.store, p.id, now, [
      { email: 'alice@example.com', age: 3 * DAY, data: {
        plan: 'pro', age: 30, score: '42', vip: true, signup: '2024-01-05', nested: { city: 'Paris' },
        ts: 1704448800, tsms: 1704448800000, seen: iso(2 * DAY) } },
      { email: 'bob@example.com', subscribed: false, age: 40 * DAY, data: {
        plan: 'free', age: '25', score: 42, vip: 'true', signup: '2024-02-10T12:00:00+01:00', nested: { city: 'Berlin' }, seen: iso(30 * DAY) } },
      { email: 'carol@test.org', age: 10 * DAY, data: {
        plan: 'Pro', age: 41.5, vip: false, nested: { city: `O'Brien "quoted"` }, 'a\'b"c': 'x', seen: now.getTime() - HOUR } },
      { email: 'dave@test.org', age: 100 * DAY, updated: DAY, data: {} },
      { email: 'eve@example.com', subscribed: false, age: 5 * MIN, data: { plan: null, age: 'abc', signup: 'not a date' } },
    ].map((c) => ({ ...c, email: c.email })), [
      { email: 'alice@example.com', name: 'purchase', ago: DAY },
      { email: 'alice@example.com', name: 'purchase', ago: 20 * DAY },
      { email: 'alice@example.com', name: 'purchase', ago: 60 * DAY },
      { email: 'alice@example.com', name: 'signup', ago: DAY },
      { email: 'bob@example.com', name: 'purchase', ago: 3 * DAY },
      { email: 'carol@test.org', name: 'email.open', ago: 2 * HOUR },
      { email: 'carol@test.org', name: 'email.click', ago: 10 * DAY },
      { email: 'dave@test.org', name: 'email.bounce', ago: 40 * DAY },
      { email: null, name: 'purchase', ago: HOUR },
    ])
    // The other project: look-alikes that must never show up.
    await seed(env.store, q.id, now, [
      { email: 'alice@example.com', age: DAY, data: { plan: 'pro', age: 30 } },
      { email: 'zed@example.com', age: DAY, subscribed: false, data: { plan: 'pro' } },
    ], [{ email: 'zed@example.com', name: 'purchase', ago: HOUR }, { email: 'zed@example.com', name: 'email.open', ago: HOUR }])

    staticId = Bun.randomUUIDv7()
    dynamicId = Bun.randomUUIDv7()
    const t = env.store.t
    await env.store.tx(async (db) => {
      const base = { projectId: p.id, description: null, trackMembership: false, memberCount: 0, countedAt: null, computedAt: null, createdAt: now, updatedAt: now }
      await db.insert(t.segments).values([
        { ...base, id: staticId, name: 'static', slug: 'static', type: 'STATIC', condition: null },
        { ...base, id: dynamicId, name: 'dynamic', slug: 'dynamic', type: 'DYNAMIC', condition: {
          logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }, { filters: [{ field: 'subscribed', operator: 'equals', value: false }] }],
        } },
      ])
      await db.insert(t.segmentMembers).values(['bob@example.com', 'dave@test.org'].map((e) => ({ segmentId: staticId, contactId: must(ids.get(e), e), projectId: p.id, createdAt: now })))
    })
  })

  async function members(tree: unknown, c: FilterCtx = ctx): Promise<string[]> {
    const f = await prepareFilter(c, tree)
    const page = await pageMatching(c, f, { offset: 0, limit: 100 })
    const n = await countMatching(c, f)
    expect(n).toBe(page.length)
    const emails = page.map((r) => r.email.split('@')[0]).sort()
    // The correlated form agrees with the set form.
    const among = await matchingAmong(c, f, [...ids.values()])
    const byId = new Map([...ids].map(([e, id]) => [id, e.split('@')[0]]))
    expect(among.map((id) => byId.get(id)).sort()).toEqual(c === ctx ? emails : [])
    return emails
  }

  const cases: Array<[string, () => unknown, string[]]> = [
    // email (string column)
    ['email equals (trimmed, lower-cased)', () => one('email', 'equals', ' ALICE@example.com '), ['alice']],
    ['email notEquals', () => one('email', 'notEquals', 'alice@example.com'), but('alice')],
    ['email contains', () => one('email', 'contains', '@test.org'), ['carol', 'dave']],
    ['email notContains', () => one('email', 'notContains', 'example'), ['carol', 'dave']],
    // subscribed (boolean column)
    ['subscribed equals true', () => one('subscribed', 'equals', true), ['alice', 'carol', 'dave']],
    ['subscribed equals false', () => one('subscribed', 'equals', false), ['bob', 'eve']],
    ['subscribed notEquals true', () => one('subscribed', 'notEquals', true), ['bob', 'eve']],
    // createdAt / updatedAt (date columns)
    ['createdAt within 7 days', () => one('createdAt', 'within', 7, 'days'), ['alice', 'eve']],
    ['createdAt within 1 hours', () => one('createdAt', 'within', 1, 'hours'), ['eve']],
    ['createdAt within 30 minutes', () => one('createdAt', 'within', 30, 'minutes'), ['eve']],
    ['createdAt within (unit defaults to days)', () => one('createdAt', 'within', 11), ['alice', 'carol', 'eve']],
    ['createdAt olderThan 30 days', () => one('createdAt', 'olderThan', 30, 'days'), ['bob', 'dave']],
    ['createdAt greaterThan an instant', () => one('createdAt', 'greaterThan', iso(15 * DAY)), ['alice', 'carol', 'eve']],
    ['createdAt lessThan an instant', () => one('createdAt', 'lessThan', iso(15 * DAY)), ['bob', 'dave']],
    ['createdAt greaterThanOrEqual epoch ms', () => one('createdAt', 'greaterThanOrEqual', now.getTime() - 10 * DAY), ['alice', 'carol', 'eve']],
    ['createdAt lessThanOrEqual epoch ms', () => one('createdAt', 'lessThanOrEqual', now.getTime() - 10 * DAY), ['bob', 'carol', 'dave']],
    ['createdAt equals a day', () => one('createdAt', 'equals', day(3 * DAY)), ['alice']],
    ['createdAt notEquals a day', () => one('createdAt', 'notEquals', day(3 * DAY)), but('alice')],
    ['updatedAt within 2 days', () => one('updatedAt', 'within', 2, 'days'), ['dave', 'eve']],
    // data: strings
    ['data equals string (exact case)', () => one('data.plan', 'equals', 'pro'), ['alice']],
    ['data notEquals string (missing field matches)', () => one('data.plan', 'notEquals', 'pro'), but('alice')],
    ['data contains (case-insensitive)', () => one('data.plan', 'contains', 'PR'), ['alice', 'carol']],
    ['data notContains', () => one('data.plan', 'notContains', 'pr'), ['bob', 'dave', 'eve']],
    ['data nested path', () => one('data.nested.city', 'equals', 'Paris'), ['alice']],
    ['data value with quotes', () => one('data.nested.city', 'equals', `O'Brien "quoted"`), ['carol']],
    ['data key with quotes', () => one(`data.a'b"c`, 'equals', 'x'), ['carol']],
    // data: numbers, whatever JSON type was stored
    ['data equals number (stored as string)', () => one('data.age', 'equals', 25), ['bob']],
    ['data equals number (stored as number and string)', () => one('data.score', 'equals', 42), ['alice', 'bob']],
    ['data equals numeric string (text compare)', () => one('data.score', 'equals', '42'), ['alice', 'bob']],
    ['data greaterThan number', () => one('data.age', 'greaterThan', 28), ['alice', 'carol']],
    ['data greaterThan numeric string', () => one('data.age', 'greaterThan', '28'), ['alice', 'carol']],
    ['data lessThan number', () => one('data.age', 'lessThan', 30), ['bob']],
    ['data lessThanOrEqual number', () => one('data.age', 'lessThanOrEqual', 30), ['alice', 'bob']],
    ['data greaterThanOrEqual fraction', () => one('data.age', 'greaterThanOrEqual', 41.5), ['carol']],
    // data: booleans
    ['data equals true (boolean or "true")', () => one('data.vip', 'equals', true), ['alice', 'bob']],
    ['data equals false', () => one('data.vip', 'equals', false), ['carol']],
    ['data notEquals true', () => one('data.vip', 'notEquals', true), ['carol', 'dave', 'eve']],
    // data: presence
    ['data exists', () => one('data.signup', 'exists'), ['alice', 'bob', 'eve']],
    ['data exists (null is absent)', () => one('data.plan', 'exists'), ['alice', 'bob', 'carol']],
    ['data notExists', () => one('data.signup', 'notExists'), ['carol', 'dave']],
    // data: dates, whatever JSON type was stored
    ['data greaterThan a day (after that day)', () => one('data.signup', 'greaterThan', '2024-02-01'), ['bob']],
    ['data lessThan a day', () => one('data.signup', 'lessThan', '2024-02-01'), ['alice']],
    ['data equals a day (date stored)', () => one('data.signup', 'equals', '2024-01-05'), ['alice']],
    ['data equals a day (date-time with offset stored)', () => one('data.signup', 'equals', '2024-02-10'), ['bob']],
    ['data lessThanOrEqual a day (the whole day)', () => one('data.signup', 'lessThanOrEqual', '2024-02-10'), ['alice', 'bob']],
    ['data equals instant (epoch seconds stored)', () => one('data.ts', 'equals', '2024-01-05T10:00:00Z'), ['alice']],
    ['data equals instant (epoch ms stored, offset value)', () => one('data.tsms', 'equals', '2024-01-05T11:00:00+01:00'), ['alice']],
    ['data greaterThan a date (epoch ms stored)', () => one('data.tsms', 'greaterThan', '2024-01-01'), ['alice']],
    ['data within 7 days (ISO and epoch ms stored)', () => one('data.seen', 'within', 7, 'days'), ['alice', 'carol']],
    ['data within 2 hours', () => one('data.seen', 'within', 2, 'hours'), ['carol']],
    ['data olderThan 7 days', () => one('data.seen', 'olderThan', 7, 'days'), ['bob']],
    // events
    ['event triggered', () => one('event.purchase', 'triggered'), ['alice', 'bob']],
    ['event notTriggered', () => one('event.purchase', 'notTriggered'), ['carol', 'dave', 'eve']],
    ['event triggeredWithin 7 days', () => one('event.purchase', 'triggeredWithin', 7, 'days'), ['alice', 'bob']],
    ['event triggeredWithin 48 hours', () => one('event.purchase', 'triggeredWithin', 48, 'hours'), ['alice']],
    ['event notTriggeredWithin 2 days', () => one('event.purchase', 'notTriggeredWithin', 2, 'days'), but('alice')],
    ['event triggeredMoreThan 2', () => one('event.purchase', 'triggeredMoreThan', 2), ['alice']],
    ['event triggeredMoreThan 0', () => one('event.purchase', 'triggeredMoreThan', 0), ['alice', 'bob']],
    ['event triggeredMoreThan 3', () => one('event.purchase', 'triggeredMoreThan', 3), []],
    ['event never tracked', () => one('event.nothing', 'triggered'), []],
    // email activity (the event stream)
    ['email.opened triggered', () => one('email.opened', 'triggered'), ['carol']],
    ['email.opened equals true', () => one('email.opened', 'equals', true), ['carol']],
    ['email.opened equals false', () => one('email.opened', 'equals', false), but('carol')],
    ['email.opened notEquals true', () => one('email.opened', 'notEquals', true), but('carol')],
    ['email.clicked triggeredWithin 7 days', () => one('email.clicked', 'triggeredWithin', 7, 'days'), []],
    ['email.clicked triggeredWithin 30 days', () => one('email.clicked', 'triggeredWithin', 30, 'days'), ['carol']],
    ['email.bounced notTriggered', () => one('email.bounced', 'notTriggered'), but('dave')],
    // segments
    ['memberOfSegment static', () => one(`segment.${staticId}`, 'memberOfSegment'), ['bob', 'dave']],
    ['notMemberOfSegment static', () => one(`segment.${staticId}`, 'notMemberOfSegment'), ['alice', 'carol', 'eve']],
    ['memberOfSegment dynamic', () => one(`segment.${dynamicId}`, 'memberOfSegment'), ['alice', 'bob', 'eve']],
    ['notMemberOfSegment dynamic', () => one(`segment.${dynamicId}`, 'notMemberOfSegment'), ['carol', 'dave']],
    // logic
    ['no groups: everyone', () => ({ logic: 'AND', groups: [] }), ALL],
    ['an empty group: everyone', () => ({ logic: 'OR', groups: [{ filters: [] }] }), ALL],
    ['AND joins groups', () => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'contains', value: 'pr' }] }, { filters: [{ field: 'subscribed', operator: 'equals', value: true }] }] }), ['alice', 'carol']],
    ['a group ANDs its filters', () => ({ logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'contains', value: 'pr' }, { field: 'event.purchase', operator: 'triggered' }] }] }), ['alice']],
    ['OR joins groups, nested conditions AND into their group', () => ({
      logic: 'OR', groups: [
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] },
        { filters: [{ field: 'email', operator: 'contains', value: 'test.org' }], conditions: { logic: 'AND', groups: [{ filters: [{ field: 'data.vip', operator: 'exists' }] }] } },
      ],
    }), ['alice', 'carol']],
    ['logic is case-insensitive', () => ({ logic: 'or', groups: [{ filters: [{ field: 'email', operator: 'equals', value: 'eve@example.com' }] }, { filters: [{ field: 'email', operator: 'equals', value: 'dave@test.org' }] }] }), ['dave', 'eve']],
    ['five levels deep', () => {
      let t: FilterTree = one('email', 'contains', 'test.org')
      for (let i = 0; i < 4; i++) t = { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'notContains', value: 'zzz' }], conditions: t }] }
      return t
    }, ['carol', 'dave']],
  ]

  describe('members per operator and field kind', () => {
    for (const [name, tree, expected] of cases) {
      test(name, async () => {
        expect(await members(tree())).toEqual(expected)
      })
    }
  })

  test('another project never sees these contacts (and vice versa)', async () => {
    expect(await members(one('data.plan', 'equals', 'pro'), other)).toEqual(['alice', 'zed'])
    expect(await members(one('event.purchase', 'triggered'), other)).toEqual(['zed'])
    expect(await members(one('email.opened', 'triggered'), other)).toEqual(['zed'])
    // This project's segments do not exist there.
    await expect(prepareFilter(other, one(`segment.${staticId}`, 'memberOfSegment'))).rejects.toBeInstanceOf(AppError)
  })

  test('hostile values, keys and event names select nothing they should not, and never fail', async () => {
    const before = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts`)
    const hostile = [
      `' OR '1'='1`, `" OR "1"="1`, `'); DELETE FROM contacts; --`, `pro' --`, `%`, `_`, `\\`, `$.plan`, `$[0]`, `*`,
      `' UNION SELECT id FROM contacts --`, `{}`, `null`, `]]'"\`$`,
    ]
    const fields = [
      `data.x') OR 1=1 --`, `data.$.plan`, `data."plan"`, `data.plan"]`, `data.a[0]`, `data.'; DROP TABLE contacts; --`,
      `data.plan\\`, `data.plan' OR '1'='1`, `data.*`, `data.$`, `data.plan]`, `data."`, `data.\\"`,
    ]
    for (const v of hostile) {
      expect(await members(one('data.plan', 'equals', v))).toEqual([])
      expect(await members(one('email', 'equals', v))).toEqual([])
      expect(await members(one('email', 'contains', v))).toEqual([])
      expect(await members(one('data.plan', 'contains', v))).toEqual([])
      expect(await members(one(`event.${v}`, 'triggered'))).toEqual([])
      expect(await members(one(`data.${v}`, 'exists'))).toEqual([])
      expect(await members(one('data.plan', 'notEquals', v))).toEqual(ALL)
    }
    for (const f of fields) {
      expect(await members(one(f, 'equals', 'pro'))).toEqual([])
      expect(await members(one(f, 'exists'))).toEqual([])
      expect(await members(one(f, 'greaterThan', 1))).toEqual([])
      expect(await members(one(f, 'within', 1, 'days'))).toEqual([])
    }
    const after = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts`)
    expect(Number(after[0].n)).toBe(Number(before[0].n))
  })

  test('a NUL character is a 422, never a database error', async () => {
    for (const tree of [one('data.plan', 'equals', 'a\u0000b'), one('event.a\u0000b', 'triggered'), one('data.a\u0000b', 'exists'), one('email', 'contains', '\u0000'), one('segment.a\u0000', 'memberOfSegment')]) {
      const err = await prepareFilter(ctx, tree).then(() => null, (e) => e)
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).status).toBe(422)
    }
  })

  test('malformed stored values compare as absent, never as an error', async () => {
    const p = await env.project()
    const c: FilterCtx = { store: env.store, projectId: p.id, now }
    await seed(env.store, p.id, now, [
      { email: 'odd1@x.io', age: DAY, data: { n: '1e99999', d: '2024-02-31', big: '9'.repeat(400) } },
      { email: 'odd2@x.io', age: DAY, data: { n: '0x10', d: '9999-12-31T23:59:59Z', big: 1e300 } },
      { email: 'odd3@x.io', age: DAY, data: { n: ' 7 ', d: '2024-13-01', big: -1e300, obj: { a: [1, 2] } } },
      { email: 'odd4@x.io', age: DAY, data: { n: [1], d: { x: 1 }, big: 'NaN', plan: ['pro'], o: { a: 'pro' } } },
      { email: 'odd5@x.io', age: DAY, data: { plan: '{"a":1}', o: '{"a":"pro"}', t: 'true', num: '42' } },
    ])
    const run = async (tree: unknown) => {
      const f = await prepareFilter(c, tree)
      return (await pageMatching(c, f, { offset: 0, limit: 10 })).map((r) => r.email).sort()
    }
    expect(await run(one('data.n', 'greaterThan', 0))).toEqual(['odd3@x.io'])
    expect(await run(one('data.n', 'equals', 7))).toEqual(['odd3@x.io'])
    // 2024-02-31 rolls over to 2024-03-02 in both stores; 2024-13-01 is no date.
    expect(await run(one('data.d', 'equals', '2024-03-02'))).toEqual(['odd1@x.io'])
    expect(await run(one('data.d', 'greaterThan', '2025-01-01'))).toEqual(['odd2@x.io'])
    expect(await run(one('data.big', 'greaterThan', 1e200))).toEqual(['odd1@x.io', 'odd2@x.io'])
    expect(await run(one('data.big', 'lessThan', 0))).toEqual(['odd3@x.io'])
    expect(await run(one('data.obj', 'equals', 'x'))).toEqual([])
    expect(await run(one('data.obj', 'exists'))).toEqual(['odd3@x.io'])
    expect(await run(one('data.obj.a', 'contains', '1'))).toEqual([])
    // Arrays and objects never equal a string; strings that look like JSON compare as text.
    expect(await run(one('data.plan', 'equals', 'pro'))).toEqual([])
    expect(await run(one('data.o', 'equals', '{"a":"pro"}'))).toEqual(['odd5@x.io'])
    expect(await run(one('data.plan', 'equals', '{"a":1}'))).toEqual(['odd5@x.io'])
    expect(await run(one('data.t', 'equals', 'true'))).toEqual(['odd5@x.io'])
    expect(await run(one('data.num', 'equals', '42'))).toEqual(['odd5@x.io'])
    expect(await run(one('data.o.a', 'equals', 'pro'))).toEqual(['odd4@x.io'])
  })
})
