import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { verifiedUser } from '../../helpers/accounts'
import { signJwt } from '../../../src/modules/auth/jwt'

/** Flips one character in the middle of the JWT signature. */
function tamper(cookie: string): string {
  const i = cookie.length - 10
  return cookie.slice(0, i) + (cookie[i] === 'a' ? 'b' : 'a') + cookie.slice(i + 1)
}

forEachStore('GET /users/@me', (env) => {
  test('answers the signed-in user without secrets', async () => {
    const u = await verifiedUser(env, 'me')
    const res = await env.request('GET', '/users/@me', { cookie: u.cookie })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ id: u.id, email: u.email, name: null, emailVerified: true, createdAt: expect.any(String) })
    expect(res.text).not.toContain('argon2')
  })

  test('no cookie, a garbage cookie, an API key or an expired session: 401', async () => {
    const u = await verifiedUser(env, 'me401')
    const p = await env.project()
    const tries = [
      await env.request('GET', '/users/@me'),
      await env.request('GET', '/users/@me', { cookie: 'mailctl_session=garbage' }),
      await env.request('GET', '/users/@me', { key: p.secretKey }),
      await env.request('GET', '/users/@me', { cookie: tamper(u.cookie) }),
    ]
    for (const r of tries) {
      expect(r.status).toBe(401)
      expect(r.body.error.code).toBe('UNAUTHORIZED')
    }
    const { sessions } = env.store.t
    const [row] = await env.store.db.select().from(sessions).where(eq(sessions.userId, u.id))
    const expired = signJwt({ sub: u.id, sid: row.id }, env.deps.secret, 60, Date.now() - 3600_000)
    expect((await env.request('GET', '/users/@me', { cookie: `mailctl_session=${expired}` })).status).toBe(401)
  })

  test('a session whose user was deleted is no session', async () => {
    const u = await verifiedUser(env, 'gone')
    const { users } = env.store.t
    await env.store.tx((db) => db.delete(users).where(eq(users.id, u.id)))
    expect((await env.request('GET', '/users/@me', { cookie: u.cookie })).status).toBe(401)
  })

  test('each session answers its own user; another user\'s id in the path is 404 NOT_FOUND', async () => {
    const a = await verifiedUser(env, 'a')
    const b = await verifiedUser(env, 'b')
    expect((await env.request('GET', '/users/@me', { cookie: a.cookie })).body.id).toBe(a.id)
    expect((await env.request('GET', '/users/@me', { cookie: b.cookie })).body.email).toBe(b.email)
    for (const path of [`/users/${b.id}`, `/users/${a.id}`]) {
      const r = await env.request('GET', path, { cookie: a.cookie })
      expect(r.status).toBe(404)
      expect(r.body.error.code).toBe('NOT_FOUND')
    }
  })

  test('a token signed with another secret, one naming another user for this session, or a revoked session: 401', async () => {
    const a = await verifiedUser(env, 'forge')
    const b = await verifiedUser(env, 'victim')
    const { sessions } = env.store.t
    const [row] = await env.store.db.select().from(sessions).where(eq(sessions.userId, a.id))
    const forged = [
      signJwt({ sub: a.id, sid: row.id }, 'another-secret', 60, Date.now()),
      signJwt({ sub: b.id, sid: row.id }, env.deps.secret, 60, Date.now()),
      signJwt({ sub: a.id }, env.deps.secret, 60, Date.now()),
    ]
    for (const token of forged) {
      const r = await env.request('GET', '/users/@me', { cookie: `mailctl_session=${token}` })
      expect(r.status).toBe(401)
      expect(r.body.error.code).toBe('UNAUTHORIZED')
    }
    expect((await env.request('GET', '/users/@me', { cookie: a.cookie })).status).toBe(200)
    await env.request('GET', '/auth/logout', { cookie: a.cookie })
    const revoked = await env.request('GET', '/users/@me', { cookie: a.cookie })
    expect(revoked.status).toBe(401)
    expect(revoked.body.error.code).toBe('UNAUTHORIZED')
    expect((await env.request('GET', '/users/@me', { cookie: b.cookie })).status).toBe(200)
  })
})
