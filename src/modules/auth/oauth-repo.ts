import { and, eq } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

/** Provider accounts linked to users (table oauth_accounts). Users are not tenant data: no project id here. */
export type OAuthAccountRow = typeof import('../../db/schema').pgSchema.oauthAccounts.$inferSelect

export async function linked(store: Store, db: Db, provider: string, providerUserId: string): Promise<OAuthAccountRow | undefined> {
  const { oauthAccounts } = store.t
  const [row] = await db.select().from(oauthAccounts)
    .where(and(eq(oauthAccounts.provider, provider), eq(oauthAccounts.providerUserId, providerUserId))).limit(1)
  return row
}

/** Links the provider account to the user; a link made meanwhile by a concurrent sign-in is kept as it is. */
export async function link(store: Store, db: Db, row: OAuthAccountRow): Promise<void> {
  await db.insert(store.t.oauthAccounts).values(row).onConflictDoNothing()
}

export async function touch(store: Store, db: Db, provider: string, providerUserId: string, email: string, now: Date): Promise<void> {
  const { oauthAccounts } = store.t
  await db.update(oauthAccounts).set({ email, lastLoginAt: now })
    .where(and(eq(oauthAccounts.provider, provider), eq(oauthAccounts.providerUserId, providerUserId)))
}
