import type { Cols } from '../columns'

/** OAuth sign-in (migration 0020_oauth; src/modules/auth/oauth.ts). */
export function oauthTables(c: Cols) {
  /**
   * A provider account (GitHub, Google) linked to a user, by the provider's own stable id: once linked, it
   * signs in as that user even if its email changes at the provider. `email` is the verified address it
   * had when last used.
   */
  const oauthAccounts = c.table('oauth_accounts', {
    provider: c.text('provider').notNull(),
    providerUserId: c.text('provider_user_id').notNull(),
    userId: c.text('user_id').notNull(),
    email: c.text('email').notNull(),
    createdAt: c.ts('created_at').notNull(),
    lastLoginAt: c.ts('last_login_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.provider, t.providerUserId] }), c.index('oauth_accounts_user_idx').on(t.userId)])

  return { oauthAccounts }
}
