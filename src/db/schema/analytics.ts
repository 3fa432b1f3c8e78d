import type { Cols } from '../columns'

/**
 * Analytics counters (migration 0021_analytics; src/modules/analytics/): the events of each UTC hour, counted
 * once by the `analytics.rollup` job, so the analytics endpoints read a few thousand small rows instead of
 * scanning the project's emails and events.
 */
export function analyticsTables(c: Cols) {
  /**
   * One counter per (project, campaign, hour, metric). `campaign_id` '' holds the project's totals (all of its
   * mail, campaign or not, and its other events); a campaign's rows hold its share again under its id.
   * Metrics: sent, delivered, opened, unique_opened, clicked, unique_clicked, bounced, hard_bounced,
   * complained, unsubscribed, failed, received, and `event:<name>` for every other event name.
   */
  const analyticsHourly = c.table('analytics_hourly', {
    projectId: c.text('project_id').notNull(),
    campaignId: c.text('campaign_id').notNull(),
    /** The start of the UTC hour. */
    hour: c.ts('hour').notNull(),
    metric: c.text('metric').notNull(),
    value: c.bigint('value').notNull(),
  }, (t) => [
    c.primaryKey({ columns: [t.projectId, t.campaignId, t.hour, t.metric] }),
    c.index('analytics_hourly_metric_idx').on(t.projectId, t.metric, t.hour, t.value),
    c.index('analytics_hourly_hour_idx').on(t.hour),
  ])

  /** How far the rollup went: every hour before `rolled_until` is in `analytics_hourly` (one row, name 'hourly'). */
  const analyticsRollups = c.table('analytics_rollups', {
    name: c.text('name').primaryKey(),
    rolledUntil: c.ts('rolled_until').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  })
  return { analyticsHourly, analyticsRollups }
}
