import { expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'
import { buildApp } from '../../src/http/app'
import type { Logger } from '../../src/log'
import { AppError } from '../../src/errors'
import { conflictAnswer, LostRaceError } from '../../src/db/group-commit'
import { must } from '../helpers/must'

const UUIDISH = /^[0-9a-f-]{36}$/

/** A logger that keeps its records, to check what a failure logs. */
function memoryLogger(lines: Array<Record<string, unknown>>, base: Record<string, unknown> = {}): Logger {
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => { lines.push({ level, msg, ...base, ...fields }) }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (f) => memoryLogger(lines, { ...base, ...f }) }
}

forEachStore('HTTP core: envelope, request ids, limits', (env) => {
  test('X-Request-Id on success, error and HTML responses; the error body repeats it', async () => {
    const ok = await env.request('GET', '/health')
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ status: 'ok' })
    const missing = await env.request('GET', '/no/such/route')
    const docs = await env.request('GET', '/docs')
    const ids = [ok, missing, docs].map((r) => r.headers.get('x-request-id'))
    for (const id of ids) expect(id).toMatch(UUIDISH)
    expect(new Set(ids).size).toBe(3)
    expect(missing.body.error.requestId).toBe(missing.headers.get('x-request-id'))
  })

  test('unknown route: 404 NOT_FOUND in the envelope', async () => {
    const res = await env.request('POST', '/definitely/not/here', { body: {} })
    expect(res.status).toBe(404)
    expect(res.body).toEqual({
      success: false,
      message: expect.stringContaining('/definitely/not/here'),
      error: { code: 'NOT_FOUND', message: expect.stringContaining('/definitely/not/here'), statusCode: 404, requestId: expect.stringMatching(UUIDISH) },
      timestamp: expect.any(String),
    })
    expect(new Date(res.body.timestamp).toString()).not.toBe('Invalid Date')
  })

  test('malformed JSON: 400 BAD_REQUEST', async () => {
    const res = await env.request('POST', '/auth/login', { raw: '{"email": "a@b.c",', headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(400)
    expect(res.body.success).toBe(false)
    expect(res.body.error.code).toBe('BAD_REQUEST')
    expect(res.body.error.statusCode).toBe(400)
  })

  test('validation: 422 VALIDATION_ERROR with errors[] of {field, message, code, received}', async () => {
    const res = await env.request('POST', '/auth/signup', { body: { email: 'not-an-email', password: 12345678 } })
    expect(res.status).toBe(422)
    expect(res.body.error.code).toBe('VALIDATION_ERROR')
    expect(res.body.error.statusCode).toBe(422)
    const byField = Object.fromEntries(res.body.error.errors.map((e: { field: string }) => [e.field, e]))
    expect(byField.email).toEqual({ field: 'email', message: 'email: Invalid email', code: 'invalid_string', received: 'not-an-email' })
    expect(byField.password).toEqual({ field: 'password', message: expect.stringContaining('password'), code: 'invalid_type', received: 12345678 })
    for (const e of res.body.error.errors) expect(Object.keys(e).sort()).toEqual(['code', 'field', 'message', 'received'])
  })

  test('a body over the limit: 413 PAYLOAD_TOO_LARGE (declared length and on a real socket)', async () => {
    const big = JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(4000) })
    const res = await env.request('POST', '/auth/login', { raw: big, headers: { 'content-type': 'application/json', 'content-length': String(big.length) } })
    expect(res.status).toBe(413)
    expect(res.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', statusCode: 413 })
    const server = buildApp(env.deps).listen({ port: 0, hostname: '127.0.0.1' })
    try {
      const real = await fetch(`http://127.0.0.1:${server.server?.port}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big })
      expect(real.status).toBe(413)
      expect(((await real.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE')
      expect(real.headers.get('x-request-id')).toMatch(UUIDISH)
    } finally {
      await server.stop()
    }
  })

  test('an unexpected throw: generic 500 INTERNAL_SERVER_ERROR, details only in the log with the request id', async () => {
    const lines: Array<Record<string, unknown>> = []
    const app = buildApp({ ...env.deps, log: memoryLogger(lines) })
      .get('/test/boom', () => { throw new Error('secret internal detail') })
      .get('/test/app-error', () => { throw new AppError('CONFLICT', 'a known conflict') })
    const res = await app.handle(new Request('http://localhost/test/boom'))
    const body = (await res.json()) as { error: { code: string; message: string; requestId: string; statusCode: number } }
    expect(res.status).toBe(500)
    expect(body.error.code).toBe('INTERNAL_SERVER_ERROR')
    expect(body.error.statusCode).toBe(500)
    expect(JSON.stringify(body)).not.toContain('secret internal detail')
    const id = res.headers.get('x-request-id')
    expect(body.error.requestId).toBe(must(id, 'an x-request-id header'))
    const logged = lines.find((l) => l.level === 'error')
    expect(logged).toMatchObject({ msg: 'unhandled error', requestId: id, error: 'secret internal detail', path: '/test/boom', method: 'GET' })
    expect(String(logged?.stack)).toContain('secret internal detail')

    const known = await app.handle(new Request('http://localhost/test/app-error'))
    expect(known.status).toBe(409)
    expect(((await known.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'CONFLICT', message: 'a known conflict' })
    // Every request gets one JSON log line with its id, status and duration (written after the response).
    for (let i = 0; i < 100 && lines.filter((l) => l.msg === 'request').length < 2; i++) await Bun.sleep(10)
    const reqLines = lines.filter((l) => l.msg === 'request')
    expect(reqLines.map((l) => [l.path, l.status])).toEqual([['/test/boom', 500], ['/test/app-error', 409]])
    for (const l of reqLines) {
      expect(l.requestId).toMatch(UUIDISH)
      expect(typeof l.ms).toBe('number')
    }
  })

  test('a write that conflicted on every run (a LostRaceError): 409 CONFLICT, and a warning in the log; a deadlock not run again stays a 500', async () => {
    const lines: Array<Record<string, unknown>> = []
    // As drizzle throws the driver's error: wrapped, the code on its cause.
    const driverError = (code: string) => Object.assign(new Error('Failed query: UPDATE contacts ...'), { cause: Object.assign(new Error('deadlock detected'), { code }) })
    const app = buildApp({ ...env.deps, log: memoryLogger(lines) })
      .get('/test/lost-race', () => { throw new LostRaceError('A contact vanished; send the request again') })
      .get('/test/deadlock-every-run', () => { throw conflictAnswer(driverError('40P01')) })
      .get('/test/deadlock', () => { throw driverError('40P01') })
    for (const path of ['/test/lost-race', '/test/deadlock-every-run']) {
      const res = await app.handle(new Request(`http://localhost${path}`))
      const body = (await res.json()) as { error: { code: string; message: string; requestId: string } }
      expect({ path, status: res.status, code: body.error.code }).toEqual({ path, status: 409, code: 'CONFLICT' })
      expect(body.error.message).toContain('send the request again')
      const warned = lines.filter((l) => l.level === 'warn' && l.path === path)
      expect(warned).toMatchObject([{ msg: 'write conflicted on every run', requestId: body.error.requestId, method: 'GET' }])
    }
    // The driver's error is in the log line, not in the answer.
    expect(lines.find((l) => l.path === '/test/deadlock-every-run' && l.level === 'warn')).toMatchObject({ error: 'Failed query: UPDATE contacts ...', cause: 'deadlock detected' })
    // A deadlock that reaches the handler as it is was not run again (a transaction outside the group
    // commit): a 500, logged as an error, as before.
    const other = await app.handle(new Request('http://localhost/test/deadlock'))
    expect(other.status).toBe(500)
    expect(lines.filter((l) => l.path === '/test/deadlock').map((l) => [l.level, l.msg])).toContainEqual(['error', 'unhandled error'])
    expect(lines.filter((l) => l.msg === 'write conflicted on every run')).toHaveLength(2)
  })

  test('/ready: 200 when migrated, 503 when a migration is missing', async () => {
    const ok = await env.request('GET', '/ready')
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ status: 'ready', checks: { database: true, migrations: true, storage: true } })
    const [last] = await env.store.rows<{ name: string }>(sql`SELECT name FROM schema_migrations ORDER BY name DESC LIMIT 1`)
    await env.store.exec(sql`DELETE FROM schema_migrations WHERE name = ${last.name}`)
    try {
      const res = await env.request('GET', '/ready')
      expect(res.status).toBe(503)
      expect(res.body).toEqual({ status: 'not_ready', checks: { database: true, migrations: false, storage: true }, problems: { migrations: 'migrations not applied: run `mailctl migrate`' } })
    } finally {
      await env.store.exec(env.kind === 'pg'
        ? sql`INSERT INTO schema_migrations (name) VALUES (${last.name})`
        : sql`INSERT INTO schema_migrations (name, applied_at) VALUES (${last.name}, ${Date.now()})`)
    }
    expect((await env.request('GET', '/ready')).status).toBe(200)
  })
}, { maxBodyBytes: 2048 })

forEachStore('OpenAPI document and /docs', (env) => {
  test('/openapi.json is OpenAPI 3.1 with the route schemas and security schemes', async () => {
    const res = await env.request('GET', '/openapi.json')
    expect(res.status).toBe(200)
    expect(res.body.openapi).toStartWith('3.1')
    const paths = res.body.paths
    for (const p of ['/auth/signup', '/auth/login', '/users/@me', '/users/@me/projects', '/users/@me/projects/{id}/regenerate-keys', '/projects/{id}/members', '/projects/{id}/members/{userId}', '/projects/{id}/setup-state', '/config', '/health', '/ready']) {
      expect(paths[p]).toBeDefined()
    }
    const signup = paths['/auth/signup'].post.requestBody.content['application/json'].schema
    expect(signup.required).toEqual(['email', 'password'])
    expect(signup.properties.email.format).toBe('email')
    const created = paths['/users/@me/projects'].post.responses['201'].content['application/json'].schema
    expect(Object.keys(created.properties)).toContain('secretKey')
    expect(Object.keys(created.properties)).not.toContain('secretKeyHash')
    const listed = paths['/users/@me/projects'].get.responses['200'].content['application/json'].schema
    expect(Object.keys(listed.items.properties)).not.toContain('secretKey')
    expect(Object.keys(res.body.components.securitySchemes).sort()).toEqual(['projectId', 'publicKey', 'secretKey', 'session'])
    expect(paths['/docs']).toBeUndefined()
  })

  test('/docs is a self-contained HTML reference (no external scripts, styles or fonts)', async () => {
    const res = await env.request('GET', '/docs')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/html')
    expect(res.text).toStartWith('<!doctype html>')
    expect(res.text).not.toMatch(/<script|<link|src=["']?https?:|@import|url\(/i)
    expect(res.text).not.toMatch(/href=["']https?:/i)
    expect(res.text).toContain('/auth/signup')
    expect(res.text).toContain('/users/@me/projects/{id}/regenerate-keys')
    expect(res.text).toContain('Regenerate both API keys')
    expect(res.text).toContain('<code>email</code> <span class="req">required</span>')
  })

  test('/docs: a curl example per endpoint, SDK examples for /v1/send and /v1/track, Markdown descriptions', async () => {
    const res = await env.request('GET', '/docs')
    const base = env.config.publicUrl
    const sections = res.text.split('<section class="op"').slice(1)
    expect(sections.length).toBeGreaterThan(50)
    for (const sec of sections) expect(sec).toContain('<h4>Example</h4><pre class="example"><code>curl ')
    expect(res.text).toContain(`curl -X POST &quot;${base}/v1/send&quot; \\\n  -H &quot;Authorization: Bearer $MAILCTL_SECRET_KEY&quot;`)
    expect(res.text).toContain(`curl &quot;${base}/contacts&quot; \\\n  -H &quot;Authorization: Bearer $MAILCTL_SECRET_KEY&quot;`)
    expect(res.text).toContain(`curl -X POST &quot;${base}/v1/track&quot; \\\n  -H &quot;Authorization: Bearer $MAILCTL_PUBLIC_KEY&quot;`)
    expect(res.text).toContain(`curl -X POST &quot;${base}/contacts/import&quot; \\\n  -H &quot;Authorization: Bearer $MAILCTL_SECRET_KEY&quot; \\\n  -F &quot;file=@contacts.csv&quot;`)
    expect(res.text).toContain(`curl &quot;${base}/health&quot;</code>`)
    expect(res.text).toContain(`new Plunk(process.env.MAILCTL_SECRET_KEY, { baseUrl: &#39;${base}/v1/&#39; })`)
    expect(res.text).toContain('await plunk.emails.send({')
    expect(res.text).toContain('await plunk.events.track({')
    // Descriptions are Markdown: backticks become <code>, and no raw backtick is left anywhere.
    expect(res.text).toContain('Each recipient of <code>to</code> is processed')
    expect(res.text).not.toContain('`')
    // Raw HTML in a description is text, not markup.
    expect(res.text).toContain('segment.&lt;slug&gt;.entry')
    // No reference to files that are not shipped with the server.
    const spec = JSON.stringify((await env.request('GET', '/openapi.json')).body)
    for (const file of ['API.md', 'DECISIONS.md', 'STYLE.md', 'NOTES.md', 'OPERATIONS.md']) {
      expect(res.text).not.toContain(file)
      expect(spec).not.toContain(file)
    }
  })

  test('/openapi.json: every key- or session-authenticated route declares its security', async () => {
    const paths = (await env.request('GET', '/openapi.json')).body.paths
    expect(paths['/contacts'].get.security).toContainEqual({ secretKey: [] })
    expect(paths['/contacts'].get.security).toContainEqual({ session: [], projectId: [] })
    expect(paths['/segments/{id}'].patch.security).toContainEqual({ secretKey: [] })
    expect(paths['/v1/track'].post.security).toContainEqual({ publicKey: [] })
    expect(paths['/users/@me'].get.security).toContainEqual({ session: [] })
    expect(paths['/health'].get.security).toBeUndefined()
  })
})
