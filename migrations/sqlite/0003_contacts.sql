-- Contacts and events (issue 3): CSV uploads awaiting their import job, and list/search indexes.
CREATE TABLE contact_imports (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  filename TEXT NOT NULL,
  size INTEGER NOT NULL,
  content BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX contact_imports_project_idx ON contact_imports (project_id);

-- GET /contacts?subscribed=... sorted by creation time.
CREATE INDEX contacts_project_subscribed_created_idx ON contacts (project_id, subscribed, created_at, id);
-- GET /events and GET /events/contact/:id pages keyed on (created_at, id).
CREATE INDEX events_project_created_id_idx ON events (project_id, created_at, id);
