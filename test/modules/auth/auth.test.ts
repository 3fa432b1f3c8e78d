import { expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore } from '../../helpers/env'
import { cookieFrom, lastMail, tokenIn, uniqueEmail, verifiedUser } from '../../helpers/accounts'
import { login as serviceLogin, SIGNUP_SENT, THROTTLES } from '../../../src/modules/auth/service'
import { signJwt } from '../../../src/modules/auth/jwt'
import { must } from '../../helpers/must'

const PASSWORD = 'a long enough password'

forEachStore('auth: signup, login, logout', (env) => {
  test('signup creates an unverified user and mails a verification token; no session until the user signs in', async () => {
    const email = uniqueEmail('signup')
    const res = await env.request('POST', '/auth/signup', { body: { email: `  ${email.toUpperCase()}`.trimStart(), password: PASSWORD, name: 'Ada', unknown: 1 } })
    expect(res.status).toBe(202)
    expect(res.body).toEqual({ success: true, message: SIGNUP_SENT })
    expect(res.headers.get('set-cookie')).toBeNull()
    const mail = await lastMail(env, email, 'verify-email')
    expect(mail?.subject).toContain('Verify')
    expect(tokenIn(mail?.text)).toMatch(/^[\w-]{40,}$/)
    const login = await env.request('POST', '/auth/login', { body: { email, password: PASSWORD } })
    expect(login.status).toBe(200)
    expect(login.body).toEqual({ id: expect.any(String), email, name: 'Ada', emailVerified: false, createdAt: expect.any(String) })
    const setCookie = must(login.headers.get('set-cookie'), 'a set-cookie header')
    expect(setCookie).toMatch(/^mailctl_session=[\w-]+\.[\w-]+\.[\w-]+; /)
    expect(setCookie).toContain('HttpOnly')
    expect(setCookie).toContain('SameSite=Lax')
    expect(setCookie).toContain('Path=/')
    expect(setCookie).toContain(`Max-Age=${7 * 24 * 3600}`)
    expect(setCookie).not.toContain('Secure')
    const me = await env.request('GET', '/users/@me', { cookie: cookieFrom(login.headers) })
    expect(me.status).toBe(200)
    expect(me.body.email).toBe(email)
  })

  test('the password is stored as an argon2id hash', async () => {
    const email = uniqueEmail('hash')
    await env.request('POST', '/auth/signup', { body: { email, password: PASSWORD } })
    const { users } = env.store.t
    const [row] = await env.store.db.select().from(users).where(eq(users.email, email))
    expect(row.passwordHash).toStartWith('$argon2id$')
    expect(row.passwordHash).not.toContain(PASSWORD)
  })

  test('signup with a taken address answers exactly as for a new one; the owner is told by mail; the account is unchanged (issue 35, item 6)', async () => {
    const owner = await verifiedUser(env, 'taken')
    const fresh = await env.request('POST', '/auth/signup', { body: { email: uniqueEmail('fresh'), password: PASSWORD } })
    const taken = await env.request('POST', '/auth/signup', { body: { email: owner.email.toUpperCase(), password: 'an attacker password' } })
    expect({ status: taken.status, body: taken.body, cookie: taken.headers.get('set-cookie') }).toEqual({ status: fresh.status, body: fresh.body, cookie: null })
    expect(taken.status).toBe(202)
    expect((await lastMail(env, owner.email, 'account-exists'))?.text).toContain('already has one')
    // The account keeps its password, and no second account exists.
    expect((await env.request('POST', '/auth/login', { body: { email: owner.email, password: 'an attacker password' } })).status).toBe(401)
    expect((await env.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } })).status).toBe(200)
    const { users } = env.store.t
    expect(await env.store.db.select().from(users).where(eq(users.email, owner.email))).toHaveLength(1)
  })

  test('signup validates email and password length (422 with field errors)', async () => {
    const res = await env.request('POST', '/auth/signup', { body: { email: 'not-an-email', password: 'short' } })
    expect(res.status).toBe(422)
    expect(res.body.error.code).toBe('VALIDATION_ERROR')
    const fields = res.body.error.errors.map((e: { field: string }) => e.field).sort()
    expect(fields).toEqual(['email', 'password'])
    const missing = await env.request('POST', '/auth/signup', { body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.error.errors.find((e: { field: string }) => e.field === 'email').code).toBe('required')
  })

  test('login sets a working session; wrong password and unknown address both answer 401 the same way', async () => {
    const u = await verifiedUser(env, 'login')
    const ok = await env.request('POST', '/auth/login', { body: { email: u.email.toUpperCase(), password: u.password } })
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ id: u.id, email: u.email, emailVerified: true })
    expect((await env.request('GET', '/users/@me', { cookie: cookieFrom(ok.headers) })).body.id).toBe(u.id)

    const wrong = await env.request('POST', '/auth/login', { body: { email: u.email, password: 'wrong password' } })
    const unknown = await env.request('POST', '/auth/login', { body: { email: uniqueEmail('nobody'), password: 'wrong password' } })
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401)
      expect(r.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Invalid email or password' })
      expect(r.headers.get('set-cookie')).toBeNull()
    }
  })

  test('an attacker elsewhere cannot lock the owner out: the budget is per account and source (issue 35, item 5)', async () => {
    const u = await verifiedUser(env, 'target')
    const attacker = { ip: '203.0.113.7' }
    for (let i = 0; i < THROTTLES.loginPerAddress.limit; i++) {
      await expect(serviceLogin(env.deps, { email: u.email, password: 'wrong password' }, attacker)).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
    }
    await expect(serviceLogin(env.deps, { email: u.email, password: u.password }, attacker)).rejects.toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' })
    // The owner, from their own address, signs in at once.
    const owner = await serviceLogin(env.deps, { email: u.email, password: u.password }, { ip: '198.51.100.2' })
    expect(owner.user.id).toBe(u.id)
  }, 60_000)

  test('login is throttled per address: 429 with Retry-After, even with the right password', async () => {
    const u = await verifiedUser(env, 'throttle')
    for (let i = 0; i < THROTTLES.loginPerAddress.limit; i++) {
      const r = await env.request('POST', '/auth/login', { body: { email: u.email, password: 'wrong password' } })
      expect(r.status).toBe(401)
    }
    const blocked = await env.request('POST', '/auth/login', { body: { email: u.email, password: u.password } })
    expect(blocked.status).toBe(429)
    expect(blocked.body.error.code).toBe('RATE_LIMIT_EXCEEDED')
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    // Another address is not affected.
    const other = await verifiedUser(env, 'unaffected')
    expect(other.cookie).toStartWith('mailctl_session=')
  }, 60_000)

  test('logout revokes the session at once (a copied cookie stops working) and clears the cookie', async () => {
    const u = await verifiedUser(env, 'logout')
    expect((await env.request('GET', '/users/@me', { cookie: u.cookie })).status).toBe(200)
    const out = await env.request('GET', '/auth/logout', { cookie: u.cookie })
    expect(out.status).toBe(200)
    expect(out.body).toEqual({ success: true, message: 'Logged out' })
    expect(out.headers.get('set-cookie')).toMatch(/^mailctl_session=; .*Max-Age=0/)
    const after = await env.request('GET', '/users/@me', { cookie: u.cookie })
    expect(after.status).toBe(401)
    expect(after.body.error.code).toBe('UNAUTHORIZED')
    // Logging out without a session is harmless.
    expect((await env.request('GET', '/auth/logout')).status).toBe(200)
  })

  test('a session token signed with another secret, or for a session that does not exist, is refused', async () => {
    const u = await verifiedUser(env, 'forged')
    const forged = signJwt({ sub: u.id, sid: 'x' }, 'not-the-secret', 3600, Date.now())
    expect((await env.request('GET', '/users/@me', { cookie: `mailctl_session=${forged}` })).status).toBe(401)
    const unknownSession = signJwt({ sub: u.id, sid: Bun.randomUUIDv7() }, env.deps.secret, 3600, Date.now())
    expect((await env.request('GET', '/users/@me', { cookie: `mailctl_session=${unknownSession}` })).status).toBe(401)
    const noSid = signJwt({ sub: u.id }, env.deps.secret, 3600, Date.now())
    expect((await env.request('GET', '/users/@me', { cookie: `mailctl_session=${noSid}` })).status).toBe(401)
  })

  test('oauth-config reports no providers', async () => {
    const res = await env.request('GET', '/auth/oauth-config')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ github: false, google: false })
  })
})

forEachStore('auth: email verification and password reset', (env) => {
  async function signup(prefix: string) {
    const email = uniqueEmail(prefix)
    const res = await env.request('POST', '/auth/signup', { body: { email, password: PASSWORD } })
    expect(res.status).toBe(202)
    const login = await env.request('POST', '/auth/login', { body: { email, password: PASSWORD } })
    return { email, id: login.body.id as string, cookie: cookieFrom(login.headers) }
  }

  test('verify-email spends the mailed token once', async () => {
    const u = await signup('verify')
    const token = tokenIn((await lastMail(env, u.email, 'verify-email'))?.text)
    const ok = await env.request('POST', '/auth/verify-email', { body: { token } })
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ id: u.id, emailVerified: true })
    expect((await env.request('GET', '/users/@me', { cookie: u.cookie })).body.emailVerified).toBe(true)
    const again = await env.request('POST', '/auth/verify-email', { body: { token } })
    expect(again.status).toBe(400)
    expect(again.body.error.code).toBe('BAD_REQUEST')
  })

  test('verify-email refuses unknown, expired and wrong-kind tokens', async () => {
    expect((await env.request('POST', '/auth/verify-email', { body: { token: 'nope' } })).status).toBe(400)
    expect((await env.request('POST', '/auth/verify-email', { body: {} })).status).toBe(422)
    const u = await signup('expired')
    const token = tokenIn((await lastMail(env, u.email, 'verify-email'))?.text)
    const { authTokens } = env.store.t
    await env.store.tx((db) => db.update(authTokens).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(authTokens.userId, u.id)))
    expect((await env.request('POST', '/auth/verify-email', { body: { token } })).status).toBe(400)

    const r = await signup('kind')
    expect((await env.request('POST', '/auth/request-password-reset', { body: { email: r.email } })).status).toBe(200)
    const resetToken = tokenIn((await lastMail(env, r.email, 'password-reset'))?.text)
    expect((await env.request('POST', '/auth/verify-email', { body: { token: resetToken } })).status).toBe(400)
    expect((await env.request('GET', '/users/@me', { cookie: r.cookie })).body.emailVerified).toBe(false)
  })

  test('tokens are stored hashed, never in clear', async () => {
    const u = await signup('hashed')
    const token = tokenIn((await lastMail(env, u.email, 'verify-email'))?.text)
    const { authTokens } = env.store.t
    const rows = await env.store.db.select().from(authTokens).where(eq(authTokens.userId, u.id))
    expect(rows.length).toBe(1)
    expect(rows[0].tokenHash).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(rows)).not.toContain(token)
  })

  test('request-verification answers the same for any address and mails only unverified accounts; the new token replaces the old', async () => {
    const u = await signup('resend')
    const first = tokenIn((await lastMail(env, u.email, 'verify-email'))?.text)
    const res = await env.request('POST', '/auth/request-verification', { body: { email: u.email } })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    const second = tokenIn((await lastMail(env, u.email, 'verify-email'))?.text)
    expect(second).not.toBe(first)
    expect((await env.request('POST', '/auth/verify-email', { body: { token: first } })).status).toBe(400)
    expect((await env.request('POST', '/auth/verify-email', { body: { token: second } })).status).toBe(200)

    const ghost = uniqueEmail('ghost')
    const none = await env.request('POST', '/auth/request-verification', { body: { email: ghost } })
    expect(none.status).toBe(200)
    expect(none.body).toEqual(res.body)
    expect(await lastMail(env, ghost)).toBeUndefined()
    const verified = await verifiedUser(env, 'already')
    await env.request('POST', '/auth/request-verification', { body: { email: verified.email } })
    expect(await lastMail(env, verified.email, 'verify-email')).toBeUndefined()
    expect((await env.request('POST', '/auth/request-verification', { body: { email: 'x' } })).status).toBe(422)
  })

  test('request-verification is throttled per address', async () => {
    const u = await signup('mailflood')
    const codes: number[] = []
    // The signup's own email counts in the address's budget.
    for (let i = 0; i < THROTTLES.mailPerAddress.limit; i++) {
      codes.push((await env.request('POST', '/auth/request-verification', { body: { email: u.email } })).status)
    }
    expect(codes.slice(0, -1).every((c) => c === 200)).toBe(true)
    expect(codes.at(-1)).toBe(429)
  })

  test('password reset: token works once, sets the new password, ends every session', async () => {
    const u = await verifiedUser(env, 'reset')
    const res = await env.request('POST', '/auth/request-password-reset', { body: { email: u.email } })
    expect(res.status).toBe(200)
    const token = tokenIn((await lastMail(env, u.email, 'password-reset'))?.text)
    const short = await env.request('POST', '/auth/reset-password', { body: { token, password: 'short' } })
    expect(short.status).toBe(422)
    const ok = await env.request('POST', '/auth/reset-password', { body: { token, password: 'the new password' } })
    expect(ok.status).toBe(200)
    expect(ok.body.success).toBe(true)
    expect((await env.request('GET', '/users/@me', { cookie: u.cookie })).status).toBe(401)
    expect((await env.request('POST', '/auth/login', { body: { email: u.email, password: u.password } })).status).toBe(401)
    expect((await env.request('POST', '/auth/login', { body: { email: u.email, password: 'the new password' } })).status).toBe(200)
    const again = await env.request('POST', '/auth/reset-password', { body: { token, password: 'another password' } })
    expect(again.status).toBe(400)
    expect(again.body.error.code).toBe('BAD_REQUEST')
  })

  test('password reset: unknown address answers like a known one and sends nothing; expired tokens fail', async () => {
    const ghost = uniqueEmail('ghost-reset')
    const res = await env.request('POST', '/auth/request-password-reset', { body: { email: ghost } })
    expect(res.status).toBe(200)
    expect(await lastMail(env, ghost)).toBeUndefined()

    const u = await verifiedUser(env, 'reset-exp')
    await env.request('POST', '/auth/request-password-reset', { body: { email: u.email } })
    const token = tokenIn((await lastMail(env, u.email, 'password-reset'))?.text)
    const { authTokens } = env.store.t
    await env.store.tx((db) => db.update(authTokens).set({ expiresAt: new Date(Date.now() - 1) }).where(eq(authTokens.userId, u.id)))
    expect((await env.request('POST', '/auth/reset-password', { body: { token, password: 'the new password' } })).status).toBe(400)
    expect((await env.request('POST', '/auth/login', { body: { email: u.email, password: u.password } })).status).toBe(200)
  })

  test('a reset token also proves the address: an unverified account becomes verified', async () => {
    const u = await signup('reset-verifies')
    await env.request('POST', '/auth/request-password-reset', { body: { email: u.email } })
    const token = tokenIn((await lastMail(env, u.email, 'password-reset'))?.text)
    expect((await env.request('POST', '/auth/reset-password', { body: { token, password: 'the new password' } })).status).toBe(200)
    const login = await env.request('POST', '/auth/login', { body: { email: u.email, password: 'the new password' } })
    expect(login.body.emailVerified).toBe(true)
  })
})

forEachStore('auth: signup disabled, https cookie', (env) => {
  test('MAILCTL_SIGNUP_DISABLED refuses signup with 403 and creates nothing', async () => {
    const email = uniqueEmail('closed')
    const res = await env.request('POST', '/auth/signup', { body: { email, password: PASSWORD } })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('FORBIDDEN')
    const { users } = env.store.t
    expect(await env.store.db.select().from(users).where(eq(users.email, email))).toEqual([])
    expect((await env.request('GET', '/config')).body.features.signup.disabled).toBe(true)
  })

  test('login still works, and the cookie is Secure when the public URL is https', async () => {
    const u = await verifiedUser(env, 'secure')
    const res = await env.request('POST', '/auth/login', { body: { email: u.email, password: u.password } })
    expect(res.headers.get('set-cookie')).toContain('; Secure')
  })
}, { signupDisabled: true, publicUrl: 'https://mail.example.com' })

forEachStore('auth: per-IP login throttle (real port)', (env) => {
  test('after the per-IP budget, logins from that IP answer 429 whatever the address', async () => {
    const server = env.app.listen({ port: 0, hostname: '127.0.0.1' })
    env.onStop(async () => { await server.stop(true) })
    const base = `http://127.0.0.1:${server.server?.port}`
    const login = (email: string, password: string) => fetch(`${base}/auth/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
    })
    for (let i = 0; i < THROTTLES.loginPerIp.limit; i++) {
      expect((await login(uniqueEmail('ip'), 'wrong password')).status).toBe(401)
    }
    const blocked = await login(uniqueEmail('ip'), 'wrong password')
    expect(blocked.status).toBe(429)
    expect(blocked.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(((await blocked.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMIT_EXCEEDED')
  }, 60_000)
})
