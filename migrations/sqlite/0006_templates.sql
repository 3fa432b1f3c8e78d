CREATE TABLE templates (
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
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX templates_project_created_idx ON templates (project_id, created_at, id);
CREATE INDEX templates_project_updated_idx ON templates (project_id, updated_at, id);
CREATE INDEX templates_project_type_idx ON templates (project_id, type, created_at);
