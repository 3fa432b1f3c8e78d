import type { Store } from '../../db/client'
import { defineJob } from '../../jobs/queue'
import { sweepInvitations } from '../members/service'
import * as repo from './repo'

/** Used or revoked rows are kept this long after use (for support questions), then deleted. */
const KEEP_MS = 24 * 3600_000

/** Deletes expired or long-used sessions, tokens and invitations; returns how many rows of each went. */
export async function sweepAccounts(store: Store, now: Date): Promise<{ sessions: number; tokens: number; invitations: number }> {
  const before = new Date(now.getTime() - KEEP_MS)
  return store.tx(async (db) => ({
    sessions: await repo.deleteStaleSessions(store, db, now, before),
    tokens: await repo.deleteStaleTokens(store, db, now, before),
    // Invitations are the members module's (src/modules/members).
    invitations: await sweepInvitations(store, db, now),
  }))
}

export const accountJobs = [
  defineJob({
    name: 'housekeeping.accounts-sweep',
    everyMs: 3600_000,
    async run({ deps }) { await sweepAccounts(deps.store, deps.clock.date()) },
  }),
]
