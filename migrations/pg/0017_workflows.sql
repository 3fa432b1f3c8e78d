-- Workflows (issue 12): the graph (workflows, steps, transitions) and its runs (executions, step executions).
-- The unique indexes on executions decide in the database what timing must not: one event record starts at
-- most one execution of a workflow (trigger_event_id), and the allowReentry rule (entry_key: 'once' for a
-- workflow a contact enters once ever, 'active' while a re-entrant execution runs or waits, null after).
CREATE TABLE workflows (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  trigger_type TEXT NOT NULL DEFAULT 'EVENT',
  trigger_event TEXT NOT NULL,
  enabled BOOLEAN NOT NULL DEFAULT false,
  allow_reentry BOOLEAN NOT NULL DEFAULT false,
  created_at TIMESTAMPTZ(3) NOT NULL,
  updated_at TIMESTAMPTZ(3) NOT NULL
);
CREATE INDEX workflows_project_created_idx ON workflows (project_id, created_at, id);
CREATE INDEX workflows_trigger_idx ON workflows (project_id, trigger_event) WHERE enabled = true;

CREATE TABLE workflow_steps (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  config JSONB NOT NULL,
  position JSONB NOT NULL,
  created_at TIMESTAMPTZ(3) NOT NULL,
  updated_at TIMESTAMPTZ(3) NOT NULL
);
CREATE INDEX workflow_steps_workflow_idx ON workflow_steps (workflow_id, created_at);

CREATE TABLE workflow_transitions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  from_step_id TEXT NOT NULL REFERENCES workflow_steps (id) ON DELETE CASCADE,
  to_step_id TEXT NOT NULL REFERENCES workflow_steps (id) ON DELETE CASCADE,
  branch TEXT,
  created_at TIMESTAMPTZ(3) NOT NULL
);
CREATE INDEX workflow_transitions_workflow_idx ON workflow_transitions (workflow_id);
CREATE INDEX workflow_transitions_from_idx ON workflow_transitions (from_step_id);

CREATE TABLE workflow_executions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL,
  status TEXT NOT NULL,
  current_step_id TEXT,
  wait_step_execution_id TEXT,
  wait_event TEXT,
  wait_until TIMESTAMPTZ(3),
  context JSONB NOT NULL,
  trigger_event_id TEXT,
  entry_key TEXT,
  version INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  exit_reason TEXT,
  started_at TIMESTAMPTZ(3) NOT NULL,
  updated_at TIMESTAMPTZ(3) NOT NULL,
  finished_at TIMESTAMPTZ(3)
);
CREATE UNIQUE INDEX workflow_executions_trigger_uq ON workflow_executions (workflow_id, trigger_event_id);
CREATE UNIQUE INDEX workflow_executions_entry_uq ON workflow_executions (workflow_id, contact_id, entry_key);
CREATE INDEX workflow_executions_list_idx ON workflow_executions (project_id, workflow_id, started_at, id);
CREATE INDEX workflow_executions_status_idx ON workflow_executions (workflow_id, status);
CREATE INDEX workflow_executions_due_idx ON workflow_executions (wait_until) WHERE status = 'WAITING';
CREATE INDEX workflow_executions_running_idx ON workflow_executions (updated_at) WHERE status = 'RUNNING';
CREATE INDEX workflow_executions_wait_idx ON workflow_executions (project_id, contact_id, wait_event) WHERE status = 'WAITING';

CREATE TABLE workflow_step_executions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL,
  execution_id TEXT NOT NULL REFERENCES workflow_executions (id) ON DELETE CASCADE,
  step_id TEXT NOT NULL,
  step_type TEXT NOT NULL,
  status TEXT NOT NULL,
  output JSONB,
  error TEXT,
  due_at TIMESTAMPTZ(3),
  started_at TIMESTAMPTZ(3) NOT NULL,
  finished_at TIMESTAMPTZ(3)
);
CREATE INDEX workflow_step_executions_execution_idx ON workflow_step_executions (execution_id, started_at);
