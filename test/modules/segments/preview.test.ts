import { beforeAll, describe, expect, test } from 'bun:test'
import { forEachStore } from '../../helpers/env'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../../helpers/accounts'

const cond = (field: string, operator: string, value?: unknown, unit?: string) =>
  ({ logic: 'AND', groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) }] }] })

/** POST /segments/preview: the live count of an unsaved condition (the dashboard's segment builder). */
forEachStore('POST /segments/preview', (env) => {
  let key: string
  let pub: string
  let otherKey: string
  const req = (method: string, path: string, body?: unknown, k: string | null = key) => env.request(method, path, { key: k, body })
  const preview = (body: unknown, k: string | null = key) => req('POST', '/segments/preview', body, k)

  beforeAll(async () => {
    const p = await env.project()
    const o = await env.project()
    key = p.secretKey
    pub = p.publicKey
    otherKey = o.secretKey
    for (const [email, subscribed, data] of [
      ['ann@example.com', true, { plan: 'pro', age: 31 }],
      ['ben@example.com', false, { plan: 'free', age: 19 }],
      ['cat@example.com', true, { plan: 'pro', age: 45 }],
      ['dan@example.com', true, { plan: 'free' }],
    ] as const) expect((await req('POST', '/contacts', { email, subscribed, data })).status).toBe(201)
    expect((await req('POST', '/v1/track', { email: 'cat@example.com', event: 'purchase' })).status).toBe(200)
    expect((await req('POST', '/v1/track', { email: 'dan@example.com', event: 'purchase' })).status).toBe(200)
    // The other project has matching contacts too; they never count here.
    expect((await req('POST', '/contacts', { email: 'ann@example.com', data: { plan: 'pro' } }, otherKey)).status).toBe(201)
  })

  test('counts what a condition matches now, nested groups and events included, and writes nothing', async () => {
    const before = (await req('GET', '/segments')).body.length
    expect((await preview({ condition: cond('data.plan', 'equals', 'pro') })).body).toMatchObject({ count: 2 })
    // (ann or ben) through a nested OR tree, AND'ed with a data field and an event condition.
    const nested = {
      logic: 'AND',
      groups: [{
        filters: [{ field: 'data.age', operator: 'greaterThan', value: 18 }],
        conditions: { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }, { filters: [{ field: 'subscribed', operator: 'equals', value: false }] }] },
      }],
    }
    const r = await preview({ condition: nested })
    expect(r.status).toBe(200)
    expect(r.body.count).toBe(3)
    expect(Date.parse(r.body.countedAt)).toBeGreaterThan(0)
    nested.groups[0].filters.push({ field: 'event.purchase', operator: 'triggered' } as never)
    expect((await preview({ condition: nested })).body.count).toBe(1)
    expect((await preview({ condition: cond('event.purchase', 'triggeredWithin', 7, 'days') })).body.count).toBe(2)
    expect((await preview({ condition: cond('createdAt', 'within', 1, 'hours') })).body.count).toBe(4)
    expect((await preview({ condition: { logic: 'AND', groups: [] } })).body.count).toBe(4)
    expect((await req('GET', '/segments')).body.length).toBe(before)
  })

  test('a segment being edited: references to it are cycles; references to others count', async () => {
    const pro = (await req('POST', '/segments', { name: 'Pro', condition: cond('data.plan', 'equals', 'pro') })).body
    const other = (await req('POST', '/segments', { name: 'Refers', condition: cond(`segment.${pro.id}`, 'memberOfSegment') })).body
    expect((await preview({ condition: cond(`segment.${pro.id}`, 'notMemberOfSegment') })).body.count).toBe(2)
    const self = await preview({ condition: cond(`segment.${pro.id}`, 'memberOfSegment'), segmentId: pro.id })
    expect(self.status).toBe(422)
    expect(self.body.error.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0.field', code: 'segment_cycle' })
    const cycle = await preview({ condition: cond(`segment.${other.id}`, 'memberOfSegment'), segmentId: pro.id })
    expect(cycle.status).toBe(422)
    expect(cycle.body.error.errors[0].code).toBe('segment_cycle')
  })

  test('bad conditions: 422 with the path of each bad part; missing or not an object: the flat 400', async () => {
    const bad = await preview({
      condition: {
        logic: 'AND',
        groups: [{
          filters: [{ field: 'email', operator: 'contains', value: 'a' }],
          conditions: { logic: 'OR', groups: [{ filters: [{ field: 'data.age', operator: 'greaterThan', value: 'abc' }] }, { filters: [{ field: 'createdAt', operator: 'within', value: 3, unit: 'weeks' }] }] },
        }],
      },
    })
    expect(bad.status).toBe(422)
    expect(bad.body.error.code).toBe('VALIDATION_ERROR')
    expect(bad.body.error.errors.map((e: { field: string }) => e.field)).toEqual([
      'condition.groups.0.conditions.groups.0.filters.0.value',
      'condition.groups.0.conditions.groups.1.filters.0.unit',
    ])
    for (const body of [{ condition: null }, { condition: 'everyone' }, { condition: [] }, { condition: 5 }, {}]) {
      const r = await preview(body)
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ error: 'Condition is required for DYNAMIC segments' })
    }
    const badSegmentId = await preview({ condition: cond('email', 'contains', 'a'), segmentId: 'x'.repeat(65) })
    expect([badSegmentId.status, badSegmentId.body.error.code]).toEqual([422, 'VALIDATION_ERROR'])
    const unknownOp = await preview({ condition: cond('data.plan', 'biggerThan', 1) })
    expect(unknownOp.body.error.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0.operator', code: 'unknown_operator' })
  })

  describe('security', () => {
    test('no key: 401; a public key: 401 INVALID_API_KEY; a bad key: 401', async () => {
      const body = { condition: cond('data.plan', 'equals', 'pro') }
      expect((await preview(body, null)).body.error.code).toBe('UNAUTHORIZED')
      const p = await preview(body, pub)
      expect([p.status, p.body.error.code]).toEqual([401, 'INVALID_API_KEY'])
      expect((await preview(body, `sk_${'0'.repeat(64)}`)).status).toBe(401)
    })

    test("another project's contacts never count; its segments are 404 as segmentId and unknown in a condition", async () => {
      expect((await preview({ condition: cond('email', 'equals', 'ann@example.com') }, otherKey)).body.count).toBe(1)
      expect((await preview({ condition: cond('email', 'equals', 'ben@example.com') }, otherKey)).body.count).toBe(0)
      const mine = (await req('POST', '/segments', { name: 'Mine', type: 'STATIC' })).body
      const asId = await preview({ condition: cond('email', 'contains', 'a'), segmentId: mine.id }, otherKey)
      expect([asId.status, asId.body.error.code]).toEqual([404, 'NOT_FOUND'])
      const asRef = await preview({ condition: cond(`segment.${mine.id}`, 'memberOfSegment') }, otherKey)
      expect(asRef.status).toBe(422)
      expect(asRef.body.error.errors[0].code).toBe('unknown_segment')
    })

    test('hostile values: a 200 counting nobody or a 422, never a 500', async () => {
      for (const v of [`' OR 1=1 --`, `"; DROP TABLE contacts; --`, '%', '\\', `') UNION SELECT email FROM contacts --`]) {
        for (const c of [cond('data.plan', 'equals', v), cond(`data.${v}`, 'exists'), cond(`event.${v}`, 'triggered'), cond('email', 'contains', v), cond(v, 'equals', 'x')]) {
          const r = await preview({ condition: c })
          expect([200, 422]).toContain(r.status)
          if (r.status === 200) expect(r.body.count).toBe(0)
        }
      }
    })
  })

  describe('dashboard sessions', () => {
    let owner: TestUser
    let projectId = ''
    const as = (u: TestUser, pid: string) => ({ cookie: u.cookie, headers: { 'x-project-id': pid } })

    beforeAll(async () => {
      owner = await verifiedUser(env, 'owner')
      const p = await ownedProject(env, owner)
      projectId = p.id
      expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'only@example.com', data: { plan: 'pro' } } })).status).toBe(201)
    })

    test('each role counts; a user who is not a member gets 404', async () => {
      const admin = await memberOf(env, owner, projectId, 'ADMIN')
      const member = await memberOf(env, owner, projectId, 'MEMBER')
      const body = { condition: cond('data.plan', 'equals', 'pro') }
      for (const [role, u] of [['OWNER', owner], ['ADMIN', admin], ['MEMBER', member]] as const) {
        const r = await env.request('POST', '/segments/preview', { ...as(u, projectId), body })
        expect({ role, status: r.status, count: r.body.count }).toEqual({ role, status: 200, count: 1 })
      }
      const stranger = await verifiedUser(env, 'stranger')
      const r = await env.request('POST', '/segments/preview', { ...as(stranger, projectId), body })
      expect([r.status, r.body.error.code]).toEqual([404, 'NOT_FOUND'])
      // A cookie without the project header is refused.
      expect((await env.request('POST', '/segments/preview', { cookie: owner.cookie, body })).status).toBe(401)
    })
  })
})
