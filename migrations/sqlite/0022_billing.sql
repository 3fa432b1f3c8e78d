-- Usage caps and consumption, project suspensions, uploaded images (issue 13).
CREATE TABLE billing_limits (
  project_id TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  transactional INTEGER,
  campaigns INTEGER,
  workflows INTEGER,
  inbound INTEGER,
  updated_at INTEGER NOT NULL
);

CREATE TABLE usage_counters (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  period TEXT NOT NULL,
  category TEXT NOT NULL,
  used INTEGER NOT NULL,
  PRIMARY KEY (project_id, period, category)
) WITHOUT ROWID;

CREATE TABLE project_suspensions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  reason TEXT NOT NULL,
  at INTEGER NOT NULL,
  lifted_at INTEGER,
  lifted_by TEXT
);
CREATE INDEX project_suspensions_project_idx ON project_suspensions (project_id, at);

CREATE TABLE uploads (
  name TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  content_type TEXT NOT NULL,
  size INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX uploads_project_idx ON uploads (project_id, created_at);
