import type { Cols } from '../columns'

/** Dashboard sessions (revocable) and pending project invitations. */
export function accountTables(c: Cols) {
  /** One row per login; the session cookie's JWT names it (`sid`), so logout and password resets revoke it. */
  const sessions = c.table('sessions', {
    id: c.text('id').primaryKey(),
    userId: c.text('user_id').notNull(),
    createdAt: c.ts('created_at').notNull(),
    expiresAt: c.ts('expires_at').notNull(),
    revokedAt: c.ts('revoked_at'),
  }, (t) => [c.index('sessions_user_idx').on(t.userId)])

  /** An invitation to a project: a pending offer that becomes a membership only when the invitee accepts it. */
  const invitations = c.table('invitations', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    email: c.text('email').notNull(),
    role: c.text('role').notNull(),
    invitedBy: c.text('invited_by'),
    createdAt: c.ts('created_at').notNull(),
    expiresAt: c.ts('expires_at').notNull(),
    /** SHA-256 of the token in the emailed link; null for invitations made before it. */
    tokenHash: c.text('token_hash'),
  }, (t) => [
    c.uniqueIndex('invitations_project_email_uq').on(t.projectId, t.email), c.index('invitations_email_idx').on(t.email),
    c.uniqueIndex('invitations_token_hash_uq').on(t.tokenHash),
  ])

  return { sessions, invitations }
}
