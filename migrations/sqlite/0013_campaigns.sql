-- Campaigns (issue 11): one message to an audience, sent now or at a set time. The fan-out job walks the
-- audience in contact-id order and records its checkpoint (last_contact_id) and counters in the same
-- transaction that queues a batch's emails, so a restart resumes where the last committed batch ended.
CREATE TABLE campaigns (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  from_email TEXT NOT NULL,
  from_name TEXT,
  reply_to TEXT,
  type TEXT NOT NULL DEFAULT 'MARKETING',
  audience_type TEXT NOT NULL,
  segment_id TEXT,
  audience_condition TEXT,
  status TEXT NOT NULL DEFAULT 'DRAFT',
  scheduled_for INTEGER,
  started_at INTEGER,
  finished_at INTEGER,
  sent_at INTEGER,
  cancelled_at INTEGER,
  last_contact_id TEXT,
  total_recipients INTEGER NOT NULL DEFAULT 0,
  sent_count INTEGER NOT NULL DEFAULT 0,
  skipped_unsubscribed INTEGER NOT NULL DEFAULT 0,
  skipped_suppressed INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX campaigns_project_created_idx ON campaigns (project_id, created_at, id);
CREATE INDEX campaigns_project_updated_idx ON campaigns (project_id, updated_at, id);
CREATE INDEX campaigns_project_status_idx ON campaigns (project_id, status, created_at);
CREATE INDEX campaigns_segment_idx ON campaigns (segment_id) WHERE segment_id IS NOT NULL;
CREATE INDEX campaigns_due_idx ON campaigns (scheduled_for) WHERE status = 'SCHEDULED';
