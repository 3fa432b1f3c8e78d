-- A/B tests and local-time sends of campaigns (issue 36, items 5 and 6; docs/architecture.md, Campaigns).
-- ab_test: the variants and rules as saved; ab_state: the draw of the test group (seed and cuts), the
-- phase (TEST, WAITING, WINNER), when the winner is decided and which variant won. send_at: the local
-- date and time of a send in each recipient's time zone; wave_at: the wave the fan-out is at.
ALTER TABLE campaigns ADD COLUMN ab_test JSONB;
ALTER TABLE campaigns ADD COLUMN ab_state JSONB;
ALTER TABLE campaigns ADD COLUMN send_at JSONB;
ALTER TABLE campaigns ADD COLUMN wave_at TIMESTAMPTZ(3);

-- The contacts an A/B test group or a local-time wave has handled (sent or skipped), written in the
-- batch's transaction: the winner's send and later waves leave them out, and the stats per variant join
-- their emails. Plain campaigns write nothing here.
CREATE TABLE campaign_recipients (
  campaign_id TEXT NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL,
  email_id TEXT,
  variant INTEGER,
  PRIMARY KEY (campaign_id, contact_id)
);
