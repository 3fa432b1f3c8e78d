import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { AppError, conflict, notFound } from '../../errors'
import { parseInput } from '../validate'
import { NewUser, type UserOut } from './model'
import * as repo from './repo'
import { normalizeEmail } from './email'
import type { UserRow } from './repo'

export { normalizeEmail }
export type { UserRow }

/**
 * The users' rows as the auth and members modules read and change them, in the caller's transaction:
 * other modules come through here, not through the repo.
 */
export { anyUser, byEmail, byId, markVerified, setPassword } from './repo'

/** argon2id with OWASP's baseline cost (19 MiB, 2 passes): ~0.1 s per hash on a small VPS core. */
export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: 19456, timeCost: 2 })
}

let dummyHash: Promise<string> | null = null
/** Checks a password; with no user, still spends the same work so timing does not reveal unknown addresses. */
export async function checkPassword(password: string, user: UserRow | undefined): Promise<boolean> {
  if (!user) {
    dummyHash ??= hashPassword(`not-a-real-password-${Math.random()}`)
    await Bun.password.verify(password, await dummyHash)
    return false
  }
  return Bun.password.verify(password, user.passwordHash)
}

export function toUserOut(u: UserRow): UserOut {
  return { id: u.id, email: u.email, name: u.name ?? null, emailVerified: u.emailVerifiedAt !== null, createdAt: u.createdAt }
}

/** Validates the input and hashes the password (slow: do it before opening a transaction); `now` is the clock's time. */
export async function prepareUser(input: NewUser, now: Date, opts: { verified?: boolean } = {}): Promise<UserRow> {
  const data = parseInput(NewUser, { ...input, email: typeof input.email === 'string' ? normalizeEmail(input.email) : input.email })
  const passwordHash = await hashPassword(data.password)
  return {
    id: Bun.randomUUIDv7(), email: data.email, name: data.name ?? null, passwordHash,
    emailVerifiedAt: opts.verified ? now : null, createdAt: now, updatedAt: now,
  }
}

/** Inserts a prepared user inside the caller's transaction; 409 when the address is taken. */
export async function insertUser(deps: Deps, db: Db, row: UserRow): Promise<UserRow> {
  const { store } = deps
  if (await repo.byEmail(store, db, row.email)) throw conflict('An account with this email already exists')
  try {
    await repo.insert(store, db, row)
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('An account with this email already exists')
    throw err
  }
  return row
}

/**
 * Creates a dashboard user. `verified` (CLI-created accounts) marks the address verified at once; pending
 * project invitations for it still wait for the user's answer.
 */
export async function createUser(deps: Deps, input: NewUser, opts: { verified?: boolean } = {}): Promise<UserRow> {
  const row = await prepareUser(input, deps.clock.date(), opts)
  return deps.store.tx((db) => insertUser(deps, db, row))
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null
  return e?.code === '23505' || /UNIQUE constraint failed/i.test(e?.message ?? '')
}

export async function findUserByEmail(deps: Deps, email: string): Promise<UserRow | undefined> {
  return repo.byEmail(deps.store, deps.store.db, normalizeEmail(email))
}

/** The signed-in user (GET /users/@me). A session whose user was deleted is no session. */
export async function getMe(deps: Deps, userId: string): Promise<UserOut> {
  const row = await repo.byId(deps.store, deps.store.db, userId)
  if (!row) throw new AppError('UNAUTHORIZED', 'Log in first: this session no longer has a user')
  return toUserOut(row)
}

export async function getUser(deps: Deps, userId: string): Promise<UserRow> {
  const row = await repo.byId(deps.store, deps.store.db, userId)
  if (!row) throw notFound('user')
  return row
}
