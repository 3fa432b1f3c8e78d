-- Campaigns, second part (issue 11).
-- Counters kept as the events happen: each is added to once per email (the first delivery, bounce,
-- complaint; every final outcome of the outbound queue in `settled`), by the transaction that records it.
ALTER TABLE campaign_stats ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_stats ADD COLUMN delivered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_stats ADD COLUMN bounced INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_stats ADD COLUMN complained INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_stats ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_stats ADD COLUMN settled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_stats ADD COLUMN unsubscribed INTEGER NOT NULL DEFAULT 0;

-- Counters of the campaigns sent before this migration, from their emails' statuses.
INSERT INTO campaign_stats (project_id, campaign_id, opens, unique_opens, clicks, unique_clicks, updated_at, sent, delivered, bounced, complained, failed, settled)
SELECT project_id, campaign_id, 0, 0, 0, 0, MAX(updated_at),
  SUM(CASE WHEN status IN ('SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'COMPLAINED') THEN 1 ELSE 0 END),
  SUM(CASE WHEN delivered_at IS NOT NULL THEN 1 ELSE 0 END),
  SUM(CASE WHEN status = 'BOUNCED' THEN 1 ELSE 0 END),
  SUM(CASE WHEN complained_at IS NOT NULL THEN 1 ELSE 0 END),
  SUM(CASE WHEN status = 'FAILED' THEN 1 ELSE 0 END),
  SUM(CASE WHEN status IN ('PENDING', 'SENDING') THEN 0 ELSE 1 END)
FROM emails WHERE campaign_id IS NOT NULL GROUP BY project_id, campaign_id
ON CONFLICT (project_id, campaign_id) DO UPDATE SET sent = excluded.sent, delivered = excluded.delivered, bounced = excluded.bounced,
  complained = excluded.complained, failed = excluded.failed, settled = excluded.settled;

-- Unsubscribes through a campaign's link or List-Unsubscribe header: one row per contact and campaign.
CREATE TABLE campaign_unsubscribes (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  campaign_id TEXT NOT NULL,
  contact_id TEXT NOT NULL,
  email_id TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (campaign_id, contact_id)
);
CREATE INDEX campaign_unsubscribes_project_idx ON campaign_unsubscribes (project_id, created_at);

-- The project's sending rate for campaigns: the next free moment of its campaign mail (run_at of the
-- outbound queue), moved forward by each fan-out batch.
CREATE TABLE send_pacing (
  project_id TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  next_at INTEGER NOT NULL
);
