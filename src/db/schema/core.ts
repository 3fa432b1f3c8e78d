import type { Cols } from '../columns'

/** Accounts, tenancy, keys, idempotency, the job queue, the capture store, contacts and events. */
export function coreTables(c: Cols) {
  const users = c.table('users', {
    id: c.text('id').primaryKey(),
    email: c.text('email').notNull(),
    name: c.text('name'),
    passwordHash: c.text('password_hash').notNull(),
    emailVerifiedAt: c.ts('email_verified_at'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [c.uniqueIndex('users_email_uq').on(t.email)])

  const projects = c.table('projects', {
    id: c.text('id').primaryKey(),
    name: c.text('name').notNull(),
    publicKey: c.text('public_key').notNull(),
    /** SHA-256 hex of the secret key; the key itself is shown once. */
    secretKeyHash: c.text('secret_key_hash').notNull(),
    disabled: c.bool('disabled').notNull(),
    trackingEnabled: c.bool('tracking_enabled').notNull(),
    settings: c.json<Record<string, unknown>>('settings').notNull(),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [c.uniqueIndex('projects_public_key_uq').on(t.publicKey), c.uniqueIndex('projects_secret_key_hash_uq').on(t.secretKeyHash)])

  const members = c.table('members', {
    projectId: c.text('project_id').notNull(),
    userId: c.text('user_id').notNull(),
    role: c.text('role').notNull(),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.projectId, t.userId] }), c.index('members_user_idx').on(t.userId)])

  /** Single-use tokens (email verification, password reset, invitations), stored hashed. */
  const authTokens = c.table('auth_tokens', {
    id: c.text('id').primaryKey(),
    userId: c.text('user_id').notNull(),
    kind: c.text('kind').notNull(),
    tokenHash: c.text('token_hash').notNull(),
    expiresAt: c.ts('expires_at').notNull(),
    usedAt: c.ts('used_at'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.uniqueIndex('auth_tokens_hash_uq').on(t.tokenHash)])

  const idempotencyKeys = c.table('idempotency_keys', {
    projectId: c.text('project_id').notNull(),
    key: c.text('key').notNull(),
    method: c.text('method').notNull(),
    path: c.text('path').notNull(),
    requestHash: c.text('request_hash').notNull(),
    /** null while the first request is still being processed. */
    statusCode: c.int('status_code'),
    createdAt: c.ts('created_at').notNull(),
    expiresAt: c.ts('expires_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.projectId, t.key] }), c.index('idempotency_expires_idx').on(t.expiresAt)])

  /** The durable job queue shared by every kind of background work. */
  const jobs = c.table('jobs', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id'),
    name: c.text('name').notNull(),
    /** Singleton key: at most one queued/running job per (name, unique_key). */
    uniqueKey: c.text('unique_key'),
    payload: c.json<Record<string, unknown>>('payload').notNull(),
    status: c.text('status').notNull(),
    attempts: c.int('attempts').notNull(),
    maxAttempts: c.int('max_attempts').notNull(),
    runAt: c.ts('run_at').notNull(),
    lockedUntil: c.ts('locked_until'),
    lockedBy: c.text('locked_by'),
    lastError: c.text('last_error'),
    total: c.int('total').notNull(),
    processed: c.int('processed').notNull(),
    result: c.json<Record<string, unknown>>('result'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
    finishedAt: c.ts('finished_at'),
  }, (t) => [
    c.index('jobs_ready_idx').on(t.status, t.runAt),
    c.index('jobs_project_idx').on(t.projectId, t.name, t.createdAt),
  ])

  /** Mail captured instead of delivered (MAILCTL_OUTBOUND=capture, and system mail before delivery exists). */
  const mailCapture = c.table('mail_capture', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id'),
    kind: c.text('kind').notNull(),
    fromAddress: c.text('from_address').notNull(),
    toAddress: c.text('to_address').notNull(),
    subject: c.text('subject').notNull(),
    text: c.text('text'),
    html: c.text('html'),
    raw: c.text('raw'),
    meta: c.json<Record<string, unknown>>('meta').notNull(),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.index('mail_capture_created_idx').on(t.createdAt)])

  const contacts = c.table('contacts', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    email: c.text('email').notNull(),
    subscribed: c.bool('subscribed').notNull(),
    data: c.json<Record<string, unknown>>('data').notNull(),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.uniqueIndex('contacts_project_email_uq').on(t.projectId, t.email),
    c.index('contacts_project_created_idx').on(t.projectId, t.createdAt, t.id),
  ])

  /** One event stream: tracked events and the service's own (email.*, contact.*, segment.*). */
  const events = c.table('events', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    contactId: c.text('contact_id'),
    name: c.text('name').notNull(),
    data: c.json<Record<string, unknown>>('data').notNull(),
    emailId: c.text('email_id'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [
    c.index('events_project_name_created_idx').on(t.projectId, t.name, t.createdAt, t.id),
    c.index('events_project_created_idx').on(t.projectId, t.createdAt, t.id),
    c.index('events_email_created_idx').on(t.emailId, t.createdAt),
    c.index('events_contact_created_idx').on(t.contactId, t.createdAt, t.id),
    // Also (migration 0024, not mapped here so that no record of an event grows a field): campaign_id, the
    // email's campaign set by events/repo.ts insertEvents, and its index events_campaign_name_created_idx (campaign_id, name, created_at, id).
  ])

  return { users, projects, members, authTokens, idempotencyKeys, jobs, mailCapture, contacts, events }
}
