import type { Config } from '../../config'
import type { FetchLike } from '../../deps'

/**
 * The OAuth providers of the dashboard's sign-in (docs/decisions.md, OAuth sign-in): their endpoints, and
 * the calls that turn an authorization code into a verified email address. Every endpoint of a provider
 * hangs off one base URL when MAILCTL_OAUTH_<PROVIDER>_URL is set, so tests point it at a fake provider on
 * loopback; otherwise the provider's own hosts are used.
 */
export type ProviderName = 'github' | 'google'
export const PROVIDERS: readonly ProviderName[] = ['github', 'google']

/**
 * One answer of a provider must come within `timeoutMs` (10 s); a slower provider is reported as failing.
 * An object, not a constant, so a test can shorten the wait instead of sitting through it.
 */
export const providerLimits = { timeoutMs: 10_000 }

export interface ProviderEndpoints { authorize: string; token: string; scope: string; label: string }

/** What a provider says about the account that signed in. `email` is only set when the provider verified it. */
export interface ProviderProfile { id: string; email: string | null; name: string | null }

/** Why talking to the provider failed: the code the dashboard shows a message for. */
export class ProviderFailure extends Error {
  constructor(readonly code: 'provider_error' | 'unverified_email', message: string) { super(message) }
}

interface Credentials { id: string; secret: string }

export function credentials(config: Config, p: ProviderName): Credentials | null {
  const [id, secret] = p === 'github' ? [config.oauthGithubId, config.oauthGithubSecret] : [config.oauthGoogleId, config.oauthGoogleSecret]
  return id && secret ? { id, secret } : null
}

/** GET /auth/oauth-config and /config: a provider is on when its client id and secret are both set. */
export function providersOn(config: Config): { github: boolean; google: boolean } {
  return { github: credentials(config, 'github') !== null, google: credentials(config, 'google') !== null }
}

export function isProvider(name: string): name is ProviderName {
  return (PROVIDERS as readonly string[]).includes(name)
}

const base = (config: Config, p: ProviderName) => (p === 'github' ? config.oauthGithubUrl : config.oauthGoogleUrl)

export function endpoints(config: Config, p: ProviderName): ProviderEndpoints {
  const b = base(config, p)
  if (p === 'github') {
    return {
      label: 'GitHub',
      authorize: `${b ?? 'https://github.com'}/login/oauth/authorize`,
      token: `${b ?? 'https://github.com'}/login/oauth/access_token`,
      scope: 'read:user user:email',
    }
  }
  return {
    label: 'Google',
    authorize: `${b ?? 'https://accounts.google.com'}/o/oauth2/v2/auth`,
    token: `${b ?? 'https://oauth2.googleapis.com'}/token`,
    scope: 'openid email profile',
  }
}

const githubApi = (config: Config) => config.oauthGithubUrl ?? 'https://api.github.com'
const googleUserinfo = (config: Config) => `${config.oauthGoogleUrl ?? 'https://openidconnect.googleapis.com'}/v1/userinfo`

/** A JSON answer of the provider within providerLimits.timeoutMs; any failure is a ProviderFailure naming what failed. */
async function providerJson(fetcher: FetchLike, what: string, url: string, init: RequestInit): Promise<{ status: number; body: unknown }> {
  let res: Response
  try {
    res = await fetcher(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(providerLimits.timeoutMs) })
  } catch (err) {
    const timedOut = (err as Error)?.name === 'TimeoutError'
    throw new ProviderFailure('provider_error', `${what}: ${timedOut ? `no answer within ${providerLimits.timeoutMs} ms` : `unreachable (${(err as Error)?.message ?? err})`}`)
  }
  const text = await res.text().catch(() => '')
  let body: unknown = null
  try { body = text ? JSON.parse(text) : null } catch { body = null }
  if (body === null && res.ok) throw new ProviderFailure('provider_error', `${what}: HTTP ${res.status} without a JSON body`)
  return { status: res.status, body }
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null)

/** Exchanges the authorization code at the token endpoint (RFC 6749 4.1.3) for an access token. */
export async function exchangeCode(fetcher: FetchLike, config: Config, p: ProviderName, code: string, redirectUri: string): Promise<string> {
  const creds = credentials(config, p)
  if (!creds) throw new ProviderFailure('provider_error', `${p} is not configured`)
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: creds.id, client_secret: creds.secret })
  const { status, body } = await providerJson(fetcher, `${p} token endpoint`, endpoints(config, p).token, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'mailctl' },
    body: form.toString(),
  })
  const b = (body ?? {}) as Record<string, unknown>
  const token = str(b.access_token)
  // GitHub answers a refused code with 200 and {error}; Google with 400 and {error}.
  if (status >= 300 || !token) throw new ProviderFailure('provider_error', `${p} token endpoint refused the code: HTTP ${status}${str(b.error) ? ` ${b.error}` : ''}`)
  return token
}

async function api(fetcher: FetchLike, what: string, url: string, token: string, accept: string): Promise<unknown> {
  const { status, body } = await providerJson(fetcher, what, url, { headers: { authorization: `Bearer ${token}`, accept, 'user-agent': 'mailctl' } })
  if (status >= 300) throw new ProviderFailure('provider_error', `${what}: HTTP ${status}`)
  return body
}

/** The account behind the access token, with its email only when the provider says it is verified. */
export async function fetchProfile(fetcher: FetchLike, config: Config, p: ProviderName, token: string): Promise<ProviderProfile> {
  return p === 'github' ? githubProfile(fetcher, config, token) : googleProfile(fetcher, config, token)
}

/** GitHub: GET /user for the id and name, GET /user/emails for the primary address, which must be verified. */
async function githubProfile(fetcher: FetchLike, config: Config, token: string): Promise<ProviderProfile> {
  const accept = 'application/vnd.github+json'
  const user = (await api(fetcher, 'github /user', `${githubApi(config)}/user`, token, accept) ?? {}) as Record<string, unknown>
  const id = typeof user.id === 'number' ? String(user.id) : str(user.id)
  if (!id) throw new ProviderFailure('provider_error', 'github /user: no account id in the answer')
  const emails = await api(fetcher, 'github /user/emails', `${githubApi(config)}/user/emails`, token, accept)
  if (!Array.isArray(emails)) throw new ProviderFailure('provider_error', 'github /user/emails: not a list')
  const primary = emails.find((e) => e && typeof e === 'object' && e.primary === true) as Record<string, unknown> | undefined
  const email = primary && primary.verified === true ? str(primary.email) : null
  return { id, email, name: str(user.name) ?? str(user.login) }
}

/** Google: the OpenID Connect userinfo; `email_verified` must be true. */
async function googleProfile(fetcher: FetchLike, config: Config, token: string): Promise<ProviderProfile> {
  const info = (await api(fetcher, 'google userinfo', googleUserinfo(config), token, 'application/json') ?? {}) as Record<string, unknown>
  const id = str(info.sub)
  if (!id) throw new ProviderFailure('provider_error', 'google userinfo: no subject in the answer')
  const verified = info.email_verified === true || info.email_verified === 'true'
  return { id, email: verified ? str(info.email) : null, name: str(info.name) }
}

/**
 * `mailctl doctor`: which providers are on and their callback URLs; a provider with only one of its id and
 * secret set is a warning (it stays off), as is a callback on a public URL a provider cannot send people back to.
 */
export function oauthCheck(config: Config): { name: string; status: 'ok' | 'warn'; detail: string } {
  const name = 'oauth sign-in'
  const half = PROVIDERS.filter((p) => {
    const [id, secret] = p === 'github' ? [config.oauthGithubId, config.oauthGithubSecret] : [config.oauthGoogleId, config.oauthGoogleSecret]
    return Boolean(id) !== Boolean(secret)
  })
  if (half.length) {
    const n = half.map((p) => `MAILCTL_OAUTH_${p.toUpperCase()}_ID and _SECRET`).join(', ')
    return { name, status: 'warn', detail: `only one of ${n} is set: ${half.join(' and ')} sign-in stays off until both are` }
  }
  const on = PROVIDERS.filter((p) => credentials(config, p))
  if (!on.length) return { name, status: 'ok', detail: 'off (email and password only)' }
  const callbacks = on.map((p) => `${p}: ${config.publicUrl}/auth/oauth/${p}/callback`).join(', ')
  if (/^(localhost|127\.|\[::1\])/.test(new URL(config.publicUrl).hostname)) {
    return { name, status: 'warn', detail: `${callbacks}: MAILCTL_PUBLIC_URL is a local address, so the provider can only send this machine's own browser back` }
  }
  return { name, status: 'ok', detail: `on; register these callback URLs with the providers: ${callbacks}` }
}
