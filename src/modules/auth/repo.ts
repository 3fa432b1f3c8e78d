import { and, eq, gt, isNotNull, isNull, lt, or } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** The only SQL on dashboard sessions and the single-use tokens mailed to users (`sessions`, `auth_tokens`). */

export type SessionRow = typeof import('../../db/schema').pgSchema.sessions.$inferSelect
export type AuthTokenRow = typeof import('../../db/schema').pgSchema.authTokens.$inferSelect

export async function insertSession(store: Store, db: Db, row: SessionRow): Promise<void> {
  await db.insert(store.t.sessions).values(row)
}

/** The user of session `id` if it is `userId`'s, unrevoked and unexpired at `now`. */
export async function activeSessionUser(store: Store, db: Db, id: string, userId: string, now: Date): Promise<string | null> {
  const { sessions } = store.t
  const [row] = await db.select({ userId: sessions.userId }).from(sessions)
    .where(and(eq(sessions.id, id), eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, now))).limit(1)
  return row?.userId ?? null
}

export async function revokeSession(store: Store, db: Db, id: string, now: Date): Promise<void> {
  const { sessions } = store.t
  await db.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.id, id), isNull(sessions.revokedAt)))
}

export async function revokeUserSessions(store: Store, db: Db, userId: string, now: Date): Promise<void> {
  const { sessions } = store.t
  await db.update(sessions).set({ revokedAt: now }).where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)))
}

/** Stores a token, deleting the user's unused tokens of its kind first. */
export async function replaceToken(store: Store, db: Db, row: Omit<AuthTokenRow, 'usedAt'>): Promise<void> {
  const { authTokens } = store.t
  await db.delete(authTokens).where(and(eq(authTokens.userId, row.userId), eq(authTokens.kind, row.kind), isNull(authTokens.usedAt)))
  await db.insert(authTokens).values(row)
}

/** Marks the unused, unexpired token of this hash and kind used (one conditional UPDATE); its user, or null. */
export async function spendToken(store: Store, db: Db, kind: string, tokenHash: string, now: Date): Promise<string | null> {
  const { authTokens } = store.t
  const rows = await db.update(authTokens).set({ usedAt: now })
    .where(and(eq(authTokens.tokenHash, tokenHash), eq(authTokens.kind, kind), isNull(authTokens.usedAt), gt(authTokens.expiresAt, now)))
    .returning({ userId: authTokens.userId })
  return rows[0]?.userId ?? null
}

/** Deletes sessions expired at `now` or revoked before `before`; how many. */
export async function deleteStaleSessions(store: Store, db: Db, now: Date, before: Date): Promise<number> {
  const { sessions } = store.t
  const rows = await db.delete(sessions)
    .where(or(lt(sessions.expiresAt, now), and(isNotNull(sessions.revokedAt), lt(sessions.revokedAt, before))))
    .returning({ id: sessions.id })
  return rows.length
}

/** Deletes tokens expired at `now` or used before `before`; how many. */
export async function deleteStaleTokens(store: Store, db: Db, now: Date, before: Date): Promise<number> {
  const { authTokens } = store.t
  const rows = await db.delete(authTokens)
    .where(or(lt(authTokens.expiresAt, now), and(isNotNull(authTokens.usedAt), lt(authTokens.usedAt, before))))
    .returning({ id: authTokens.id })
  return rows.length
}
