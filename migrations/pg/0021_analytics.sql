-- Analytics (issue 13): hourly counters rolled up from the events by the analytics.rollup job.
CREATE TABLE analytics_hourly (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  campaign_id TEXT NOT NULL,
  hour TIMESTAMPTZ(3) NOT NULL,
  metric TEXT NOT NULL,
  value BIGINT NOT NULL,
  PRIMARY KEY (project_id, campaign_id, hour, metric)
);
CREATE INDEX analytics_hourly_metric_idx ON analytics_hourly (project_id, metric, hour) INCLUDE (campaign_id, value);
CREATE INDEX analytics_hourly_hour_idx ON analytics_hourly (hour);

CREATE TABLE analytics_rollups (
  name TEXT PRIMARY KEY,
  rolled_until TIMESTAMPTZ(3) NOT NULL,
  updated_at TIMESTAMPTZ(3) NOT NULL
);

-- The activity feed reads events newest first by (created_at, id) (keyset pages), and by email (one email's
-- story, a campaign's events): the id joins the time index, and the email ids of email events get one.
DROP INDEX events_project_created_idx;
CREATE INDEX events_project_created_idx ON events (project_id, created_at, id);
CREATE INDEX events_email_created_idx ON events (email_id, created_at) WHERE email_id IS NOT NULL;
