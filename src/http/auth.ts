import { Elysia } from 'elysia'
import type { Deps, Ctx } from '../deps'
import { AppError } from '../errors'
import type { ProjectRow } from '../modules/projects/service'
import { invalidKey, projectDisabled, projectForKey, projectForKeyConfirmedInWrite, projectForMember, reconfirmKey, TRACK_KEYS, type KeyConfirm } from '../modules/projects/service'
import { sessionUser } from '../modules/auth/sessions'
import type { RateLimitResult } from './ratelimit'
import { NotABodyError, readsNothing } from './bodies'

export const SESSION_COOKIE = 'mailctl_session'
/** The header naming the project a dashboard request acts on, in place of a secret key. */
export const PROJECT_HEADER = 'x-project-id'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * docs/decisions.md, The dashboard: an unsafe request made with the session cookie that names an Origin
 * must come from this server (its public URL, or the host the request was sent to). A request without
 * Origin (curl, the CLI, old browsers on same-origin GETs) passes: the cookie's SameSite=Lax and the
 * X-Project-Id header already keep cross-site forms out.
 */
export function checkOrigin(deps: Deps, request: Request): void {
  if (SAFE_METHODS.has(request.method)) return
  const origin = request.headers.get('origin')
  if (origin === null) return
  if (origin !== 'null') {
    let host: string | null = null
    try { host = new URL(origin).host } catch { host = null }
    if (host !== null) {
      if (origin === publicOrigin(deps.config.publicUrl)) return
      if (host === (request.headers.get('host') ?? '')) return
    }
  }
  throw new AppError('FORBIDDEN', `Cross-origin request refused: Origin ${origin} is not this server`)
}

const origins = new Map<string, string>()
function publicOrigin(url: string): string {
  let o = origins.get(url)
  if (o === undefined) {
    try { o = new URL(url).origin } catch { o = '' }
    origins.set(url, o)
  }
  return o
}


/** The raw session JWT from the `mailctl_session` cookie, if any. */
export function sessionToken(request: Request): string | null {
  const cookie = request.headers.get('cookie') ?? ''
  const raw = cookie.split(/;\s*/).find((c) => c.startsWith(`${SESSION_COOKIE}=`))?.slice(SESSION_COOKIE.length + 1)
  if (!raw) return null
  try { return decodeURIComponent(raw) } catch { return null }
}

function bearer(request: Request): string | null {
  const h = request.headers.get('authorization')
  if (!h) return null
  if (h.startsWith('Bearer ') && h.charCodeAt(7) > 32) return h.slice(7).trim()
  const m = /^Bearer\s+(.+)$/i.exec(h.trim())
  return m ? m[1].trim() : ''
}

/**
 * The per-project request budgets of docs/decisions.md (Limits, Public key in the browser): the secret key
 * and the dashboard share the project's budget; the public key, which lives in web pages, counts in a
 * budget of its own, so what a page does can never spend the budget of the project's server calls.
 */
function rateLimit(deps: Deps, projectId: string, headers: Record<string, string | number>, keyKind: 'secret' | 'public' = 'secret'): void | Promise<void> {
  const hit = keyKind === 'public'
    ? deps.limiter.hit(`project:${projectId}:public`, deps.config.publicRateLimitPerMinute ?? deps.config.rateLimitPerMinute, 60_000)
    : deps.limiter.hit(`project:${projectId}`, deps.config.rateLimitPerMinute, 60_000)
  if (hit instanceof Promise) return hit.then((r) => applyLimit(r, headers))
  applyLimit(hit, headers)
}

function applyLimit(r: RateLimitResult, headers: Record<string, string | number>) {
  headers['ratelimit-limit'] = String(r.limit)
  headers['ratelimit-remaining'] = String(r.remaining)
  headers['ratelimit-reset'] = String(r.resetSeconds)
  if (!r.allowed) {
    throw new AppError('RATE_LIMIT_EXCEEDED', `Rate limit of ${r.limit} requests per minute exceeded`, {
      headers: { 'retry-after': String(r.resetSeconds) },
      suggestion: `Retry after ${r.resetSeconds} seconds`,
    })
  }
}

/**
 * A route that takes a secret key, called by the dashboard: the session cookie plus X-Project-Id. The
 * header is required (a cross-site form cannot set it), the Origin of an unsafe method must be ours, the
 * user must be a member (404 otherwise, as for a project that does not exist) whose role allows reading
 * (safe methods) or writing resources. The context is the one a key gets, with the user as actor. A
 * disabled project stays readable to its members; its changes are refused as they are for keys.
 */
async function dashboardAuth(deps: Deps, request: Request, token: string, headers: Record<string, string>, admin: boolean): Promise<{ ctx: Ctx; project: ProjectRow }> {
  const projectId = request.headers.get(PROJECT_HEADER)
  if (!projectId) {
    throw new AppError('UNAUTHORIZED', 'A dashboard session must name its project in the X-Project-Id header (or send "Authorization: Bearer <secret key>")')
  }
  checkOrigin(deps, request)
  const userId = await sessionUser(deps, token)
  if (!userId) throw new AppError('UNAUTHORIZED', 'Log in first: the dashboard session is missing, expired or ended')
  const safe = SAFE_METHODS.has(request.method)
  const { project } = await projectForMember(deps, userId, projectId, admin ? 'integrations' : safe ? 'read' : 'write')
  if (project.disabled && !safe) throw new AppError('PROJECT_DISABLED', 'This project is disabled')
  const limited = rateLimit(deps, project.id, headers)
  if (limited) await limited
  const ctx: Ctx = { deps, store: deps.store, projectId: project.id, actor: { kind: 'user', userId }, now: deps.clock.date() }
  return { ctx, project }
}

/** OpenAPI security requirements, by the names of app.ts's security schemes. */
type Security = Array<Record<string, string[]>>
const SECRET_KEY: Security = [{ secretKey: [] }, { session: [], projectId: [] }]
const TRACK_KEY: Security = [{ publicKey: [] }, { secretKey: [] }, { session: [], projectId: [] }]
const SESSION: Security = [{ session: [] }]
/** The roles a route allows a dashboard user (OpenAPI extension; every role when absent). */
export const ADMIN_ROLES = ['OWNER', 'ADMIN']

/** A 401 or 403 in place of a refusal that counted the request in a budget tells nothing of the budget. */
function dropLimitHeaders(headers: Record<string, unknown>): void {
  for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) delete headers[h]
}

/**
 * For the error handler (app.ts): a refused request whose key was answered from memory (/v1/track on
 * PostgreSQL, projectForKeyConfirmedInWrite) never reached the write that confirms it. Its key is looked up
 * afresh: a rotated or disabled one answers its 401 or 403 in place of the refusal (authentication comes
 * first, docs/decisions.md), and is dropped from memory. Null when there is nothing to confirm or the key
 * still holds.
 */
export function holdsUnconfirmedKey(set: object): boolean {
  return (set as Authed)[KEY_AUTH]?.confirm !== undefined
}

/** See holdsUnconfirmedKey. */
export async function staleKeyRefusal(deps: Deps, set: object): Promise<AppError | null> {
  const auth = (set as Authed)[KEY_AUTH]
  const confirm = auth?.confirm
  if (!confirm) return null
  auth.confirm = undefined
  return refusalOfStaleKey(deps, confirm, TRACK_KEYS, (set as { headers: Record<string, unknown> }).headers)
}

/** The key answered from memory looked up afresh: its 401 or 403 (the rate-limit headers dropped), or null if it holds. */
async function refusalOfStaleKey(deps: Deps, confirm: KeyConfirm, need: Parameters<typeof reconfirmKey>[2], headers: Record<string, unknown>): Promise<AppError | null> {
  try {
    await reconfirmKey(deps.store, confirm, need)
    return null
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    dropLimitHeaders(headers)
    return err
  }
}

/** What a route asks for: a secret key; a public or secret key (/v1/track); a secret key or an OWNER/ADMIN session. */
type KeyNeed = 'secret' | 'track' | 'admin'

const KEY_AUTH = Symbol('mailctl.keyAuth')
const SESSION_AUTH = Symbol('mailctl.sessionAuth')
interface Authed { [KEY_AUTH]?: { ctx: Ctx; project: ProjectRow; confirm?: KeyConfirm }; [SESSION_AUTH]?: string }

/**
 * Authentication for every route:
 * - `apiKey: 'secret'`: an sk_ key only; `apiKey: 'track'`: pk_ or sk_ (docs/decisions.md, API keys);
 *   or, for the dashboard, the session cookie plus X-Project-Id (see dashboardAuth);
 *   resolves `ctx` (project-scoped service context) and `project`.
 * - `session: true`: the dashboard JWT cookie; resolves `userId`.
 */
export function authPlugin(deps: Deps) {
  // The key is checked before any body is read: by a parse hook that reads nothing (it runs after the
  // body-cap hook of app.ts and a route's own length check, before the parser that reads), and, for the
  // routes that take no body (Elysia runs no parser for them), in the transform phase. Either way it is
  // before body validation: a request without a valid key is answered 401 whatever its body. The result
  // is handed to `resolve` on the request's `set` object.
  // Hooks take their context destructured (see app.ts): Elysia prepares only the fields they name.
  // They are arrow functions, never methods: Elysia's Sucrose finds a method's parameter list by the first
  // line break, which the minified binary has none of, and prints a non-JSON warning (test/http/sucrose).
  const keyGuard = async (required: KeyNeed, request: Request, set: { headers: unknown }): Promise<void> => {
    if ((set as Authed)[KEY_AUTH]) return
    const key = bearer(request)
    const need = required === 'track' ? TRACK_KEYS : 'a secret key (sk_...)'
    if (key === null) {
      const token = sessionToken(request)
      if (token !== null) {
        ;(set as Authed)[KEY_AUTH] = await dashboardAuth(deps, request, token, set.headers as Record<string, string>, required === 'admin')
        return
      }
    }
    if (key === null) throw new AppError('UNAUTHORIZED', `Missing API key: send "Authorization: Bearer <key>" with ${need}`)
    // /v1/track confirms a key answered from memory in its write's transaction (projectForKeyConfirmedInWrite).
    const found = required === 'track' ? await projectForKeyConfirmedInWrite(deps.store, key) : await projectForKey(deps.store, key)
    if (!found) throw invalidKey(need)
    if (required !== 'track' && found.kind !== 'secret') {
      throw new AppError('INVALID_API_KEY', 'This endpoint requires a secret key (sk_...); a public key was given')
    }
    if (found.project.disabled) throw projectDisabled()
    try {
      const limited = rateLimit(deps, found.project.id, set.headers as Record<string, string>, found.kind)
      if (limited) await limited
    } catch (err) {
      // A key answered from memory is confirmed before any refusal: a rotated one gets its 401, not a 429.
      const refusal = found.confirm ? await refusalOfStaleKey(deps, found.confirm, need, set.headers as Record<string, unknown>) : null
      throw refusal ?? err
    }
    const ctx: Ctx = { deps, store: deps.store, projectId: found.project.id, actor: { kind: 'key', keyKind: found.kind }, now: deps.clock.date() }
    ;(set as Authed)[KEY_AUTH] = { ctx, project: found.project, confirm: found.confirm }
  }
  const sessionGuard = async (request: Request, set: object): Promise<void> => {
    if ((set as Authed)[SESSION_AUTH]) return
    checkOrigin(deps, request)
    const token = sessionToken(request)
    const userId = token ? await sessionUser(deps, token) : null
    if (!userId) throw new AppError('UNAUTHORIZED', 'Log in first: this endpoint needs a dashboard session')
    ;(set as Authed)[SESSION_AUTH] = userId
  }
  return new Elysia().macro({
    apiKey: (required: KeyNeed) => ({
      // The OpenAPI document (and /docs) learn the key from here: no route has to repeat it. `admin`: the
      // secret key, or a dashboard user whose role is OWNER or ADMIN (x-roles).
      detail: required === 'track' ? { security: TRACK_KEY } : required === 'admin' ? { security: SECRET_KEY, 'x-roles': ADMIN_ROLES } : { security: SECRET_KEY },
      parse: readsNothing(async ({ request, set }: { request: Request; set: { headers: unknown } }): Promise<undefined> => {
        try { await keyGuard(required, request, set) } catch (err) { throw err instanceof AppError ? err : new NotABodyError(err) }
        return undefined
      }),
      transform: async ({ request, set }) => { await keyGuard(required, request, set) },
      resolve: ({ set }) => {
        const auth = (set as Authed)[KEY_AUTH]
        if (!auth) throw new AppError('UNAUTHORIZED', 'Missing API key')
        return auth
      },
    }),
    session: (on: boolean) => ({
      ...(on ? { detail: { security: SESSION } } : {}),
      ...(on ? {
        parse: readsNothing(async ({ request, set }: { request: Request; set: object }): Promise<undefined> => {
          try { await sessionGuard(request, set) } catch (err) { throw err instanceof AppError ? err : new NotABodyError(err) }
          return undefined
        }),
      } : {}),
      transform: async ({ request, set }) => {
        if (!on) return
        await sessionGuard(request, set)
      },
      resolve: ({ set }) => {
        if (!on) return { userId: '' }
        const userId = (set as Authed)[SESSION_AUTH]
        if (!userId) throw new AppError('UNAUTHORIZED', 'Log in first: this endpoint needs a dashboard session')
        return { userId }
      },
    }),
  })
}
