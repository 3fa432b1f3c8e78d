-- Sending: the email record, the outbound queue and the suppression list.
CREATE TABLE emails (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  contact_id TEXT REFERENCES contacts (id) ON DELETE SET NULL,
  template_id TEXT,
  campaign_id TEXT,
  source_type TEXT NOT NULL,
  source_id TEXT,
  type TEXT NOT NULL,
  domain_id TEXT,
  message_id TEXT NOT NULL,
  from_address TEXT NOT NULL,
  from_name TEXT,
  to_address TEXT NOT NULL,
  to_name TEXT,
  reply_to TEXT,
  subject TEXT NOT NULL,
  list_unsubscribe INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_reply TEXT,
  delivered_to TEXT,
  bounce_type TEXT,
  size INTEGER,
  sent_at INTEGER,
  delivered_at INTEGER,
  opened_at INTEGER,
  clicked_at INTEGER,
  bounced_at INTEGER,
  complained_at INTEGER,
  failed_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX emails_project_created_idx ON emails (project_id, created_at, id);
CREATE INDEX emails_contact_idx ON emails (contact_id, created_at);
CREATE INDEX emails_campaign_idx ON emails (campaign_id, status) WHERE campaign_id IS NOT NULL;
CREATE INDEX emails_message_id_idx ON emails (message_id);

CREATE TABLE email_contents (
  email_id TEXT PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
  html TEXT,
  text TEXT,
  headers TEXT NOT NULL DEFAULT '{}',
  attachments TEXT
);

CREATE TABLE outbound_queue (
  email_id TEXT PRIMARY KEY REFERENCES emails (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  domain TEXT NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  run_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  locked_by TEXT,
  locked_until INTEGER,
  last_error TEXT,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX outbound_queue_due_idx ON outbound_queue (priority, run_at);

CREATE TABLE suppressions (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  reason TEXT NOT NULL,
  email_id TEXT,
  detail TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, email)
);
CREATE INDEX suppressions_project_created_idx ON suppressions (project_id, created_at);
