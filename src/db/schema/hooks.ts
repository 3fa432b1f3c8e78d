import type { Cols } from '../columns'

/**
 * Customer webhooks (migration 0018_hooks; src/modules/hooks): a project's endpoints, one
 * delivery per (endpoint, event) that the delivery queue leases like the outbound queue, and the log of
 * every attempt.
 */
export function hookTables(c: Cols) {
  const webhookEndpoints = c.table('webhook_endpoints', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    url: c.text('url').notNull(),
    description: c.text('description'),
    /** Event names or patterns: `*`, `email.*`, `contact.*`, `segment.*`, or exact names. */
    eventTypes: c.json<string[]>('event_types').notNull(),
    enabled: c.bool('enabled').notNull(),
    /** The signing secret (`whsec_...`), encrypted with a key derived from the DKIM master key. */
    secret: c.text('secret').notNull(),
    /** The secret before the last rotation, still signing until `previousSecretExpiresAt`. */
    previousSecret: c.text('previous_secret'),
    previousSecretExpiresAt: c.ts('previous_secret_expires_at'),
    /** The first failure of the current run of failures; null after a success. */
    failingSince: c.ts('failing_since'),
    /** Why the service disabled the endpoint (410 Gone, five days of failures); null when a user did. */
    disabledReason: c.text('disabled_reason'),
    disabledAt: c.ts('disabled_at'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [c.index('webhook_endpoints_project_idx').on(t.projectId, t.createdAt)])

  const webhookDeliveries = c.table('webhook_deliveries', {
    /** Also the `webhook-id` header: stable across retries and replays, so receivers deduplicate by it. */
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    endpointId: c.text('endpoint_id').notNull(),
    eventId: c.text('event_id').notNull(),
    eventType: c.text('event_type').notNull(),
    /** The JSON body `{type, timestamp, data}`, fixed when the delivery is made: every attempt sends the same bytes. */
    body: c.text('body').notNull(),
    /** 'pending' | 'delivered' | 'failed' */
    status: c.text('status').notNull(),
    attempts: c.int('attempts').notNull(),
    /** When the next attempt is due (pending only); a claim moves it to the lease end. */
    nextAttemptAt: c.ts('next_attempt_at'),
    lockedBy: c.text('locked_by'),
    lockedUntil: c.ts('locked_until'),
    lastStatus: c.int('last_status'),
    lastError: c.text('last_error'),
    /** The start of the retry window (3 days); a replay starts a new one. */
    firstAttemptAt: c.ts('first_attempt_at'),
    deliveredAt: c.ts('delivered_at'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.uniqueIndex('webhook_deliveries_endpoint_event_idx').on(t.endpointId, t.eventId),
    c.index('webhook_deliveries_due_idx').on(t.nextAttemptAt),
    c.index('webhook_deliveries_endpoint_created_idx').on(t.endpointId, t.createdAt, t.id),
    c.index('webhook_deliveries_endpoint_status_idx').on(t.endpointId, t.status, t.createdAt),
  ])

  const webhookAttempts = c.table('webhook_attempts', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    endpointId: c.text('endpoint_id').notNull(),
    deliveryId: c.text('delivery_id').notNull(),
    attempt: c.int('attempt').notNull(),
    /** 'success' | 'http_error' | 'timeout' | 'connect' | 'blocked' | 'dns' | 'redirect' | 'invalid_url' */
    outcome: c.text('outcome').notNull(),
    /** The HTTP status, when an answer came. */
    status: c.int('status'),
    latencyMs: c.int('latency_ms').notNull(),
    /** The first KiB of the answer, or the error. */
    response: c.text('response'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [
    c.index('webhook_attempts_endpoint_idx').on(t.endpointId, t.createdAt, t.id),
    c.index('webhook_attempts_delivery_idx').on(t.deliveryId, t.createdAt),
  ])
  return { webhookEndpoints, webhookDeliveries, webhookAttempts }
}
