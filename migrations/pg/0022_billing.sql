-- Usage caps and consumption, project suspensions, uploaded images (issue 13).
CREATE TABLE billing_limits (
  project_id TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  transactional BIGINT,
  campaigns BIGINT,
  workflows BIGINT,
  inbound BIGINT,
  updated_at TIMESTAMPTZ(3) NOT NULL
);

CREATE TABLE usage_counters (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  period TEXT NOT NULL,
  category TEXT NOT NULL,
  used BIGINT NOT NULL,
  PRIMARY KEY (project_id, period, category)
);

CREATE TABLE project_suspensions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  reason TEXT NOT NULL,
  at TIMESTAMPTZ(3) NOT NULL,
  lifted_at TIMESTAMPTZ(3),
  lifted_by TEXT
);
CREATE INDEX project_suspensions_project_idx ON project_suspensions (project_id, at);

CREATE TABLE uploads (
  name TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  content_type TEXT NOT NULL,
  size INTEGER NOT NULL,
  created_at TIMESTAMPTZ(3) NOT NULL
);
CREATE INDEX uploads_project_idx ON uploads (project_id, created_at);
