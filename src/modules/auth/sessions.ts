import { and, eq, gt, isNull } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import type { Deps } from '../../deps'
import { signJwt, verifyJwt } from './jwt'

/** docs/decisions.md, Dashboard sessions: the dashboard session lasts 7 days. */
export const SESSION_TTL_SECONDS = 7 * 24 * 3600

/** Records a session and returns the JWT for the `mailctl_session` cookie (claims: sub = user, sid = session). */
export async function openSession(deps: Deps, db: Db, userId: string, now: Date): Promise<string> {
  const id = Bun.randomUUIDv7()
  await db.insert(deps.store.t.sessions).values({
    id, userId, createdAt: now, expiresAt: new Date(now.getTime() + SESSION_TTL_SECONDS * 1000), revokedAt: null,
  })
  return signJwt({ sub: userId, sid: id }, deps.secret, SESSION_TTL_SECONDS, now.getTime())
}

/** The user of a valid, unrevoked, unexpired session token; null otherwise. */
export async function sessionUser(deps: Deps, token: string, now = new Date()): Promise<string | null> {
  const claims = verifyJwt(token, deps.secret, now.getTime())
  if (!claims || typeof claims.sid !== 'string') return null
  const { sessions } = deps.store.t
  const [row] = await deps.store.db.select({ userId: sessions.userId }).from(sessions)
    .where(and(eq(sessions.id, claims.sid), eq(sessions.userId, claims.sub), isNull(sessions.revokedAt), gt(sessions.expiresAt, now))).limit(1)
  return row?.userId ?? null
}

export async function revokeSession(deps: Deps, token: string, now = new Date()): Promise<void> {
  const claims = verifyJwt(token, deps.secret, now.getTime())
  if (!claims || typeof claims.sid !== 'string') return
  const { sessions } = deps.store.t
  await deps.store.tx((db) => db.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.id, claims.sid as string), isNull(sessions.revokedAt))))
}

/** Ends every session of a user (password reset). */
export async function revokeAllSessions(store: Store, db: Db, userId: string, now: Date): Promise<void> {
  const { sessions } = store.t
  await db.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)))
}
