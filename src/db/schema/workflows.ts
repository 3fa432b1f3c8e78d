import type { Cols } from '../columns'

/**
 * Workflows: the graph (a workflow, its steps and the transitions between them) and its runs
 * (executions and one record per step execution). Two unique indexes decide what timing must not:
 * `(workflow_id, trigger_event_id)`, so one event record starts at most one execution of a workflow on any
 * number of nodes, and `(workflow_id, contact_id, entry_key)`, the allowReentry rule (entry_key 'once' for a
 * workflow entered once ever, 'active' while a re-entrant execution runs or waits, null once it ended).
 */
export function workflowTables(c: Cols) {
  const workflows = c.table('workflows', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    name: c.text('name').notNull(),
    description: c.text('description'),
    /** EVENT (the only trigger type) */
    triggerType: c.text('trigger_type').notNull(),
    /** triggerConfig.eventName: the event that starts an execution. */
    triggerEvent: c.text('trigger_event').notNull(),
    enabled: c.bool('enabled').notNull(),
    allowReentry: c.bool('allow_reentry').notNull(),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.index('workflows_project_created_idx').on(t.projectId, t.createdAt, t.id),
    c.index('workflows_trigger_idx').on(t.projectId, t.triggerEvent),
  ])

  const workflowSteps = c.table('workflow_steps', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    workflowId: c.text('workflow_id').notNull(),
    /** TRIGGER | SEND_EMAIL | DELAY | WAIT_FOR_EVENT | CONDITION | WEBHOOK | UPDATE_CONTACT | EXIT */
    type: c.text('type').notNull(),
    name: c.text('name').notNull(),
    config: c.json<Record<string, unknown>>('config').notNull(),
    position: c.json<{ x: number; y: number }>('position').notNull(),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.index('workflow_steps_workflow_idx').on(t.workflowId, t.createdAt),
  ])

  const workflowTransitions = c.table('workflow_transitions', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    workflowId: c.text('workflow_id').notNull(),
    fromStepId: c.text('from_step_id').notNull(),
    toStepId: c.text('to_step_id').notNull(),
    /** yes | no (CONDITION), event | timeout (WAIT_FOR_EVENT), null otherwise */
    branch: c.text('branch'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [
    c.index('workflow_transitions_workflow_idx').on(t.workflowId),
    c.index('workflow_transitions_from_idx').on(t.fromStepId),
  ])

  const workflowExecutions = c.table('workflow_executions', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    workflowId: c.text('workflow_id').notNull(),
    contactId: c.text('contact_id').notNull(),
    /** RUNNING | WAITING | COMPLETED | EXITED | FAILED | CANCELLED */
    status: c.text('status').notNull(),
    /** The step to run next (RUNNING) or being waited on (WAITING); null once ended. */
    currentStepId: c.text('current_step_id'),
    /** The step execution a WAITING execution waits on (DELAY or WAIT_FOR_EVENT). */
    waitStepExecutionId: c.text('wait_step_execution_id'),
    /** WAITING on WAIT_FOR_EVENT: the event name of the contact that resumes it. */
    waitEvent: c.text('wait_event'),
    /** WAITING: when the DELAY is due, or the WAIT_FOR_EVENT times out (null: no timeout). */
    waitUntil: c.ts('wait_until'),
    context: c.json<Record<string, unknown>>('context').notNull(),
    triggerEventId: c.text('trigger_event_id'),
    entryKey: c.text('entry_key'),
    /** Bumped by every state change; a change is written only at the version it read (no two runners). */
    version: c.int('version').notNull(),
    error: c.text('error'),
    exitReason: c.text('exit_reason'),
    startedAt: c.ts('started_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
    finishedAt: c.ts('finished_at'),
  }, (t) => [
    c.uniqueIndex('workflow_executions_trigger_uq').on(t.workflowId, t.triggerEventId),
    c.uniqueIndex('workflow_executions_entry_uq').on(t.workflowId, t.contactId, t.entryKey),
    c.index('workflow_executions_list_idx').on(t.projectId, t.workflowId, t.startedAt, t.id),
    c.index('workflow_executions_status_idx').on(t.workflowId, t.status),
    c.index('workflow_executions_due_idx').on(t.waitUntil),
    c.index('workflow_executions_running_idx').on(t.updatedAt),
    c.index('workflow_executions_wait_idx').on(t.projectId, t.contactId, t.waitEvent),
  ])

  const workflowStepExecutions = c.table('workflow_step_executions', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    executionId: c.text('execution_id').notNull(),
    stepId: c.text('step_id').notNull(),
    stepType: c.text('step_type').notNull(),
    /** PENDING | SCHEDULED | WAITING | RUNNING | COMPLETED | SKIPPED | FAILED */
    status: c.text('status').notNull(),
    output: c.json<Record<string, unknown>>('output'),
    error: c.text('error'),
    /** DELAY: when it is due; WAIT_FOR_EVENT: when it times out. */
    dueAt: c.ts('due_at'),
    startedAt: c.ts('started_at').notNull(),
    finishedAt: c.ts('finished_at'),
  }, (t) => [
    c.index('workflow_step_executions_execution_idx').on(t.executionId, t.startedAt),
  ])

  return { workflows, workflowSteps, workflowTransitions, workflowExecutions, workflowStepExecutions }
}
