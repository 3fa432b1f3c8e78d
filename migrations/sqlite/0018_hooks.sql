-- Customer webhooks (issue 19, src/modules/hooks): a project's endpoints with their signing secrets
-- (encrypted), one delivery per (endpoint, event) leased by the delivery queue (unique, so an event handled
-- twice makes one delivery), and every attempt of it (the delivery log).
CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  description TEXT,
  event_types TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_secret_expires_at INTEGER,
  failing_since INTEGER,
  disabled_reason TEXT,
  disabled_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_project_idx ON webhook_endpoints (project_id, created_at);

CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  locked_by TEXT,
  locked_until INTEGER,
  last_status INTEGER,
  last_error TEXT,
  first_attempt_at INTEGER,
  delivered_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_idx ON webhook_deliveries (endpoint_id, event_id);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint_created_idx ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_endpoint_status_idx ON webhook_deliveries (endpoint_id, status, created_at);

CREATE TABLE webhook_attempts (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  status INTEGER,
  latency_ms INTEGER NOT NULL,
  response TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, created_at, id);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, created_at);
