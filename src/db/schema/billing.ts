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

  return { billingLimits, usageCounters, projectSuspensions, uploads }
}
