import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Deps } from '../../deps'
import { AppError } from '../../errors'
import { normalizeEmail } from '../users/email'
import * as users from '../users/service'
import { hashPassword, insertUser } from '../users/service'
import { signJwt, verifyJwt } from './jwt'
import * as repo from './oauth-repo'
import { credentials, endpoints, exchangeCode, fetchProfile, isProvider, ProviderFailure, type ProviderName } from './oauth-providers'
import { openSession, revokeAllSessions } from './sessions'
import { cutText, isStorableText, storableCopy } from '../../storable'

/**
 * OAuth sign-in for the dashboard (docs/decisions.md, OAuth sign-in). GET /auth/oauth/:provider sends the
 * browser to the provider with a signed, short-lived `state` whose nonce is also in a cookie; the callback
 * checks both, exchanges the code, reads the verified email, links or creates the user and opens a session.
 */

/** The cookie binding a sign-in to the browser that started it (login CSRF): the state's nonce. */
export const STATE_COOKIE = 'mailctl_oauth'
/** How long a started sign-in may take at the provider. */
export const STATE_TTL_SECONDS = 600

/**
 * Why a sign-in failed: the code goes to the dashboard as /app/?oauth_error=<code>, and the dashboard shows
 * its own fixed message for it (never text from the URL).
 */
export type OAuthErrorCode = 'access_denied' | 'invalid_state' | 'unverified_email' | 'provider_error' | 'signup_disabled' | 'try_again' | 'rate_limited' | 'server_error'

/** Callbacks per client IP (each may cost calls to the provider), counted like login attempts (deps.limiter). */
export const CALLBACKS_PER_IP = { limit: 30, windowMs: 15 * 60_000 } as const

export class OAuthFailure extends Error {
  constructor(readonly code: OAuthErrorCode, message: string) { super(message) }
}

/** A provider that exists and is configured; 404 otherwise (the start and callback routes). */
export function configuredProvider(deps: Deps, name: string): ProviderName {
  if (!isProvider(name)) throw new AppError('NOT_FOUND', `Unknown OAuth provider "${name}": use github or google`)
  if (!credentials(deps.config, name)) {
    throw new AppError('NOT_FOUND', `OAuth sign-in with ${name} is not configured on this server`, {
      suggestion: `Set MAILCTL_OAUTH_${name.toUpperCase()}_ID and MAILCTL_OAUTH_${name.toUpperCase()}_SECRET to turn it on`,
    })
  }
  return name
}

export function callbackUrl(deps: Deps, p: ProviderName): string {
  return `${deps.config.publicUrl}/auth/oauth/${p}/callback`
}

/** The state is signed with a key of its own (derived from the session secret), so it can never pass as a session token. */
const stateKey = (deps: Deps) => createHmac('sha256', deps.secret).update('mailctl oauth state v1').digest('base64url')

/** GET /auth/oauth/:provider: the provider's authorize URL and the nonce for the state cookie. */
export function startSignIn(deps: Deps, name: string, now = deps.clock.now()): { location: string; nonce: string } {
  const p = configuredProvider(deps, name)
  const nonce = randomBytes(18).toString('base64url')
  const state = signJwt({ sub: 'oauth-state', p, n: nonce }, stateKey(deps), STATE_TTL_SECONDS, now)
  const e = endpoints(deps.config, p)
  const url = new URL(e.authorize)
  url.searchParams.set('client_id', credentials(deps.config, p)?.id ?? '')
  url.searchParams.set('redirect_uri', callbackUrl(deps, p))
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('scope', e.scope)
  url.searchParams.set('state', state)
  if (p === 'google') url.searchParams.set('prompt', 'select_account')
  return { location: url.toString(), nonce }
}

/** The state is ours, unexpired, for this provider, and carries the nonce of this browser's cookie. */
function checkState(deps: Deps, p: ProviderName, state: string | undefined, cookieNonce: string | null, now: number): void {
  const claims = state ? verifyJwt(state, stateKey(deps), now) : null
  const n = typeof claims?.n === 'string' ? Buffer.from(claims.n) : null
  const c = cookieNonce ? Buffer.from(cookieNonce) : null
  if (claims?.sub !== 'oauth-state' || claims.p !== p || !n || !c || n.length !== c.length || !timingSafeEqual(n, c)) {
    throw new OAuthFailure('invalid_state', `${p}: the state is missing, tampered with, expired, or not from this browser`)
  }
}

export interface CallbackQuery { code?: string; state?: string; error?: string }

/**
 * GET /auth/oauth/:provider/callback: the session token of the user the provider account signs in as.
 * Throws OAuthFailure for everything the visitor should be told about (the route redirects with its code).
 */
export async function finishSignIn(deps: Deps, p: ProviderName, q: CallbackQuery, cookieNonce: string | null, meta: { ip: string | null } = { ip: null }): Promise<{ token: string; userId: string; created: boolean }> {
  const now = deps.clock.date()
  if (meta.ip) {
    const r = await deps.limiter.hit(`auth:oauth:ip:${meta.ip}`, CALLBACKS_PER_IP.limit, CALLBACKS_PER_IP.windowMs)
    if (!r.allowed) throw new OAuthFailure('rate_limited', `${p}: too many sign-ins from ${meta.ip}; retry in ${r.resetSeconds} seconds`)
  }
  // The provider's own refusal (the user pressed "Cancel") comes without a code; the state is still checked
  // first, so a forged link cannot make the page show anything.
  checkState(deps, p, q.state, cookieNonce, now.getTime())
  if (q.error) throw new OAuthFailure('access_denied', `${p}: the provider answered error=${q.error.slice(0, 100)}`)
  if (!q.code) throw new OAuthFailure('provider_error', `${p}: the callback has neither a code nor an error`)
  const fetcher = deps.fetch ?? fetch
  let profile: Awaited<ReturnType<typeof fetchProfile>>
  try {
    const token = await exchangeCode(fetcher, deps.config, p, q.code, callbackUrl(deps, p))
    profile = await fetchProfile(fetcher, deps.config, p, token)
  } catch (err) {
    if (err instanceof ProviderFailure) throw new OAuthFailure(err.code, err.message)
    throw err
  }
  if (!profile.email) throw new OAuthFailure('unverified_email', `${p}: account ${profile.id} has no verified primary email address`)
  const email = normalizeEmail(profile.email)
  if (!isStorableText(profile.id)) throw new OAuthFailure('provider_error', `${p}: the account id holds text that cannot be stored`)
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email) || !isStorableText(email)) throw new OAuthFailure('provider_error', `${p}: the email address "${email.slice(0, 300)}" is not usable`)
  const name = profile.name ? cutText(storableCopy(profile.name), 100) : null

  // A new link may need a password hash (slow: before the transaction) for an account made here or taken over.
  const known = await repo.linked(deps.store, deps.store.db, p, profile.id)
  const unusablePassword = known ? null : await hashPassword(randomBytes(32).toString('base64url'))

  try {
    return await deps.store.tx(async (db) => {
      const link = await repo.linked(deps.store, db, p, profile.id)
      if (link) {
        await repo.touch(deps.store, db, p, profile.id, email, now)
        return { token: await openSession(deps, db, link.userId, now), userId: link.userId, created: false }
      }
      if (!unusablePassword) throw new OAuthFailure('try_again', `${p}: the link of account ${profile.id} went away during the sign-in`)
      let user = await users.byEmail(deps.store, db, email)
      let created = false
      if (user && !user.emailVerifiedAt) {
        // An account nobody proved the address of: its password may have been chosen by someone else
        // (pre-registration), so it stops working and its sessions end. The owner of the address can set a
        // new one with a password reset.
        await users.setPassword(deps.store, db, user.id, unusablePassword, now)
        await revokeAllSessions(deps.store, db, user.id, now)
        await users.markVerified(deps.store, db, user.id, now)
        user = { ...user, emailVerifiedAt: now }
      } else if (!user) {
        if (deps.config.signupDisabled) throw new OAuthFailure('signup_disabled', `${p}: no account uses ${email} and sign-up is disabled`)
        user = await insertUser(deps, db, {
          id: Bun.randomUUIDv7(), email, name, passwordHash: unusablePassword, emailVerifiedAt: now, createdAt: now, updatedAt: now,
        })
        created = true
      }
      await repo.link(deps.store, db, { provider: p, providerUserId: profile.id, userId: user.id, email, createdAt: now, lastLoginAt: now })
      // A concurrent sign-in of the same provider account may have linked it first: its link wins.
      const final = await repo.linked(deps.store, db, p, profile.id)
      const userId = final?.userId ?? user.id
      return { token: await openSession(deps, db, userId, now), userId, created: created && userId === user.id }
    })
  } catch (err) {
    if (err instanceof AppError && err.code === 'CONFLICT') throw new OAuthFailure('try_again', `${p}: ${email} got an account during the sign-in`)
    throw err
  }
}
