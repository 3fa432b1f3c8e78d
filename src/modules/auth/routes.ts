import { Elysia } from 'elysia'
import type { Server } from 'bun'
import type { Deps } from '../../deps'
import { errorFields } from '../../log'
import { checkOrigin, SESSION_COOKIE, sessionToken } from '../../http/auth'
import { UserOut } from '../users/model'
import { Ack, EmailBody, FirstRun, LoginBody, OAuthCallbackQuery, OAuthConfig, OAuthProviderParams, ResetBody, SignupBody, TokenBody } from './model'
import * as service from './service'
import * as oauth from './oauth'
import { providersOn } from './oauth-providers'
import { revokeSession, SESSION_TTL_SECONDS } from './sessions'

/** docs/decisions.md, Dashboard sessions: httpOnly, SameSite=Lax, 7 days, Secure when the public URL is https. */
function sessionCookie(deps: Deps, token: string, maxAge = SESSION_TTL_SECONDS): string {
  const secure = deps.config.publicUrl.startsWith('https:') ? '; Secure' : ''
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`
}

/** The cookie tying an OAuth sign-in to the browser that started it: only sent back to /auth/oauth/*. */
function oauthStateCookie(deps: Deps, nonce: string, maxAge = oauth.STATE_TTL_SECONDS): string {
  const secure = deps.config.publicUrl.startsWith('https:') ? '; Secure' : ''
  return `${oauth.STATE_COOKIE}=${nonce}; Path=/auth/oauth; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`
}

function cookieValue(request: Request, name: string): string | null {
  const cookie = request.headers.get('cookie') ?? ''
  const raw = cookie.split(/;\s*/).find((c) => c.startsWith(`${name}=`))?.slice(name.length + 1)
  return raw || null
}

function clientIp(server: Server<unknown> | null, request: Request): string | null {
  return server?.requestIP(request)?.address ?? null
}

const detail = (summary: string, description?: string) => ({ tags: ['auth'], summary, description })

/** /auth/*: accounts and dashboard sessions. */
export function authRoutes(deps: Deps) {
  return new Elysia({ prefix: '/auth' })
    // docs/decisions.md, The dashboard: unsafe methods from another site's page (its Origin) are refused.
    .onTransform(({ request }) => checkOrigin(deps, request))
    .post('/signup', async ({ body, server, request, set }) => {
      const out = await service.signup(deps, body, { ip: clientIp(server, request) })
      set.status = 202
      return out
    }, {
      body: SignupBody, response: { 202: Ack },
      detail: detail('Sign up', 'Answers 202 with the same message whether or not the address has an account, so signup never tells which addresses do. A new address gets an unverified account and a verification email; an address with an account gets an email saying so (unverified: a new verification email), and nothing else changes. No session is opened: sign in with POST /auth/login. 403 FORBIDDEN when MAILCTL_SIGNUP_DISABLED is set; 429 when an IP signs up too often or an address is mailed too often.'),
    })
    .post('/login', async ({ body, server, request, set }) => {
      const s = await service.login(deps, body, { ip: clientIp(server, request) })
      set.headers['set-cookie'] = sessionCookie(deps, s.token)
      return s.user
    }, {
      body: LoginBody, response: { 200: UserOut },
      detail: detail('Log in', `Sets the httpOnly SameSite=Lax cookie ${SESSION_COOKIE} (a 7-day HS256 JWT). 401 UNAUTHORIZED for a wrong address or password; 429 RATE_LIMIT_EXCEEDED with Retry-After after ${service.THROTTLES.loginPerAddress.limit} attempts for one account from one IP, or ${service.THROTTLES.loginPerIp.limit} from one IP, in 15 minutes (attempts from elsewhere never lock an account's owner out).`),
    })
    .get('/logout', async ({ request, set }) => {
      const token = sessionToken(request)
      if (token) await revokeSession(deps, token)
      set.headers['set-cookie'] = sessionCookie(deps, '', 0)
      return { success: true as const, message: 'Logged out' }
    }, { response: { 200: Ack }, detail: detail('Log out', 'Ends the session (it stops working at once, even if the cookie was copied) and clears the cookie.') })
    .get('/first-run', () => service.firstRun(deps), {
      response: { 200: FirstRun },
      detail: detail('First-run state', 'No authentication. true while the server has no account: the dashboard then explains `mailctl user create`.'),
    })
    .get('/oauth-config', () => providersOn(deps.config), {
      response: { 200: OAuthConfig },
      detail: detail('Configured OAuth providers', 'No authentication. A provider is on when MAILCTL_OAUTH_<PROVIDER>_ID and _SECRET are both set.'),
    })
    .get('/oauth/:provider', ({ params, set }) => {
      const s = oauth.startSignIn(deps, params.provider)
      set.status = 302
      set.headers.location = s.location
      set.headers['cache-control'] = 'no-store'
      set.headers['set-cookie'] = oauthStateCookie(deps, s.nonce)
      return ''
    }, {
      params: OAuthProviderParams,
      detail: detail('Start an OAuth sign-in', 'Redirects (302) to the provider\'s authorize page with a signed state valid 10 minutes, bound to this browser by the mailctl_oauth cookie. 404 NOT_FOUND for an unknown or unconfigured provider.'),
    })
    .get('/oauth/:provider/callback', async ({ params, query, request, server, set }) => {
      const p = oauth.configuredProvider(deps, params.provider)
      const cookies = [oauthStateCookie(deps, '', 0)]
      let location = '/app/'
      try {
        const s = await oauth.finishSignIn(deps, p, query, cookieValue(request, oauth.STATE_COOKIE), { ip: clientIp(server, request) })
        cookies.push(sessionCookie(deps, s.token))
      } catch (err) {
        const code = err instanceof oauth.OAuthFailure ? err.code : 'server_error'
        if (code === 'server_error') deps.log.error('oauth sign-in failed', { provider: p, ...errorFields(err) })
        else deps.log.warn('oauth sign-in refused', { provider: p, code, reason: (err as Error).message })
        location = `/app/?oauth_error=${code}&provider=${p}`
      }
      set.status = 302
      set.headers.location = location
      set.headers['cache-control'] = 'no-store'
      set.headers['set-cookie'] = cookies
      return ''
    }, {
      params: OAuthProviderParams,
      query: OAuthCallbackQuery,
      detail: detail('Finish an OAuth sign-in', 'Where the provider sends the browser back. Checks the state against the mailctl_oauth cookie, exchanges the code, reads the verified email, links the provider account to the user with that email (or creates one, unless sign-up is disabled), sets the session cookie and redirects to /app/. A failure redirects to /app/?oauth_error=<code>&provider=<provider> with a code among access_denied, invalid_state, unverified_email, provider_error, signup_disabled, try_again, rate_limited (more than 30 callbacks from one IP in 15 minutes), server_error.'),
    })
    .post('/verify-email', ({ body }) => service.verifyEmail(deps, body.token), {
      body: TokenBody, response: { 200: UserOut },
      detail: detail('Verify an email address', 'Spends the single-use token mailed at signup (valid 24 hours). Project invitations stay pending until the user accepts them. 400 BAD_REQUEST for an invalid, expired or used token.'),
    })
    .post('/request-verification', ({ body, server, request }) => service.requestVerification(deps, body.email, { ip: clientIp(server, request) }), {
      body: EmailBody, response: { 200: Ack },
      detail: detail('Resend the verification email', 'Answers the same whether or not an unverified account exists. 429 when asked too often.'),
    })
    .post('/request-password-reset', ({ body, server, request }) => service.requestPasswordReset(deps, body.email, { ip: clientIp(server, request) }), {
      body: EmailBody, response: { 200: Ack },
      detail: detail('Send a password reset email', 'Answers the same whether or not the account exists. The token is valid one hour, once. 429 when asked too often.'),
    })
    .post('/reset-password', ({ body }) => service.resetPassword(deps, body.token, body.password), {
      body: ResetBody, response: { 200: Ack },
      detail: detail('Reset a password with a token', 'Sets the new password and ends every session of the account. 400 BAD_REQUEST for an invalid, expired or used token.'),
    })
}
