CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  name TEXT,
  password_hash TEXT NOT NULL,
  email_verified_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX users_email_uq ON users (email);

CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  public_key TEXT NOT NULL,
  secret_key_hash TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0,
  tracking_enabled INTEGER NOT NULL DEFAULT 1,
  settings TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX projects_public_key_uq ON projects (public_key);
CREATE UNIQUE INDEX projects_secret_key_hash_uq ON projects (secret_key_hash);

CREATE TABLE members (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX members_user_idx ON members (user_id);

CREATE TABLE auth_tokens (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX auth_tokens_hash_uq ON auth_tokens (token_hash);

CREATE TABLE idempotency_keys (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status_code INTEGER,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, key)
);
CREATE INDEX idempotency_expires_idx ON idempotency_keys (expires_at);

CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  project_id TEXT REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  unique_key TEXT,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  locked_until INTEGER,
  locked_by TEXT,
  last_error TEXT,
  total INTEGER NOT NULL DEFAULT 0,
  processed INTEGER NOT NULL DEFAULT 0,
  result TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX jobs_ready_idx ON jobs (status, run_at);
CREATE INDEX jobs_project_idx ON jobs (project_id, name, created_at);
CREATE UNIQUE INDEX jobs_unique_active_uq ON jobs (name, unique_key) WHERE unique_key IS NOT NULL AND status IN ('queued', 'running');

CREATE TABLE mail_capture (
  id TEXT PRIMARY KEY,
  project_id TEXT REFERENCES projects (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  from_address TEXT NOT NULL,
  to_address TEXT NOT NULL,
  subject TEXT NOT NULL,
  text TEXT,
  html TEXT,
  raw TEXT,
  meta TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE INDEX mail_capture_created_idx ON mail_capture (created_at);

CREATE TABLE contacts (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  subscribed INTEGER NOT NULL,
  data TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX contacts_project_email_uq ON contacts (project_id, email);
CREATE INDEX contacts_project_created_idx ON contacts (project_id, created_at, id);

CREATE TABLE events (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  contact_id TEXT REFERENCES contacts (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '{}',
  email_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX events_project_name_created_idx ON events (project_id, name, created_at);
CREATE INDEX events_project_created_idx ON events (project_id, created_at);
CREATE INDEX events_contact_created_idx ON events (contact_id, created_at);
