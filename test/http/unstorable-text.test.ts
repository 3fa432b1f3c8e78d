import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'

/**
 * Text PostgreSQL cannot store — a NUL character or a lone UTF-16 surrogate — is refused before any query,
 * on every route, on both stores (src/http/text.ts): 400 in a path or a query string, 422 naming the field
 * in a body. Never a 500.
 */
forEachStore('unstorable text', (env) => {
  const NUL = 'a\u0000b'
  const SURROGATE = 'a\ud800b'

  test('every route: a NUL or a lone surrogate in a path parameter or the query string is 400; in a JSON body refused; never 5xx', async () => {
    const p = await env.project()
    const routes = (env.app.routes as Array<{ method: string; path: string }>).filter((r) => r.method !== 'OPTIONS' && !r.path.includes('*'))
    expect(routes.length).toBeGreaterThan(90)
    const failures: string[] = []
    for (const r of routes) {
      const withParams = (v: string) => r.path.replace(/:[A-Za-z_]+/g, v)
      const hasBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method)
      const probes: Array<[string, string, unknown, number[]]> = []
      // 401: a dashboard route refuses a request without a session before it reads anything else.
      if (r.path.includes(':')) {
        probes.push(['path NUL', withParams('x%00y'), undefined, [400, 401]])
        probes.push(['path surrogate', withParams('x%ED%A0%80y'), undefined, [400, 401]])
      }
      probes.push(['query NUL', `${withParams('x')}?q=%00&email=a%00b`, undefined, [400, 401]])
      if (hasBody) {
        const ok = (v: string) => ({ email: `n${v}@example.com`, name: v, event: v, subject: v, data: { [v]: v }, to: `t${v}@example.com` })
        // Routes that read their body themselves (forms, a provider's webhook) answer for their token first.
        probes.push(['body NUL', withParams('x'), ok(NUL), [400, 401, 404, 422]])
        probes.push(['body surrogate', withParams('x'), ok(SURROGATE), [400, 401, 404, 422]])
      }
      for (const [what, path, body, expected] of probes) {
        const res = await env.request(r.method, path, { key: p.secretKey, body })
        if (!expected.includes(res.status)) failures.push(`${r.method} ${r.path} ${what}: ${res.status} ${res.text.slice(0, 120)}`)
      }
    }
    expect(failures).toEqual([])
  }, 120_000)

  test('POST /v1/track with a public key: 422 naming the field, nothing stored; anonymous signup: 422', async () => {
    const p = await env.project()
    for (const [body, field] of [
      [{ email: 'nul@example.com', event: 'x', data: { plan: NUL } }, 'data.plan'],
      [{ email: 'nul@example.com', event: SURROGATE }, 'event'],
      [{ email: 'nul@example.com', event: 'x', data: { [NUL]: 1 } }, `data.${NUL}`],
    ] as const) {
      const r = await env.request('POST', '/v1/track', { key: p.publicKey, body })
      expect(r.status).toBe(422)
      expect(r.body.error.code).toBe('VALIDATION_ERROR')
      expect(r.body.error.errors[0]).toMatchObject({ field, code: 'invalid_text' })
    }
    const [n] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM contacts WHERE project_id = ${p.id}`)
    expect(Number(n.n)).toBe(0)
    const signup = await env.request('POST', '/auth/signup', { body: { email: 'x@example.com', password: `pass${NUL}word-long-enough` } })
    expect(signup.status).toBe(422)
    // Well-formed text (a pair of surrogates: one emoji) is stored as it is.
    const ok = await env.request('POST', '/v1/track', { key: p.publicKey, body: { email: 'emoji@example.com', event: 'x', data: { mood: '\ud83d\ude00' } } })
    expect(ok.status).toBe(200)
  })

  test('a segment with triggeredMoreThan 1e308 is 422, not 500', async () => {
    const p = await env.project()
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'event.purchase', operator: 'triggeredMoreThan', value: 1e308 }] }] }
    const r = await env.request('POST', '/segments', { key: p.secretKey, body: { name: 'Huge', condition } })
    expect(r.status).toBe(422)
    expect(r.body.error.errors[0]).toMatchObject({ code: 'too_big' })
    const preview = await env.request('POST', '/segments/preview', { key: p.secretKey, body: { condition } })
    expect([400, 404, 422]).toContain(preview.status)
  })
})
