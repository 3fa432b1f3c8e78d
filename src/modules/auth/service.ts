import type { Deps } from '../../deps'
import { AppError, badRequest, forbidden } from '../../errors'
import type { SystemMail } from '../../mail/system'
import { normalizeEmail } from '../users/email'
import type { UserOut } from '../users/model'
import * as users from '../users/service'
import { checkPassword, hashPassword, insertUser, prepareUser, toUserOut } from '../users/service'
import type { LoginBody, SignupBody } from './model'
import { openSession, revokeAllSessions } from './sessions'
import { consumeToken, issueToken, TOKEN_TTL_MS } from './tokens'

/** Where the request came from (for per-IP throttles); null when unknown. */
export interface ClientMeta { ip: string | null }

/** Brute-force budgets: attempts per window, counted in deps.limiter (Redis when REDIS_URL is set). */
export const THROTTLES = {
  /** Per account and source together: a wrong password elsewhere never locks the owner out. */
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

/** How long a failed login waits once the account and source have spent half of their budget. */
export const LOGIN_SLOWDOWN_MS = 1000

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

function accountExistsMail(deps: Deps, to: string): SystemMail {
  return {
    kind: 'account-exists', to,
    subject: 'Your mailctl account',
    text: `Someone (hopefully you) tried to create a mailctl account with this address, which already has one.\n\n` +
      `Sign in at ${deps.config.publicUrl}/app/ or, if you forgot your password, reset it at ${deps.config.publicUrl}/app/forgot-password.\n` +
      'If it was not you, ignore this email: nothing changed.\n',
  }
}

/** The answer of POST /auth/signup, the same whether or not the address already has an account. */
export const SIGNUP_SENT = 'Check your inbox: we sent a message to this address to continue. Then sign in.'

/**
 * POST /auth/signup: answers the same whether or not the address has an account, so
 * it cannot be used to find out which addresses do. A new address gets an unverified account and a
 * verification email; an address with an account gets a note saying so (or, unverified, a new
 * verification email), and its account is left as it is. No session is opened: the user signs in.
 */
export async function signup(deps: Deps, input: SignupBody, meta: ClientMeta): Promise<{ success: true; message: string }> {
  if (deps.config.signupDisabled) throw forbidden('Signup is disabled on this server; ask an administrator to create your account')
  if (meta.ip) await throttle(deps, `signup:ip:${meta.ip}`, THROTTLES.signupPerIp, 'signups from this address')
  // The password is hashed whether or not it is used: the answer takes as long either way.
  const prepared = await prepareUser(input, deps.clock.date())
  await throttle(deps, `mail:email:${prepared.email}`, THROTTLES.mailPerAddress, 'emails requested for this account')
  const now = deps.clock.date()
  const created = await deps.store.tx(async (db) => {
    if (await users.byEmail(deps.store, db, prepared.email)) return null
    const row = await insertUser(deps, db, prepared)
    return { row, token: await issueToken(deps.store, db, row.id, 'verify-email', now) }
  }).catch((err) => {
    if (err instanceof AppError && err.code === 'CONFLICT') return null
    throw err
  })
  if (created) {
    await deps.mail.send(verificationMail(deps, created.row.email, created.token))
  } else {
    const existing = await users.byEmail(deps.store, deps.store.db, prepared.email)
    if (existing && !existing.emailVerifiedAt) {
      const token = await deps.store.tx((db) => issueToken(deps.store, db, existing.id, 'verify-email', now))
      await deps.mail.send(verificationMail(deps, existing.email, token))
    } else if (existing) {
      await deps.mail.send(accountExistsMail(deps, existing.email))
    }
  }
  return { success: true, message: SIGNUP_SENT }
}

/**
 * POST /auth/login: throttled per account and source together, and per source; the same answer for an
 * unknown address and a wrong password. An attacker elsewhere spends only their own budget for the
 * account, so they cannot lock its owner out; past half of it, each failure is slowed.
 */
export async function login(deps: Deps, input: LoginBody, meta: ClientMeta): Promise<Session> {
  const email = normalizeEmail(input.email)
  const pair = `login:email:${email}:ip:${meta.ip ?? 'unknown'}`
  const hit = await deps.limiter.hit(`auth:${pair}`, THROTTLES.loginPerAddress.limit, THROTTLES.loginPerAddress.windowMs)
  if (!hit.allowed) {
    throw new AppError('RATE_LIMIT_EXCEEDED', `Too many login attempts for this account from this address; retry in ${hit.resetSeconds} seconds`, {
      headers: { 'retry-after': String(hit.resetSeconds) },
      suggestion: `Retry after ${hit.resetSeconds} seconds`,
    })
  }
  if (meta.ip) await throttle(deps, `login:ip:${meta.ip}`, THROTTLES.loginPerIp, 'login attempts from this address')
  const user = await users.byEmail(deps.store, deps.store.db, email)
  if (!(await checkPassword(input.password, user)) || !user) {
    if (hit.remaining < THROTTLES.loginPerAddress.limit / 2) await Bun.sleep(LOGIN_SLOWDOWN_MS)
    throw new AppError('UNAUTHORIZED', 'Invalid email or password')
  }
  await deps.limiter.reset(`auth:${pair}`)
  const token = await deps.store.tx((db) => openSession(deps, db, user.id, deps.clock.date()))
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
    const token = await deps.store.tx((db) => issueToken(deps.store, db, user.id, 'verify-email', deps.clock.date()))
    await deps.mail.send(verificationMail(deps, user.email, token))
  }
  return { success: true, message: SENT }
}

/** POST /auth/verify-email: spends the token and marks the address verified (invitations wait for the user's answer). */
export async function verifyEmail(deps: Deps, token: string): Promise<UserOut> {
  const now = deps.clock.date()
  return deps.store.tx(async (db) => {
    const userId = await consumeToken(deps.store, db, 'verify-email', token, now)
    if (!userId) throw badRequest('This verification token is invalid, expired or already used; request a new one')
    const user = await users.byId(deps.store, db, userId)
    if (!user) throw badRequest('This verification token is invalid, expired or already used; request a new one')
    if (await users.markVerified(deps.store, db, user.id, now)) user.emailVerifiedAt = now
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
    const token = await deps.store.tx((db) => issueToken(deps.store, db, user.id, 'password-reset', deps.clock.date()))
    await deps.mail.send(resetMail(deps, user.email, token))
  }
  return { success: true, message: SENT }
}

/**
 * POST /auth/reset-password: spends the token, sets the password and ends every session of the account.
 * The token came by email, so it also proves the address (verified).
 */
export async function resetPassword(deps: Deps, token: string, password: string): Promise<{ success: true; message: string }> {
  const passwordHash = await hashPassword(password)
  const now = deps.clock.date()
  await deps.store.tx(async (db) => {
    const userId = await consumeToken(deps.store, db, 'password-reset', token, now)
    const user = userId ? await users.byId(deps.store, db, userId) : undefined
    if (!user) throw badRequest('This reset token is invalid, expired or already used; request a new one')
    await users.setPassword(deps.store, db, user.id, passwordHash, now)
    await revokeAllSessions(deps.store, db, user.id, now)
    await users.markVerified(deps.store, db, user.id, now)
  })
  return { success: true, message: 'Password changed; log in again with the new password' }
}

/** GET /auth/first-run: true until the first account exists (the dashboard then explains `mailctl user create`). */
export async function firstRun(deps: Deps): Promise<{ firstRun: boolean }> {
  return { firstRun: !(await users.anyUser(deps.store, deps.store.db)) }
}
