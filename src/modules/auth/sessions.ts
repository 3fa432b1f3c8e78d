import type { Db, Store } from '../../db/client'
import type { Deps } from '../../deps'
import { signJwt, verifyJwt } from './jwt'
import * as repo from './repo'

/** docs/decisions.md, Dashboard sessions: the dashboard session lasts 7 days. */
export const SESSION_TTL_SECONDS = 7 * 24 * 3600

/** Records a session and returns the JWT for the `mailctl_session` cookie (claims: sub = user, sid = session). */
export async function openSession(deps: Deps, db: Db, userId: string, now: Date): Promise<string> {
  const id = Bun.randomUUIDv7()
  await repo.insertSession(deps.store, db, {
    id, userId, createdAt: now, expiresAt: new Date(now.getTime() + SESSION_TTL_SECONDS * 1000), revokedAt: null,
  })
  return signJwt({ sub: userId, sid: id }, deps.secret, SESSION_TTL_SECONDS, now.getTime())
}

/** The user of a valid, unrevoked, unexpired session token; null otherwise. */
export async function sessionUser(deps: Deps, token: string, now = deps.clock.date()): Promise<string | null> {
  const claims = verifyJwt(token, deps.secret, now.getTime())
  if (!claims || typeof claims.sid !== 'string') return null
  return repo.activeSessionUser(deps.store, deps.store.db, claims.sid, claims.sub, now)
}

export async function revokeSession(deps: Deps, token: string, now = deps.clock.date()): Promise<void> {
  const claims = verifyJwt(token, deps.secret, now.getTime())
  if (!claims || typeof claims.sid !== 'string') return
  const sid = claims.sid
  await deps.store.tx((db) => repo.revokeSession(deps.store, db, sid, now))
}

/** Ends every session of a user (password reset). */
export async function revokeAllSessions(store: Store, db: Db, userId: string, now: Date): Promise<void> {
  await repo.revokeUserSessions(store, db, userId, now)
}
