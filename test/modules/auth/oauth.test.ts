import { afterAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { cookieFrom, ownedProject, uniqueEmail, verifiedUser } from '../../helpers/accounts'
import { startFakeProvider } from '../../helpers/oauth-provider'
import { signJwt } from '../../../src/modules/auth/jwt'
import { CALLBACKS_PER_IP, finishSignIn, OAuthFailure, STATE_TTL_SECONDS, startSignIn } from '../../../src/modules/auth/oauth'
import { endpoints, oauthCheck, providerLimits, providersOn } from '../../../src/modules/auth/oauth-providers'
import { ConfigError, loadConfig } from '../../../src/config'

/**
 * OAuth sign-in (issue 13 part 6) against a fake GitHub and a fake Google, each a real HTTP server on
 * 127.0.0.1 (test/helpers/oauth-provider.ts); the dashboard server is the real app on both stores.
 */
const github = startFakeProvider()
const google = startFakeProvider()
afterAll(() => { github.stop(); google.stop() })

const configured = {
  oauthGithubId: github.clientId, oauthGithubSecret: github.clientSecret, oauthGithubUrl: github.url,
  oauthGoogleId: google.clientId, oauthGoogleSecret: google.clientSecret, oauthGoogleUrl: google.url,
}

const setCookies = (h: Headers) => h.getSetCookie()
const cookieNamed = (h: Headers, name: string) => setCookies(h).find((c) => c.startsWith(`${name}=`))

interface Flow {
  start: Awaited<ReturnType<TestEnv['request']>>
  authorize: URL
  callback: Awaited<ReturnType<TestEnv['request']>>
  /** Where the callback sent the browser, and the session cookie it set (if any). */
  location: string
  session: string | null
}

/** Start -> the fake's authorize page -> back to the callback, as a browser would (cookies carried by hand). */
async function signIn(env: TestEnv, provider: 'github' | 'google', opts: { stateCookie?: (c: string) => string; callbackPath?: (p: string) => string } = {}): Promise<Flow> {
  const start = await env.request('GET', `/auth/oauth/${provider}`)
  expect(start.status).toBe(302)
  const authorize = new URL(start.headers.get('location') ?? '')
  const stateCookie = (cookieNamed(start.headers, 'mailctl_oauth') ?? '').split(';')[0]
  const atProvider = await fetch(authorize, { redirect: 'manual' })
  expect(atProvider.status).toBe(302)
  const back = new URL(atProvider.headers.get('location') ?? '')
  expect(back.origin).toBe(env.config.publicUrl)
  const path = opts.callbackPath ? opts.callbackPath(back.pathname + back.search) : back.pathname + back.search
  const cookie = opts.stateCookie ? opts.stateCookie(stateCookie) : stateCookie
  const callback = await env.request('GET', path, { cookie })
  expect(callback.status).toBe(302)
  const session = cookieNamed(callback.headers, 'mailctl_session')
  return { start, authorize, callback, location: callback.headers.get('location') ?? '', session: session ? session.split(';')[0] : null }
}

async function userByEmail(env: TestEnv, email: string) {
  const { users } = env.store.t
  const [row] = await env.store.db.select().from(users).where(eq(users.email, email))
  return row
}

async function links(env: TestEnv, userId: string) {
  const { oauthAccounts } = env.store.t
  return env.store.db.select().from(oauthAccounts).where(eq(oauthAccounts.userId, userId))
}

function expectRefused(flow: Flow, code: string, provider = 'github') {
  expect(flow.location).toBe(`/app/?oauth_error=${code}&provider=${provider}`)
  expect(flow.session).toBeNull()
  // The state cookie is spent either way.
  expect(cookieNamed(flow.callback.headers, 'mailctl_oauth')).toContain('Max-Age=0')
}

forEachStore('oauth: sign-in round trips', (env) => {
  test('oauth-config and /config report both providers on', async () => {
    expect((await env.request('GET', '/auth/oauth-config')).body).toEqual({ github: true, google: true })
    expect((await env.request('GET', '/config')).body.features.authProviders).toEqual({ github: true, google: true })
  })

  test('GET /auth/oauth/github redirects to the authorize URL with a signed state bound to a cookie', async () => {
    const res = await env.request('GET', '/auth/oauth/github')
    expect(res.status).toBe(302)
    const url = new URL(res.headers.get('location') ?? '')
    expect(`${url.origin}${url.pathname}`).toBe(`${github.url}/login/oauth/authorize`)
    expect(url.searchParams.get('client_id')).toBe(github.clientId)
    expect(url.searchParams.get('redirect_uri')).toBe('http://localhost:3000/auth/oauth/github/callback')
    expect(url.searchParams.get('response_type')).toBe('code')
    expect(url.searchParams.get('scope')).toBe('read:user user:email')
    expect(url.searchParams.get('state')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(res.text).not.toContain(github.clientSecret)
    expect(url.toString()).not.toContain(github.clientSecret)
    const cookie = cookieNamed(res.headers, 'mailctl_oauth') ?? ''
    expect(cookie).toMatch(/^mailctl_oauth=[\w-]{20,}; /)
    for (const part of ['Path=/auth/oauth', 'HttpOnly', 'SameSite=Lax', `Max-Age=${STATE_TTL_SECONDS}`]) expect(cookie).toContain(part)
    expect(res.headers.get('cache-control')).toBe('no-store')
    // Each start is a new state and nonce.
    const again = await env.request('GET', '/auth/oauth/github')
    expect(new URL(again.headers.get('location') ?? '').searchParams.get('state')).not.toBe(url.searchParams.get('state'))
  })

  test('GitHub: a new verified address creates a verified user, links it and signs in', async () => {
    const email = uniqueEmail('gh-new')
    github.mode = 'ok'
    github.account = { id: 9_000_001, email: email.toUpperCase(), verified: true, name: 'Grace Hopper', others: [{ email: uniqueEmail('other'), verified: true }] }
    const before = github.seen.length
    const flow = await signIn(env, 'github')
    expect(flow.location).toBe('/app/')
    const session = flow.session ?? ''
    const full = cookieNamed(flow.callback.headers, 'mailctl_session') ?? ''
    for (const part of ['HttpOnly', 'SameSite=Lax', 'Path=/', `Max-Age=${7 * 24 * 3600}`]) expect(full).toContain(part)
    expect(cookieNamed(flow.callback.headers, 'mailctl_oauth')).toContain('Max-Age=0')
    const me = await env.request('GET', '/users/@me', { cookie: session })
    expect(me.status).toBe(200)
    expect(me.body).toMatchObject({ email, name: 'Grace Hopper', emailVerified: true })
    const [link] = await links(env, me.body.id)
    expect(link).toMatchObject({ provider: 'github', providerUserId: '9000001', email })
    // The token request carried the client secret, the code and the same redirect URI; the API calls the token.
    const seen = github.seen.slice(before)
    const tokenCall = seen.find((s) => s.path === '/login/oauth/access_token')
    expect(tokenCall?.form).toMatchObject({ client_id: github.clientId, client_secret: github.clientSecret, grant_type: 'authorization_code', redirect_uri: 'http://localhost:3000/auth/oauth/github/callback' })
    expect(seen.find((s) => s.path === '/user/emails')?.authorization).toMatch(/^Bearer [0-9a-f]{32}$/)
    // No password was chosen: password sign-in cannot work until the owner sets one with a reset.
    const row = await userByEmail(env, email)
    expect(row.passwordHash).toStartWith('$argon2id$')
    // A second sign-in is the same user, with a new session.
    const second = await signIn(env, 'github')
    expect(second.location).toBe('/app/')
    expect(second.session).not.toBe(session)
    expect((await env.request('GET', '/users/@me', { cookie: second.session ?? '' })).body.id).toBe(me.body.id)
    expect(await links(env, me.body.id)).toHaveLength(1)
  })

  test('Google: userinfo with email_verified creates and signs in the user', async () => {
    const email = uniqueEmail('g-new')
    google.mode = 'ok'
    google.account = { id: '10987654321', email, verified: true, name: 'Ada Lovelace' }
    const flow = await signIn(env, 'google')
    expect(flow.authorize.pathname).toBe('/o/oauth2/v2/auth')
    expect(flow.authorize.searchParams.get('scope')).toBe('openid email profile')
    expect(flow.authorize.searchParams.get('redirect_uri')).toBe('http://localhost:3000/auth/oauth/google/callback')
    expect(flow.location).toBe('/app/')
    const me = await env.request('GET', '/users/@me', { cookie: flow.session ?? '' })
    expect(me.body).toMatchObject({ email, name: 'Ada Lovelace', emailVerified: true })
    expect((await links(env, me.body.id))[0]).toMatchObject({ provider: 'google', providerUserId: '10987654321' })
  })

  test('an existing verified user is linked by verified email and keeps its password', async () => {
    const u = await verifiedUser(env, 'gh-link')
    github.mode = 'ok'
    github.account = { id: 9_000_002, email: `  ${u.email.toUpperCase()}`, verified: true, name: 'Someone Else' }
    const flow = await signIn(env, 'github')
    expect(flow.location).toBe('/app/')
    const me = await env.request('GET', '/users/@me', { cookie: flow.session ?? '' })
    expect(me.body).toMatchObject({ id: u.id, email: u.email })
    expect((await links(env, u.id)).map((l) => l.providerUserId)).toEqual(['9000002'])
    // The account is unchanged: its password and its earlier session still work.
    expect((await env.request('POST', '/auth/login', { body: { email: u.email, password: u.password } })).status).toBe(200)
    expect((await env.request('GET', '/users/@me', { cookie: u.cookie })).status).toBe(200)
    // Linked by the provider's id: a changed address at GitHub still signs in as the same user.
    github.account = { ...github.account, email: uniqueEmail('gh-renamed') }
    const later = await signIn(env, 'github')
    expect((await env.request('GET', '/users/@me', { cookie: later.session ?? '' })).body.id).toBe(u.id)
    expect((await links(env, u.id))[0].email).toBe(github.account.email)
  })

  test('an unverified account with the address is taken over: verified, its unproven password and sessions end', async () => {
    const email = uniqueEmail('gh-unverified')
    expect((await env.request('POST', '/auth/signup', { body: { email, password: 'chosen by someone else' } })).status).toBe(202)
    const signup = await env.request('POST', '/auth/login', { body: { email, password: 'chosen by someone else' } })
    const squatter = cookieFrom(signup.headers)
    google.mode = 'ok'
    google.account = { id: 'g-takeover-1', email, verified: true }
    const flow = await signIn(env, 'google')
    expect(flow.location).toBe('/app/')
    const me = await env.request('GET', '/users/@me', { cookie: flow.session ?? '' })
    expect(me.body).toMatchObject({ id: signup.body.id, emailVerified: true })
    expect((await env.request('GET', '/users/@me', { cookie: squatter })).status).toBe(401)
    expect((await env.request('POST', '/auth/login', { body: { email, password: 'chosen by someone else' } })).status).toBe(401)
  })

  test('an OAuth sign-up joins no project: the invitation of the address waits for an answer', async () => {
    const owner = await verifiedUser(env, 'inv-owner')
    const project = await ownedProject(env, owner)
    const email = uniqueEmail('gh-invited')
    const invite = await env.request('POST', `/projects/${project.id}/members`, { cookie: owner.cookie, body: { email, role: 'MEMBER' } })
    expect(invite.status).toBe(201)
    expect(invite.body.status).toBe('invited')
    github.mode = 'ok'
    github.account = { id: 9_000_003, email, verified: true }
    const flow = await signIn(env, 'github')
    const projects = await env.request('GET', '/users/@me/projects', { cookie: flow.session ?? '' })
    expect(projects.status).toBe(200)
    expect(projects.body).toEqual([])
    const pending = await env.request('GET', '/users/@me/invitations', { cookie: flow.session ?? '' })
    expect(pending.body.map((i: { id: string; projectId: string }) => `${i.id}:${i.projectId}`)).toEqual([`${invite.body.id}:${project.id}`])
    expect((await env.request('POST', `/users/@me/invitations/${invite.body.id}/accept`, { cookie: flow.session ?? '' })).body).toEqual({ projectId: project.id, role: 'MEMBER' })
  })

  test('an unverified primary email is refused, even with another verified address (GitHub); email_verified false (Google)', async () => {
    const email = uniqueEmail('gh-unv')
    github.mode = 'ok'
    github.account = { id: 9_000_004, email, verified: false, others: [{ email: uniqueEmail('verified-other'), verified: true }] }
    expectRefused(await signIn(env, 'github'), 'unverified_email')
    expect(await userByEmail(env, email)).toBeUndefined()
    // Even an existing verified account with that address is not reachable through an unverified one.
    const u = await verifiedUser(env, 'g-unv')
    google.mode = 'ok'
    google.account = { id: 'g-unv-1', email: u.email, verified: false }
    expectRefused(await signIn(env, 'google'), 'unverified_email', 'google')
    expect(await links(env, u.id)).toEqual([])
  })

  test('the provider saying no (the user cancelled) redirects with access_denied', async () => {
    github.mode = 'deny'
    try {
      expectRefused(await signIn(env, 'github'), 'access_denied')
    } finally { github.mode = 'ok' }
  })

  test('a refused code, a failing user API and an unreachable provider are provider_error, never a 500', async () => {
    github.account = { id: 9_000_005, email: uniqueEmail('gh-err'), verified: true }
    for (const mode of ['tokenError', 'userError'] as const) {
      github.mode = mode
      try {
        expectRefused(await signIn(env, 'github'), 'provider_error')
      } finally { github.mode = 'ok' }
    }
    google.mode = 'tokenError'
    try {
      expectRefused(await signIn(env, 'google'), 'provider_error', 'google')
    } finally { google.mode = 'ok' }
    expect(await userByEmail(env, github.account.email)).toBeUndefined()

    // A provider that does not answer in time (the limit shortened for the test: it is 10 s).
    github.mode = 'hang'
    const limit = providerLimits.timeoutMs
    providerLimits.timeoutMs = 300
    try {
      expectRefused(await signIn(env, 'github'), 'provider_error')
    } finally {
      github.mode = 'ok'
      providerLimits.timeoutMs = limit
    }

    // Unreachable: the token endpoint's port is closed (the authorize step still goes to the fake).
    const start = await env.request('GET', '/auth/oauth/github')
    const atProvider = await fetch(start.headers.get('location') ?? '', { redirect: 'manual' })
    const back = new URL(atProvider.headers.get('location') ?? '')
    const dead = startFakeProvider()
    dead.stop()
    const url = env.config.oauthGithubUrl
    env.config.oauthGithubUrl = dead.url
    try {
      const res = await env.request('GET', back.pathname + back.search, { cookie: (cookieNamed(start.headers, 'mailctl_oauth') ?? '').split(';')[0] })
      expect(res.status).toBe(302)
      expect(res.headers.get('location')).toBe('/app/?oauth_error=provider_error&provider=github')
    } finally { env.config.oauthGithubUrl = url }
  })
}, configured)

forEachStore('oauth: the state', (env) => {
  async function noExchange(run: () => Promise<Flow>, code = 'invalid_state') {
    const before = github.seen.length
    expectRefused(await run(), code)
    // The code was never spent at the provider.
    expect(github.seen.slice(before).filter((s) => s.method === 'POST')).toEqual([])
  }

  test('a missing state, or a missing or foreign state cookie, is refused before the code is exchanged', async () => {
    github.mode = 'ok'
    github.account = { id: 9_100_001, email: uniqueEmail('st'), verified: true }
    await noExchange(() => signIn(env, 'github', { callbackPath: (p) => p.replace(/([?&])state=[^&]*/, '$1') }))
    await noExchange(() => signIn(env, 'github', { stateCookie: () => '' }))
    // Login CSRF: an attacker's own (valid) state and code, replayed in a browser holding another sign-in's cookie.
    const victim = await env.request('GET', '/auth/oauth/github')
    const victimCookie = (cookieNamed(victim.headers, 'mailctl_oauth') ?? '').split(';')[0]
    await noExchange(() => signIn(env, 'github', { stateCookie: () => victimCookie }))
    expect(await userByEmail(env, github.account.email)).toBeUndefined()
  })

  test('a tampered, expired, foreign-key or other-provider state is refused', async () => {
    github.mode = 'ok'
    github.account = { id: 9_100_002, email: uniqueEmail('st2'), verified: true }
    const swapState = (make: (state: string) => string) => (p: string) => {
      const u = new URL(p, 'http://x')
      u.searchParams.set('state', make(u.searchParams.get('state') ?? ''))
      return u.pathname + u.search
    }
    const claims = (state: string) => JSON.parse(Buffer.from(state.split('.')[1], 'base64url').toString())
    // One character of the signature changed.
    await noExchange(() => signIn(env, 'github', { callbackPath: swapState((s) => s.slice(0, -2) + (s.endsWith('AA') ? 'BB' : 'AA')) }))
    // The same claims (nonce included) signed with the session secret itself.
    await noExchange(() => signIn(env, 'github', { callbackPath: swapState((s) => { const c = claims(s); return signJwt({ sub: c.sub, p: c.p, n: c.n }, env.deps.secret, 600, Date.now()) }) }))
    // A state and its cookie from a Google sign-in, brought to GitHub's callback.
    const g = await env.request('GET', '/auth/oauth/google')
    const gState = new URL(g.headers.get('location') ?? '').searchParams.get('state') ?? ''
    const gCookie = (cookieNamed(g.headers, 'mailctl_oauth') ?? '').split(';')[0]
    await noExchange(() => signIn(env, 'github', { callbackPath: swapState(() => gState), stateCookie: () => gCookie }))
    // A state that expired (started 11 minutes ago), with its own cookie.
    const old = startSignIn(env.deps, 'github', Date.now() - 11 * 60_000)
    const oldState = new URL(old.location).searchParams.get('state') ?? ''
    await noExchange(() => signIn(env, 'github', { callbackPath: swapState(() => oldState), stateCookie: () => `mailctl_oauth=${old.nonce}` }))
    // A state is not a session: it cannot sign anyone in.
    const start = await env.request('GET', '/auth/oauth/github')
    const state = new URL(start.headers.get('location') ?? '').searchParams.get('state') ?? ''
    expect((await env.request('GET', '/users/@me', { cookie: `mailctl_session=${state}` })).status).toBe(401)
    expect(claims(state).exp - claims(state).iat).toBe(STATE_TTL_SECONDS)
  })

  test('callbacks are throttled per client IP: past the budget, rate_limited before anything else', async () => {
    const ip = `198.51.100.${Math.floor(Math.random() * 250)}`
    const codeOf = (p: Promise<unknown>) => p.then(() => 'signed in', (e) => (e instanceof OAuthFailure ? e.code : String(e)))
    for (let i = 0; i < CALLBACKS_PER_IP.limit; i++) expect(await codeOf(finishSignIn(env.deps, 'github', { code: 'c', state: 's' }, 'n', { ip }))).toBe('invalid_state')
    expect(await codeOf(finishSignIn(env.deps, 'github', { code: 'c', state: 's' }, 'n', { ip }))).toBe('rate_limited')
    // Another address is not affected.
    expect(await codeOf(finishSignIn(env.deps, 'github', { code: 'c', state: 's' }, 'n', { ip: '192.0.2.1' }))).toBe('invalid_state')
  })

}, configured)

forEachStore('oauth: providers off, unknown and refused', (env) => {
  test('only a provider with both id and secret is on; oauth-config and /config agree', async () => {
    expect((await env.request('GET', '/auth/oauth-config')).body).toEqual({ github: true, google: false })
    expect((await env.request('GET', '/config')).body.features.authProviders).toEqual({ github: true, google: false })
  })

  test('an unconfigured or unknown provider is 404 NOT_FOUND at the start and at the callback', async () => {
    for (const path of ['/auth/oauth/google', '/auth/oauth/google/callback?code=x&state=y', '/auth/oauth/gitlab', '/auth/oauth/gitlab/callback']) {
      const res = await env.request('GET', path)
      expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' })
      expect(res.headers.get('set-cookie')).toBeNull()
    }
    const off = await env.request('GET', '/auth/oauth/google')
    expect(off.body.error.message).toContain('not configured')
  })

  test('sign-up disabled: a new address is refused, an existing user still signs in and is linked', async () => {
    const email = uniqueEmail('closed')
    github.mode = 'ok'
    github.account = { id: 9_200_001, email, verified: true }
    expectRefused(await signIn(env, 'github'), 'signup_disabled')
    expect(await userByEmail(env, email)).toBeUndefined()
    const u = await verifiedUser(env, 'closed-existing')
    github.account = { id: 9_200_002, email: u.email, verified: true }
    const flow = await signIn(env, 'github')
    expect(flow.location).toBe('/app/')
    expect((await env.request('GET', '/users/@me', { cookie: flow.session ?? '' })).body.id).toBe(u.id)
  })

  test('an overlong code or state is the 400 envelope of a bad query, naming the field', async () => {
    const res = await env.request('GET', `/auth/oauth/github/callback?code=${'x'.repeat(3000)}&state=y`)
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('BAD_REQUEST')
    expect(res.body.error.errors[0]).toMatchObject({ field: 'code', code: 'too_big' })
  })
}, { oauthGithubId: github.clientId, oauthGithubSecret: github.clientSecret, oauthGithubUrl: github.url, oauthGoogleId: 'id-without-secret', signupDisabled: true })


describe('OAuth settings', () => {
  const load = (env: Record<string, string>) => loadConfig({ env: { MAILCTL_DATA_DIR: '/tmp/mailctl-oauth-settings', ...env } })

  test('the OPERATIONS.md names turn a provider on only with both id and secret', () => {
    expect(providersOn(load({}))).toEqual({ github: false, google: false })
    expect(providersOn(load({ MAILCTL_OAUTH_GITHUB_ID: 'i', MAILCTL_OAUTH_GOOGLE_SECRET: 's' }))).toEqual({ github: false, google: false })
    const c = load({ MAILCTL_OAUTH_GITHUB_ID: 'gi', MAILCTL_OAUTH_GITHUB_SECRET: 'gs', MAILCTL_OAUTH_GOOGLE_ID: 'oi', MAILCTL_OAUTH_GOOGLE_SECRET: 'os' })
    expect(providersOn(c)).toEqual({ github: true, google: true })
    expect([c.oauthGithubId, c.oauthGithubSecret, c.oauthGoogleId, c.oauthGoogleSecret]).toEqual(['gi', 'gs', 'oi', 'os'])
  })

  test('without a base URL the providers\' own endpoints are used; with one, every endpoint hangs off it', () => {
    const real = load({})
    expect(endpoints(real, 'github')).toMatchObject({ authorize: 'https://github.com/login/oauth/authorize', token: 'https://github.com/login/oauth/access_token' })
    expect(endpoints(real, 'google')).toMatchObject({ authorize: 'https://accounts.google.com/o/oauth2/v2/auth', token: 'https://oauth2.googleapis.com/token' })
    const local = load({ MAILCTL_OAUTH_GITHUB_URL: 'http://127.0.0.1:9/gh/', MAILCTL_OAUTH_GOOGLE_URL: 'http://127.0.0.1:9/g' })
    expect(local.oauthGithubUrl).toBe('http://127.0.0.1:9/gh')
    expect(endpoints(local, 'github').token).toBe('http://127.0.0.1:9/gh/login/oauth/access_token')
    expect(endpoints(local, 'google').authorize).toBe('http://127.0.0.1:9/g/o/oauth2/v2/auth')
  })

  test('a base URL that is not an http(s) URL stops the start, naming the setting', () => {
    for (const [k, v] of [['MAILCTL_OAUTH_GITHUB_URL', 'not a url'], ['MAILCTL_OAUTH_GOOGLE_URL', 'ftp://x.example']]) {
      expect(() => load({ [k]: v })).toThrow(ConfigError)
      expect(() => load({ [k]: v })).toThrow(k)
    }
  })

  test('doctor: off, half-configured (warn, naming the settings), on with the callback URLs to register', () => {
    expect(oauthCheck(load({}))).toMatchObject({ status: 'ok', detail: 'off (email and password only)' })
    const half = oauthCheck(load({ MAILCTL_OAUTH_GOOGLE_ID: 'only-the-id' }))
    expect(half.status).toBe('warn')
    expect(half.detail).toContain('MAILCTL_OAUTH_GOOGLE_ID and _SECRET')
    const on = oauthCheck(load({ MAILCTL_OAUTH_GITHUB_ID: 'i', MAILCTL_OAUTH_GITHUB_SECRET: 's', MAILCTL_PUBLIC_URL: 'https://mail.example.com' }))
    expect(on).toMatchObject({ status: 'ok', detail: 'on; register these callback URLs with the providers: github: https://mail.example.com/auth/oauth/github/callback' })
    expect(oauthCheck(load({ MAILCTL_OAUTH_GITHUB_ID: 'i', MAILCTL_OAUTH_GITHUB_SECRET: 's' })).status).toBe('warn')
  })
})
