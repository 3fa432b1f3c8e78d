import { Elysia } from 'elysia'
import type { Server } from 'bun'
import type { Deps } from '../../deps'
import { checkOrigin, SESSION_COOKIE, sessionToken } from '../../http/auth'
import { UserOut } from '../users/model'
import { Ack, EmailBody, FirstRun, LoginBody, OAuthConfig, ResetBody, SignupBody, TokenBody } from './model'
import * as service from './service'
import { revokeSession, SESSION_TTL_SECONDS } from './sessions'

/** docs/decisions.md, Dashboard sessions: httpOnly, SameSite=Lax, 7 days, Secure when the public URL is https. */
function sessionCookie(deps: Deps, token: string, maxAge = SESSION_TTL_SECONDS): string {
  const secure = deps.config.publicUrl.startsWith('https:') ? '; Secure' : ''
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`
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
      const s = await service.signup(deps, body, { ip: clientIp(server, request) })
      set.headers['set-cookie'] = sessionCookie(deps, s.token)
      set.status = 201
      return s.user
    }, {
      body: SignupBody, response: { 201: UserOut },
      detail: detail('Sign up', 'Creates an unverified account, mails a verification token and opens a session (sets the mailctl_session cookie). 403 FORBIDDEN when MAILCTL_SIGNUP_DISABLED is set; 409 CONFLICT when the address has an account; 429 when an IP signs up too often.'),
    })
    .post('/login', async ({ body, server, request, set }) => {
      const s = await service.login(deps, body, { ip: clientIp(server, request) })
      set.headers['set-cookie'] = sessionCookie(deps, s.token)
      return s.user
    }, {
      body: LoginBody, response: { 200: UserOut },
      detail: detail('Log in', `Sets the httpOnly SameSite=Lax cookie ${SESSION_COOKIE} (a 7-day HS256 JWT). 401 UNAUTHORIZED for a wrong address or password; 429 RATE_LIMIT_EXCEEDED with Retry-After after ${service.THROTTLES.loginPerAddress.limit} attempts per address or ${service.THROTTLES.loginPerIp.limit} per IP in 15 minutes.`),
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
    .get('/oauth-config', () => service.oauthConfig(), { response: { 200: OAuthConfig }, detail: detail('Configured OAuth providers') })
    .post('/verify-email', ({ body }) => service.verifyEmail(deps, body.token), {
      body: TokenBody, response: { 200: UserOut },
      detail: detail('Verify an email address', 'Spends the single-use token mailed at signup (valid 24 hours). Pending project invitations for the address are accepted. 400 BAD_REQUEST for an invalid, expired or used token.'),
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
