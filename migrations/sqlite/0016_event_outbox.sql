-- The events' outbox (src/modules/events/outbox.ts): what committed events still owe their consumers.
-- A row is written in the transaction that appends the events (one per transaction and project, up to
-- 500 event ids). consumer NULL: every consumer; a name: that consumer only (a retry, with backoff).
-- Rows are claimed one project at a time (leased like jobs), and deleted once delivered.
CREATE TABLE event_outbox (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  consumer TEXT,
  event_ids TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  due_at INTEGER NOT NULL,
  locked_by TEXT,
  locked_until INTEGER,
  last_error TEXT,
  failed_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX event_outbox_project_idx ON event_outbox (project_id, id);
CREATE INDEX event_outbox_locked_idx ON event_outbox (locked_until) WHERE locked_until IS NOT NULL;
