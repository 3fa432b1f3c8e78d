import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ownedProject, verifiedUser } from '../helpers/accounts'
import { forEachStore } from '../helpers/env'
import { AppError } from '../../src/errors'
import { createProject } from '../../src/modules/projects/service'
import { addDomain, campaignBody } from '../modules/campaigns/fixture'

/**
 * Text PostgreSQL cannot store — a NUL character or a lone UTF-16 surrogate — is refused before any query,
 * on every route, on both stores (src/http/text.ts): 400 in a path or a query string, 422 naming the field
 * in a body. Never a 500. So are values that reach a query in another form (src/storable.ts): a cursor
 * decoded from base64, a date outside the years PostgreSQL reads, a CSV header.
 */
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
forEachStore('unstorable text', (env) => {
  const NUL = 'a\u0000b'
  const SURROGATE = 'a\ud800b'

  test('every route: a NUL or a lone surrogate in a path parameter or the query string is 400; in a JSON body refused; never 5xx', async () => {
    // The key of a project and its owner's session: dashboard routes read their path too, instead of a 401.
    const user = await verifiedUser(env)
    const p = await ownedProject(env, user)
    const routes = (env.app.routes as Array<{ method: string; path: string }>).filter((r) => r.method !== 'OPTIONS' && !r.path.includes('*'))
    expect(routes.length).toBeGreaterThan(90)
    // Routes without a JSON body: those that read theirs themselves (SNS's text, a CSV form) answer for its
    // format or signature first (400); their own tests send them such text (webhooks.test.ts, the CSV test
    // below). The others never read one.
    const doc = (await env.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>> }
    const ownBody = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops)
      .filter(([, op]) => !op.requestBody?.content?.['application/json'])
      .map(([method]) => `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`)))
    const failures: string[] = []
    for (const r of routes) {
      const withParams = (v: string) => r.path.replace(/:[A-Za-z_]+/g, v)
      const hasBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method)
      const probes: Array<[string, string, unknown, number[]]> = []
      if (r.path.includes(':')) {
        probes.push(['path NUL', withParams('x%00y'), undefined, [400]])
        probes.push(['path surrogate', withParams('x%ED%A0%80y'), undefined, [400]])
      }
      probes.push(['query NUL', `${withParams('x')}?q=%00&email=a%00b`, undefined, [400]])
      if (hasBody) {
        const ok = (v: string) => ({ email: `n${v}@example.com`, name: v, event: v, subject: v, data: { [v]: v }, to: `t${v}@example.com` })
        // The text alone in one place, deep: a key in an object in an array, a value in an array in an array.
        const deepKey = (v: string) => ({ email: 'deep@example.com', data: { list: [{ [v]: 1 }] } })
        const deepValue = (v: string) => ({ email: 'deep@example.com', data: { list: [[1, v]] } })
        // 404: a route that takes no body never reads one (nothing of it is stored): it answers for its path.
        const refused = ownBody.has(`${r.method} ${r.path}`) ? [400, 404, 422] : [404, 422]
        for (const [name, v] of [['NUL', NUL], ['surrogate', SURROGATE]]) {
          probes.push([`body ${name}`, withParams('x'), ok(v), refused])
          probes.push([`body ${name} in a key in an array`, withParams('x'), deepKey(v), refused])
          probes.push([`body ${name} in an array in an array`, withParams('x'), deepValue(v), refused])
        }
      }
      for (const [what, path, body, expected] of probes) {
        const res = await env.request(r.method, path, { key: p.secretKey, cookie: user.cookie, body })
        // A body's answer names the text, not some other fault of a body made up for every route.
        const named = body === undefined || res.status !== 422 || res.body?.error?.errors?.[0]?.code === 'invalid_text'
        if (!expected.includes(res.status) || !named) failures.push(`${r.method} ${r.path} ${what}: ${res.status} ${res.text.slice(0, 120)}`)
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

  test('every query parameter of every route (from the OpenAPI document): forged cursors, huge numbers, dates outside 0001-9999: 4xx, never 5xx', async () => {
    const user = await verifiedUser(env)
    const p = await ownedProject(env, user)
    const auth = { key: p.secretKey, cookie: user.cookie }
    const made = async (path: string, body: unknown) => {
      const r = await env.request('POST', path, { ...auth, body })
      if (r.status !== 201 && r.status !== 200) throw new Error(`POST ${path}: ${r.status} ${r.text}`)
      return (r.body.id ?? r.body.data.id) as string
    }
    // Real resources for the path parameters, so that a list reads its query instead of answering 404 first.
    await addDomain(env, p.id, 'walk.test', true)
    const ids: Array<[string, string]> = [
      ['/contacts', await made('/contacts', { email: 'walk@example.com' })],
      ['/events/contact', await made('/contacts', { email: 'walk2@example.com' })],
      ['/segments', await made('/segments', { name: 'Walk', condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: 'walk' }] }] } })],
      ['/campaigns', await made('/campaigns', campaignBody({ from: 'news@walk.test' }))],
      ['/workflows', await made('/workflows', { name: 'Walk', eventName: 'walk' })],
      ['/webhooks/endpoints', await made('/webhooks/endpoints', { url: 'https://example.com/walk', events: ['*'] })],
      ['/templates', await made('/templates', { name: 'Walk', subject: 's', body: '<p>b</p>', from: 'news@walk.test' })],
      ['/users/@me/projects', p.id],
      ['/projects', p.id],
    ]
    const idFor = (path: string) => ids.find(([prefix]) => path.startsWith(`${prefix}/`))?.[1] ?? 'x'
    const doc = (await env.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>> }
    const forged = new Set([
      b64([1e308, 'x']), b64([-1e308, 'x']), b64([0, 'a\u0000b']), b64([0, 'a\ud800']),
      b64(['createdAt', 'desc', 1e308, 'x']), b64(['email', 'asc', 'a\u0000b', 'x']), b64(['createdAt', 'asc', 0, '\udfff']),
    ])
    const hostile = [
      ...forged, '1e308', '-1e308', '99999999999999999999999', String(Number.MAX_SAFE_INTEGER), 'NaN',
      '0000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '9999-12-31T23:59:59Z',
    ]
    let probed = 0
    const failures: string[] = []
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const query = (op.parameters ?? []).filter((x) => x.in === 'query').map((x) => x.name)
        if (!query.length) continue
        const path = template.replace(/\{[^}]+\}/g, idFor(template))
        for (const name of query) {
          for (const value of hostile) {
            probed++
            const res = await env.request(method.toUpperCase(), `${path}?${name}=${encodeURIComponent(value)}`, auth)
            // A forged cursor is refused as such on both stores, whatever it carries (billing's is the
            // payment provider's, and no provider is configured here).
            const expected = name === 'cursor' && forged.has(value) && !template.endsWith('/billing-invoices') ? res.status === 400 : res.status < 500
            if (!expected) failures.push(`${method.toUpperCase()} ${template}?${name}=${value}: ${res.status} ${res.text.slice(0, 100)}`)
          }
        }
      }
    }
    expect(probed).toBeGreaterThan(500)
    expect(failures).toEqual([])
  }, 120_000)

  test('a forged cursor in a body, a filter date or a replay time outside 0001-9999: 400/422 before any query', async () => {
    const p = await env.project()
    for (const cursor of [b64(['createdAt', 'desc', 1e308, 'x']), b64(['email', 'asc', 'a\u0000b', 'x'])]) {
      const r = await env.request('POST', '/contacts/query', { key: p.secretKey, body: { cursor } })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('BAD_REQUEST')
    }
    for (const value of [1e308, -1e308, 8.64e15, '0000-01-01', '0000-12-31T23:59:59Z']) {
      const condition = { logic: 'AND', groups: [{ filters: [{ field: 'createdAt', operator: 'greaterThan', value }] }] }
      for (const [path, body] of [['/contacts/query/count', { condition }], ['/segments', { name: 'Dated', condition }]] as const) {
        const r = await env.request('POST', path, { key: p.secretKey, body })
        expect(r.status).toBe(422)
        expect(r.body.error.errors[0]).toMatchObject({ field: 'condition.groups.0.filters.0.value', code: 'invalid_date' })
      }
    }
    // The last day the stores hold: its end (9999-12-31 + 1 day) is computed past them, and read back into them.
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'dated@example.com' } })
    for (const [operator, n] of [['greaterThan', 0], ['lessThan', 1], ['equals', 0]] as const) {
      const condition = { logic: 'AND', groups: [{ filters: [{ field: 'updatedAt', operator, value: '9999-12-31' }] }] }
      const r = await env.request('POST', '/contacts/query/count', { key: p.secretKey, body: { condition } })
      expect(r.status).toBe(200)
      expect(r.body.total).toBe(n)
    }
    const hook = await env.request('POST', '/webhooks/endpoints', { key: p.secretKey, body: { url: 'https://example.com/h', events: ['*'] } })
    for (const since of ['0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z']) {
      const r = await env.request('POST', `/webhooks/endpoints/${hook.body.id}/replay`, { key: p.secretKey, body: { since } })
      expect(r.status).toBe(400)
      expect(r.body.error.message).toContain('since')
    }
  })

  test('an email whose HTML names half a surrogate pair (&#xD800;): sent (was 500 on PostgreSQL), its text with U+FFFD as a browser reads it', async () => {
    const p = await env.project()
    await addDomain(env, p.id, 'refs.test', true)
    const body = '<p>a&#xD800;b <a href="https://example.com/&#xDC00;">go</a></p>'
    const r = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'r@example.com', from: 'news@refs.test', subject: 's', body } })
    expect(r.status).toBe(200)
    const [email] = await env.store.rows<{ text: string }>(sql`SELECT c.text FROM email_contents c JOIN emails e ON e.id = c.email_id WHERE e.project_id = ${p.id}`)
    expect(email.text).toContain('a\uFFFDb')
  })

  test('input that does not come through HTTP (the CLI creating a project) is refused the same way: 422 invalid_text', async () => {
    const refused = await createProject(env.store, { name: `p${NUL}` }).then(() => null, (e: unknown) => e)
    expect(refused).toBeInstanceOf(AppError)
    expect((refused as AppError).opts.errors).toEqual([expect.objectContaining({ field: 'name', code: 'invalid_text' })])
  })

  test('CSV import: a header or a file name with a NUL is 422 naming the file, nothing queued; a NUL in a cell fails its row', async () => {
    const p = await env.project()
    const upload = (path: string, csv: string, name = 'c.csv') => {
      const form = new FormData()
      form.append('file', new File([csv], name, { type: 'text/csv' }))
      return env.app.handle(new Request(`http://localhost${path}`, { method: 'POST', headers: { authorization: `Bearer ${p.secretKey}` }, body: form }))
    }
    for (const path of ['/contacts/import', '/contacts/import/preview']) {
      const res = await upload(path, 'email,pl\u0000an\nx@example.com,a\n')
      expect(res.status).toBe(422)
      expect(((await res.json()) as { error: { errors: unknown[] } }).error.errors[0]).toMatchObject({ field: 'file', code: 'invalid_text' })
    }
    const [jobs] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM jobs WHERE project_id = ${p.id}`)
    expect(Number(jobs.n)).toBe(0)
    const preview = await upload('/contacts/import/preview', 'email,plan\nx@example.com,a\u0000b\ny@example.com,ok\n')
    expect(preview.status).toBe(200)
    expect(((await preview.json()) as { errors: Array<{ row: number }> }).errors.map((e) => e.row)).toEqual([2])
  })
})

