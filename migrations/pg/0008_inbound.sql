-- What comes back: inbound mail stored before the SMTP 250, open/click counters, notification receipts.
CREATE TABLE inbound_messages (
  id TEXT PRIMARY KEY,
  project_id TEXT REFERENCES projects (id) ON DELETE CASCADE,
  mail_from TEXT NOT NULL,
  rcpt_to JSONB NOT NULL DEFAULT '[]',
  remote_address TEXT,
  helo TEXT,
  size INTEGER NOT NULL,
  raw BYTEA NOT NULL,
  status TEXT NOT NULL,
  kind TEXT,
  email_id TEXT,
  detail TEXT,
  received_at TIMESTAMPTZ(3) NOT NULL,
  processed_at TIMESTAMPTZ(3)
);
CREATE INDEX inbound_messages_project_received_idx ON inbound_messages (project_id, received_at);
CREATE INDEX inbound_messages_status_received_idx ON inbound_messages (status, received_at);

CREATE TABLE email_stats (
  email_id TEXT PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  campaign_id TEXT,
  opens INTEGER NOT NULL DEFAULT 0,
  clicks INTEGER NOT NULL DEFAULT 0,
  first_open_at TIMESTAMPTZ(3),
  last_open_at TIMESTAMPTZ(3),
  first_click_at TIMESTAMPTZ(3),
  last_click_at TIMESTAMPTZ(3)
);
CREATE INDEX email_stats_campaign_idx ON email_stats (campaign_id) WHERE campaign_id IS NOT NULL;

CREATE TABLE campaign_stats (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  campaign_id TEXT NOT NULL,
  opens INTEGER NOT NULL DEFAULT 0,
  unique_opens INTEGER NOT NULL DEFAULT 0,
  clicks INTEGER NOT NULL DEFAULT 0,
  unique_clicks INTEGER NOT NULL DEFAULT 0,
  updated_at TIMESTAMPTZ(3) NOT NULL,
  PRIMARY KEY (project_id, campaign_id)
);

CREATE TABLE notification_receipts (
  source TEXT NOT NULL,
  message_id TEXT NOT NULL,
  received_at TIMESTAMPTZ(3) NOT NULL,
  PRIMARY KEY (source, message_id)
);
CREATE INDEX notification_receipts_received_idx ON notification_receipts (received_at);
