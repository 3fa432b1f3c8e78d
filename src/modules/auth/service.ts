import type { Deps } from '../../deps'
import { AppError, badRequest, forbidden } from '../../errors'
import type { SystemMail } from '../../mail/system'
import { acceptInvitations } from '../members/service'
import { normalizeEmail } from '../users/email'
import type { UserOut } from '../users/model'
import * as users from '../users/repo'
import { checkPassword, hashPassword, insertUser, prepareUser, toUserOut } from '../users/service'
import type { LoginBody, SignupBody } from './model'
import { openSession, revokeAllSessions } from './sessions'
import { consumeToken, issueToken, TOKEN_TTL_MS } from './tokens'

/** Where the request came from (for per-IP throttles); null when unknown. */
export interface ClientMeta { ip: string | null }

/** Brute-force budgets: attempts per window, counted in deps.limiter (Redis when REDIS_URL is set). */
export const THROTTLES = {
  loginPerAddress: { limit: 10, windowMs: 15 * 60_000 },
  loginPerIp: { limit: 30, windowMs: 15 * 60_000 },
  signupPerIp: { limit: 20, windowMs: 60 * 60_000 },
  mailPerAddress: { limit: 5, windowMs: 60 * 60_000 },
  mailPerIp: { limit: 30, windowMs: 60 * 60_000 },
} as const

async function throttle(deps: Deps, key: string, budget: { limit: number; windowMs: number }, what: string): Promise<void> {
  const r = await deps.limiter.hit(`auth:${key}`, budget.limit, budget.windowMs)
  if (!r.allowed) {
    throw new AppError('RATE_LIMIT_EXCEEDED', `Too many ${what}; retry in ${r.resetSeconds} seconds`, {
      headers: { 'retry-after': String(r.resetSeconds) },
      suggestion: `Retry after ${r.resetSeconds} seconds`,
    })
  }
}

export interface Session { user: UserOut; token: string }

function verificationMail(deps: Deps, to: string, token: string): SystemMail {
  const link = `${deps.config.publicUrl}/app/verify-email?token=${encodeURIComponent(token)}`
  return {
    kind: 'verify-email', to,
    subject: 'Verify your email address for mailctl',
    text: `Confirm that this address is yours by opening:\n\n${link}\n\nor by sending this token to POST /auth/verify-email:\n\n${token}\n\n` +
      `The link is valid for ${TOKEN_TTL_MS['verify-email'] / 3600_000} hours and works once.\n`,
  }
}

function resetMail(deps: Deps, to: string, token: string): SystemMail {
  const link = `${deps.config.publicUrl}/app/reset-password?token=${encodeURIComponent(token)}`
  return {
    kind: 'password-reset', to,
    subject: 'Reset your mailctl password',
    text: `Someone (hopefully you) asked to reset the password of this account. To choose a new one, open:\n\n${link}\n\n` +
      `or send this token to POST /auth/reset-password:\n\n${token}\n\n` +
      `The link is valid for ${TOKEN_TTL_MS['password-reset'] / 60_000} minutes and works once. If you did not ask, ignore this email.\n`,
  }
}

/** POST /auth/signup: a new unverified account, a verification email and a session. */
export async function signup(deps: Deps, input: SignupBody, meta: ClientMeta): Promise<Session> {
  if (deps.config.signupDisabled) throw forbidden('Signup is disabled on this server; ask an administrator to create your account')
  if (meta.ip) await throttle(deps, `signup:ip:${meta.ip}`, THROTTLES.signupPerIp, 'signups from this address')
  const prepared = await prepareUser(input)
  const now = new Date()
  const { row, token, session } = await deps.store.tx(async (db) => {
    const row = await insertUser(deps, db, prepared)
    const token = await issueToken(deps.store, db, row.id, 'verify-email', now)
    const session = await openSession(deps, db, row.id, now)
    return { row, token, session }
  })
  await deps.mail.send(verificationMail(deps, row.email, token))
  return { user: toUserOut(row), token: session }
}

/** POST /auth/login: throttled per address and per IP; the same answer for an unknown address and a wrong password. */
export async function login(deps: Deps, input: LoginBody, meta: ClientMeta): Promise<Session> {
  const email = normalizeEmail(input.email)
  await throttle(deps, `login:email:${email}`, THROTTLES.loginPerAddress, 'login attempts for this account')
  if (meta.ip) await throttle(deps, `login:ip:${meta.ip}`, THROTTLES.loginPerIp, 'login attempts from this address')
  const user = await users.byEmail(deps.store, deps.store.db, email)
  if (!(await checkPassword(input.password, user)) || !user) throw new AppError('UNAUTHORIZED', 'Invalid email or password')
  await deps.limiter.reset(`auth:login:email:${email}`)
  const token = await deps.store.tx((db) => openSession(deps, db, user.id, new Date()))
  return { user: toUserOut(user), token }
}

const SENT = 'If an account needing it exists for this address, an email is on its way.'

/** POST /auth/request-verification: resends the verification email (same answer whether or not the account exists). */
export async function requestVerification(deps: Deps, emailIn: string, meta: ClientMeta): Promise<{ success: true; message: string }> {
  const email = normalizeEmail(emailIn)
  await throttle(deps, `mail:email:${email}`, THROTTLES.mailPerAddress, 'emails requested for this account')
  if (meta.ip) await throttle(deps, `mail:ip:${meta.ip}`, THROTTLES.mailPerIp, 'emails requested from this address')
  const user = await users.byEmail(deps.store, deps.store.db, email)
  if (user && !user.emailVerifiedAt) {
    const token = await deps.store.tx((db) => issueToken(deps.store, db, user.id, 'verify-email', new Date()))
    await deps.mail.send(verificationMail(deps, user.email, token))
  }
  return { success: true, message: SENT }
}

/** POST /auth/verify-email: spends the token, marks the address verified and accepts pending invitations. */
export async function verifyEmail(deps: Deps, token: string): Promise<UserOut> {
  const now = new Date()
  return deps.store.tx(async (db) => {
    const userId = await consumeToken(deps.store, db, 'verify-email', token, now)
    if (!userId) throw badRequest('This verification token is invalid, expired or already used; request a new one')
    const user = await users.byId(deps.store, db, userId)
    if (!user) throw badRequest('This verification token is invalid, expired or already used; request a new one')
    if (await users.markVerified(deps.store, db, user.id, now)) user.emailVerifiedAt = now
    await acceptInvitations(deps, db, user, now)
    return toUserOut(user)
  })
}

/** POST /auth/request-password-reset: mails a reset token (same answer whether or not the account exists). */
export async function requestPasswordReset(deps: Deps, emailIn: string, meta: ClientMeta): Promise<{ success: true; message: string }> {
  const email = normalizeEmail(emailIn)
  await throttle(deps, `mail:email:${email}`, THROTTLES.mailPerAddress, 'emails requested for this account')
  if (meta.ip) await throttle(deps, `mail:ip:${meta.ip}`, THROTTLES.mailPerIp, 'emails requested from this address')
  const user = await users.byEmail(deps.store, deps.store.db, email)
  if (user) {
    const token = await deps.store.tx((db) => issueToken(deps.store, db, user.id, 'password-reset', new Date()))
    await deps.mail.send(resetMail(deps, user.email, token))
  }
  return { success: true, message: SENT }
}

/**
 * POST /auth/reset-password: spends the token, sets the password and ends every session of the account.
 * The token came by email, so it also proves the address (verified, invitations accepted).
 */
export async function resetPassword(deps: Deps, token: string, password: string): Promise<{ success: true; message: string }> {
  const passwordHash = await hashPassword(password)
  const now = new Date()
  await deps.store.tx(async (db) => {
    const userId = await consumeToken(deps.store, db, 'password-reset', token, now)
    const user = userId ? await users.byId(deps.store, db, userId) : undefined
    if (!user) throw badRequest('This reset token is invalid, expired or already used; request a new one')
    await users.setPassword(deps.store, db, user.id, passwordHash, now)
    await revokeAllSessions(deps.store, db, user.id, now)
    if (await users.markVerified(deps.store, db, user.id, now)) await acceptInvitations(deps, db, { ...user, emailVerifiedAt: now }, now)
  })
  return { success: true, message: 'Password changed; log in again with the new password' }
}

/** GET /auth/first-run: true until the first account exists (the dashboard then explains `mailctl user create`). */
export async function firstRun(deps: Deps): Promise<{ firstRun: boolean }> {
  return { firstRun: !(await users.anyUser(deps.store, deps.store.db)) }
}
