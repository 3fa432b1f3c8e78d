import type { Cols } from '../columns'

/**
 * Usage caps and consumption (migration 0022_billing; src/modules/billing/), project suspensions
 * (src/modules/security/) and uploaded images (src/modules/uploads/).
 */
export function billingTables(c: Cols) {
  /** Monthly caps per category, in emails; null: no cap. No row: no caps at all. */
  const billingLimits = c.table('billing_limits', {
    projectId: c.text('project_id').primaryKey(),
    transactional: c.bigint('transactional'),
    campaigns: c.bigint('campaigns'),
    workflows: c.bigint('workflows'),
    inbound: c.bigint('inbound'),
    updatedAt: c.ts('updated_at').notNull(),
  })

  /**
   * Emails accepted per project, calendar month (UTC, 'YYYY-MM') and category, counted in the transaction
   * that queues them (or, for inbound, that records the message), so the count and the cap check are exact.
   */
  const usageCounters = c.table('usage_counters', {
    projectId: c.text('project_id').notNull(),
    period: c.text('period').notNull(),
    /** transactional | campaigns | workflows | inbound */
    category: c.text('category').notNull(),
    used: c.bigint('used').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.projectId, t.period, t.category] })])

  /** A project's suspensions: automatic (bounce or complaint rate) or by an operator; lifted by an owner or the CLI. */
  const projectSuspensions = c.table('project_suspensions', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    reason: c.text('reason').notNull(),
    at: c.ts('at').notNull(),
    liftedAt: c.ts('lifted_at'),
    /** Who lifted it: 'user:<id>' or 'cli'. */
    liftedBy: c.text('lifted_by'),
  }, (t) => [c.index('project_suspensions_project_idx').on(t.projectId, t.at)])

  /** Uploaded images: the file lives under <data dir>/uploads/<name> (or the bucket); `name` is random and unguessable. */
  const uploads = c.table('uploads', {
    name: c.text('name').primaryKey(),
    projectId: c.text('project_id').notNull(),
    contentType: c.text('content_type').notNull(),
    size: c.int('size').notNull(),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.index('uploads_project_idx').on(t.projectId, t.createdAt)])

  /**
   * A project's customer and subscription at the payment provider (migration 0023_billing_provider;
   * src/modules/billing/provider.ts), as its webhook reports them. `eventAt` is the creation time of the
   * last provider event applied, so an older event delivered late changes nothing.
   */
  const billingSubscriptions = c.table('billing_subscriptions', {
    projectId: c.text('project_id').primaryKey(),
    customerId: c.text('customer_id'),
    subscriptionId: c.text('subscription_id'),
    /** The provider's subscription status: active, trialing, past_due, unpaid, canceled, incomplete, ... */
    status: c.text('status').notNull(),
    priceId: c.text('price_id'),
    currentPeriodEnd: c.ts('current_period_end'),
    cancelAtPeriodEnd: c.bool('cancel_at_period_end').notNull(),
    lastInvoicePaidAt: c.ts('last_invoice_paid_at'),
    eventAt: c.ts('event_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [c.index('billing_subscriptions_customer_idx').on(t.customerId)])

  /** Provider webhook events already handled, by the provider's event id: a redelivery changes nothing. */
  const billingEvents = c.table('billing_events', {
    id: c.text('id').primaryKey(),
    type: c.text('type').notNull(),
    projectId: c.text('project_id'),
    /** applied | ignored (not about a project of this server, or a type not handled) */
    outcome: c.text('outcome').notNull(),
    receivedAt: c.ts('received_at').notNull(),
  })

  return { billingLimits, usageCounters, projectSuspensions, uploads, billingSubscriptions, billingEvents }
}
