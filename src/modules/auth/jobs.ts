import { and, isNotNull, lt, or } from 'drizzle-orm'
import type { Store } from '../../db/client'
import { defineJob } from '../../jobs/queue'

/** Used or revoked rows are kept this long after use (for support questions), then deleted. */
const KEEP_MS = 24 * 3600_000

/** Deletes expired or long-used sessions, tokens and invitations; returns how many rows of each went. */
export async function sweepAccounts(store: Store, now = new Date()): Promise<{ sessions: number; tokens: number; invitations: number }> {
  const { sessions, authTokens, invitations } = store.t
  const before = new Date(now.getTime() - KEEP_MS)
  return store.tx(async (db) => {
    const s = await db.delete(sessions)
      .where(or(lt(sessions.expiresAt, now), and(isNotNull(sessions.revokedAt), lt(sessions.revokedAt, before))))
      .returning({ id: sessions.id })
    const t = await db.delete(authTokens)
      .where(or(lt(authTokens.expiresAt, now), and(isNotNull(authTokens.usedAt), lt(authTokens.usedAt, before))))
      .returning({ id: authTokens.id })
    const i = await db.delete(invitations).where(lt(invitations.expiresAt, now)).returning({ id: invitations.id })
    return { sessions: s.length, tokens: t.length, invitations: i.length }
  })
}

export const accountJobs = [
  defineJob({
    name: 'housekeeping.accounts-sweep',
    everyMs: 3600_000,
    async run({ deps }) { await sweepAccounts(deps.store) },
  }),
]
