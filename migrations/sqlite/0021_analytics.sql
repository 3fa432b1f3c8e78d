-- Analytics (issue 13): hourly counters rolled up from the events by the analytics.rollup job.
CREATE TABLE analytics_hourly (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  campaign_id TEXT NOT NULL,
  hour INTEGER NOT NULL,
  metric TEXT NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY (project_id, campaign_id, hour, metric)
) WITHOUT ROWID;
-- Covering (a secondary index of a WITHOUT ROWID table holds the primary key's columns): rankings read no table rows.
CREATE INDEX analytics_hourly_metric_idx ON analytics_hourly (project_id, metric, hour, value);
CREATE INDEX analytics_hourly_hour_idx ON analytics_hourly (hour);

CREATE TABLE analytics_rollups (
  name TEXT PRIMARY KEY,
  rolled_until INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- The activity feed reads events newest first by (created_at, id) (keyset pages), and by email (one email's
-- story, a campaign's events): the id joins the time index, and the email ids of email events get one.
DROP INDEX events_project_created_idx;
CREATE INDEX events_project_created_idx ON events (project_id, created_at, id);
CREATE INDEX events_email_created_idx ON events (email_id, created_at) WHERE email_id IS NOT NULL;
