import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../helpers/env'
import { memberOf, ownedProject, verifiedUser, type TestUser } from '../helpers/accounts'

/** docs/decisions.md, The dashboard: the session cookie plus X-Project-Id on the routes that take a secret key. */
forEachStore('Dashboard guard: session cookie + X-Project-Id', (env) => {
  const as = (u: TestUser, projectId: string | null, extra: Record<string, string> = {}) => ({
    cookie: u.cookie, headers: { ...(projectId ? { 'x-project-id': projectId } : {}), ...extra },
  })

  test('first-run state: true before any account exists, false after', async () => {
    expect((await env.request('GET', '/auth/first-run')).body).toEqual({ firstRun: true })
    await verifiedUser(env)
    expect((await env.request('GET', '/auth/first-run')).body).toEqual({ firstRun: false })
  })

  test('each role reads and writes resources; the context is the named project', async () => {
    const owner = await verifiedUser(env, 'owner')
    const p = await ownedProject(env, owner)
    const admin = await memberOf(env, owner, p.id, 'ADMIN')
    const member = await memberOf(env, owner, p.id, 'MEMBER')
    for (const [role, u] of [['OWNER', owner], ['ADMIN', admin], ['MEMBER', member]] as const) {
      const email = `${role.toLowerCase()}-${Math.random().toString(36).slice(2, 8)}@example.com`
      const created = await env.request('POST', '/contacts', { ...as(u, p.id), body: { email } })
      expect({ role, status: created.status }).toEqual({ role, status: 201 })
      const list = await env.request('GET', `/contacts?search=${encodeURIComponent(email)}`, as(u, p.id))
      expect({ role, status: list.status, emails: list.body.data.map((c: { email: string }) => c.email) }).toEqual({ role, status: 200, emails: [email] })
      // The same row through the project's secret key: the session acted on that project.
      const byKey = await env.request('GET', `/contacts/${created.body.id}`, { key: p.secretKey })
      expect(byKey.status).toBe(200)
    }
  })

  test('a user who is not a member gets 404 for the project, reading or writing; its data stays hidden', async () => {
    const owner = await verifiedUser(env, 'owner')
    const p = await ownedProject(env, owner)
    await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'hidden@example.com' } })
    const stranger = await verifiedUser(env, 'stranger')
    await ownedProject(env, stranger)
    for (const [method, path, body] of [['GET', '/contacts', undefined], ['POST', '/contacts', { email: 'x@example.com' }], ['GET', `/domains/project/${p.id}`, undefined]] as const) {
      const res = await env.request(method, path, { ...as(stranger, p.id), body })
      expect({ path, method, status: res.status, code: res.body.error.code }).toEqual({ path, method, status: 404, code: 'NOT_FOUND' })
    }
    const unknown = await env.request('GET', '/contacts', as(stranger, 'no-such-project'))
    expect(unknown.status).toBe(404)
  })

  test('a member of two projects sees each project through its header only', async () => {
    const owner = await verifiedUser(env, 'owner')
    const a = await ownedProject(env, owner)
    const b = await ownedProject(env, owner)
    await env.request('POST', '/contacts', { ...as(owner, a.id), body: { email: 'only-a@example.com' } })
    const inA = await env.request('GET', '/contacts?search=only-a', as(owner, a.id))
    const inB = await env.request('GET', '/contacts?search=only-a', as(owner, b.id))
    expect(inA.body.data).toHaveLength(1)
    expect(inB.body.data).toHaveLength(0)
    // Another project's row by id, through the header of the project it is not in: 404.
    const row = inA.body.data[0]
    expect((await env.request('GET', `/contacts/${row.id}`, as(owner, b.id))).status).toBe(404)
  })

  test('the cookie without X-Project-Id is refused (401), safe or unsafe: a cross-site form cannot act', async () => {
    const u = await verifiedUser(env)
    await ownedProject(env, u)
    for (const method of ['GET', 'POST'] as const) {
      const res = await env.request(method, '/contacts', { cookie: u.cookie, body: method === 'POST' ? { email: 'csrf@example.com' } : undefined })
      expect({ method, status: res.status, code: res.body.error.code }).toEqual({ method, status: 401, code: 'UNAUTHORIZED' })
      expect(res.body.error.message).toContain('X-Project-Id')
    }
  })

  test('X-Project-Id without a session, or with an ended session, is 401', async () => {
    const u = await verifiedUser(env)
    const p = await ownedProject(env, u)
    expect((await env.request('GET', '/contacts', { headers: { 'x-project-id': p.id } })).status).toBe(401)
    expect((await env.request('GET', '/contacts', { cookie: 'mailctl_session=forged.jwt.value', headers: { 'x-project-id': p.id } })).status).toBe(401)
    await env.request('GET', '/auth/logout', { cookie: u.cookie })
    const after = await env.request('GET', '/contacts', as(u, p.id))
    expect(after.status).toBe(401)
  })

  test('a secret key still wins over a cookie, and a public key with a cookie is still refused', async () => {
    const u = await verifiedUser(env)
    const p = await ownedProject(env, u)
    const other = await env.project()
    const res = await env.request('GET', '/contacts', { key: other.secretKey, ...as(u, p.id) })
    expect(res.status).toBe(200)
    const pub = await env.request('GET', '/contacts', { key: p.publicKey, ...as(u, p.id) })
    expect(pub.status).toBe(401)
  })

  test('unsafe methods check Origin when present: another site is 403; this server, or none, passes; reads ignore it', async () => {
    const u = await verifiedUser(env)
    const p = await ownedProject(env, u)
    const evil = await env.request('POST', '/contacts', { ...as(u, p.id, { origin: 'https://evil.example' }), body: { email: 'o1@example.com' } })
    expect(evil.status).toBe(403)
    expect(evil.body.error.code).toBe('FORBIDDEN')
    const nullOrigin = await env.request('DELETE', '/contacts/x', as(u, p.id, { origin: 'null' }))
    expect(nullOrigin.status).toBe(403)
    const publicUrl = await env.request('POST', '/contacts', { ...as(u, p.id, { origin: 'http://localhost:3000' }), body: { email: 'o2@example.com' } })
    expect(publicUrl.status).toBe(201)
    const sameHost = await env.request('POST', '/contacts', { ...as(u, p.id, { origin: 'http://localhost', host: 'localhost' }), body: { email: 'o3@example.com' } })
    expect(sameHost.status).toBe(201)
    const none = await env.request('POST', '/contacts', { ...as(u, p.id), body: { email: 'o4@example.com' } })
    expect(none.status).toBe(201)
    const read = await env.request('GET', '/contacts', as(u, p.id, { origin: 'https://evil.example' }))
    expect(read.status).toBe(200)
  })

  test('the session routes check Origin on unsafe methods too: /auth/*, /users/@me/*, /projects/:id/*', async () => {
    const u = await verifiedUser(env)
    const p = await ownedProject(env, u)
    const evil = { origin: 'https://evil.example' }
    const login = await env.request('POST', '/auth/login', { headers: evil, body: { email: u.email, password: u.password } })
    expect(login.status).toBe(403)
    const create = await env.request('POST', '/users/@me/projects', { cookie: u.cookie, headers: evil, body: { name: 'x' } })
    expect(create.status).toBe(403)
    const invite = await env.request('POST', `/projects/${p.id}/members`, { cookie: u.cookie, headers: evil, body: { email: 'x@example.com' } })
    expect(invite.status).toBe(403)
    expect((await env.request('GET', '/users/@me/projects', { cookie: u.cookie, headers: evil })).status).toBe(200)
    const ok = await env.request('POST', '/auth/login', { headers: { origin: 'http://localhost:3000' }, body: { email: u.email, password: u.password } })
    expect(ok.status).toBe(200)
  })

  test('a disabled project stays readable to its members; its changes are refused 403 PROJECT_DISABLED', async () => {
    const u = await verifiedUser(env)
    const p = await ownedProject(env, u)
    const { projects } = env.store.t
    await env.store.tx((db) => db.update(projects).set({ disabled: true }).where(eq(projects.id, p.id)))
    expect((await env.request('GET', '/contacts', as(u, p.id))).status).toBe(200)
    const write = await env.request('POST', '/contacts', { ...as(u, p.id), body: { email: 'd@example.com' } })
    expect(write.status).toBe(403)
    expect(write.body.error.code).toBe('PROJECT_DISABLED')
  })

  test('GET / sends a browser to /app/; an API client still gets the 404 envelope', async () => {
    const browser = await env.request('GET', '/', { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
    expect(browser.status).toBe(302)
    expect(browser.headers.get('location')).toBe('/app/')
    const api = await env.request('GET', '/', { headers: { accept: 'application/json' } })
    expect(api.status).toBe(404)
    expect(api.body.error.code).toBe('NOT_FOUND')
  })
})
