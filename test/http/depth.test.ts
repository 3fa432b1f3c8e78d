import { expect, test } from 'bun:test'
import { forEachStore, type Res } from '../helpers/env'
import { MAX_BODY_DEPTH, tooDeepBranch } from '../../src/http/depth'

/** Issue 18: a JSON body nested 100,000 levels deep is a 422, on every route, never a 500 or a crash. */

const arrays = (n: number) => '['.repeat(n) + ']'.repeat(n)

test('tooDeepBranch: the top-level key of the first branch deeper than the limit', () => {
  expect(tooDeepBranch({ a: 1, b: { c: [[]] } }, 4)).toBeNull()
  expect(tooDeepBranch({ a: 1, b: { c: [[[]]] } }, 4)).toBe('b')
  expect(tooDeepBranch(JSON.parse(arrays(5)), 4)).toBe('')
  expect(tooDeepBranch(JSON.parse(arrays(4)), 4)).toBeNull()
  expect(tooDeepBranch({ x: JSON.parse(arrays(1_000_000)) })).toBe('x')
})

function expectTooDeep(r: Res, field: string) {
  expect(r.status).toBe(422)
  expect(r.body.error.code).toBe('VALIDATION_ERROR')
  expect(r.body.error.errors[0]).toMatchObject({ field, code: 'too_deep' })
}

forEachStore('hostile JSON depth', (env) => {
  test('100,000 levels in any field answer 422 naming the field; the limit leaves real bodies alone', async () => {
    const p = await env.project()
    const c = await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'c@example.com' } })
    const D = arrays(100_000)
    const send = (key: string, method: string, path: string, body: string) => env.request(method, path, { key, raw: body, headers: { 'content-type': 'application/json' } })
    const cases: Array<[Promise<Res>, string]> = [
      [send(p.publicKey, 'POST', '/v1/track', `{"email":"a@example.com","event":${D}}`), 'event'],
      [send(p.publicKey, 'POST', '/v1/track', `{"email":"a@example.com","event":"e","extra":${D}}`), 'extra'],
      [send(p.secretKey, 'POST', '/v1/send', `{"to":${D},"subject":"s","body":"b","from":"a@x.test"}`), 'to'],
      [send(p.secretKey, 'POST', '/segments', `{"name":"x","condition":{"logic":"AND","groups":${D}}}`), 'condition'],
      [send(p.secretKey, 'PATCH', `/contacts/${c.body.id}`, `{"extra":${D}}`), 'extra'],
      [send(p.secretKey, 'POST', '/contacts/lookup', `{"emails":${D}}`), 'emails'],
      [send(p.secretKey, 'POST', '/v1/verify', `{"email":${D}}`), 'email'],
      [send(p.secretKey, 'POST', '/templates', D), 'body'],
      [send(p.secretKey, 'POST', '/v1/track', `{"email":"a@example.com","event":"e","data":${D}}`), 'data'],
    ]
    for (const [r, field] of cases) expectTooDeep(await r, field)
    expect((await cases[cases.length - 1][0]).body.error.message).toContain('10 levels')
    // MAX_BODY_DEPTH levels, the body included, pass this guard (the extra key is then dropped).
    const ok = await send(p.publicKey, 'POST', '/v1/track', `{"email":"a@example.com","event":"e","extra":${arrays(MAX_BODY_DEPTH - 1)}}`)
    expect(ok.status).toBe(200)
    const tooDeep = await send(p.publicKey, 'POST', '/v1/track', `{"email":"a@example.com","event":"e","extra":${arrays(MAX_BODY_DEPTH)}}`)
    expectTooDeep(tooDeep, 'extra')
    expect(tooDeep.body.error.message).toContain(`${MAX_BODY_DEPTH} levels`)
  })
})
