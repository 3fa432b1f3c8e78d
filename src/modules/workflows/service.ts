import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { badRequest, conflict, invalidField, notFound, validation } from '../../errors'
import { listFilterFields } from '../../filters'
import { decodeTimeCursor, encodeTimeCursor } from '../cursor'
import { normalizeEmail } from '../contacts/data'
import { cancelExecution, continueExecution, createExecution } from './engine'
import {
  DEFAULT_PAGE_SIZE, EXECUTION_STATUSES, MAX_PAGE_SIZE,
  type AddStep, type AddTransition, type CreateWorkflow, type Execution, type ExecutionList, type ListExecutionsQuery,
  type ListWorkflowsQuery, type StartExecution, type Step, type StepExecution, type StepStats, type StepType, type Transition,
  type UpdateStep, type UpdateWorkflow, type Workflow, type WorkflowList, type WorkflowSummary,
} from './model'
import * as repo from './repo'
import { branchesOf, checkStepConfig, graphFaults } from './validate'

/** Workflow verbs, shared by the HTTP routes, the CLI and the engine's jobs. */

const iso = (d: Date | null) => (d ? d.toISOString() : null)

const DEFAULT_NAMES: Record<StepType, string> = {
  TRIGGER: 'Trigger', SEND_EMAIL: 'Send email', DELAY: 'Delay', WAIT_FOR_EVENT: 'Wait for event', CONDITION: 'Condition',
  WEBHOOK: 'Webhook', UPDATE_CONTACT: 'Update contact', EXIT: 'Exit',
}

function toSummary(row: repo.WorkflowRow): WorkflowSummary {
  return {
    id: row.id, name: row.name, description: row.description, triggerType: 'EVENT', triggerConfig: { eventName: row.triggerEvent },
    enabled: row.enabled, allowReentry: row.allowReentry, projectId: row.projectId,
    createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString(),
  }
}

const toStep = (s: repo.StepRow): Step => ({ id: s.id, type: s.type, name: s.name, config: s.config, position: s.position })
const toTransition = (t: repo.TransitionRow): Transition => ({ id: t.id, fromStepId: t.fromStepId, toStepId: t.toStepId, branch: t.branch })

function toWorkflow(row: repo.WorkflowRow, steps: repo.StepRow[], transitions: repo.TransitionRow[]): Workflow {
  return { ...toSummary(row), steps: steps.map(toStep), transitions: transitions.map(toTransition) }
}

function toStepExecution(x: repo.StepExecutionRow): StepExecution {
  return {
    id: x.id, stepId: x.stepId, stepType: x.stepType, status: x.status, output: x.output ?? null, error: x.error,
    dueAt: iso(x.dueAt), startedAt: x.startedAt.toISOString(), finishedAt: iso(x.finishedAt),
  }
}

export function toExecution(e: repo.ExecutionRow, steps?: repo.StepExecutionRow[]): Execution {
  return {
    id: e.id, workflowId: e.workflowId, contactId: e.contactId, status: e.status, currentStepId: e.currentStepId,
    context: e.context ?? {}, triggerEventId: e.triggerEventId,
    waitingFor: e.status === 'WAITING' ? { eventName: e.waitEvent, until: iso(e.waitUntil) } : null,
    error: e.error, exitReason: e.exitReason,
    startedAt: e.startedAt.toISOString(), updatedAt: e.updatedAt.toISOString(), finishedAt: iso(e.finishedAt),
    ...(steps ? { steps: steps.map(toStepExecution) } : {}),
  }
}

async function mustWorkflow(ctx: Ctx, db: Db, id: string): Promise<repo.WorkflowRow> {
  const row = await repo.findWorkflow(ctx.store, db, ctx.projectId, id)
  if (!row) throw notFound('workflow')
  return row
}

async function loadWorkflow(ctx: Ctx, db: Db, row: repo.WorkflowRow): Promise<Workflow> {
  const [steps, transitions] = await Promise.all([
    repo.stepsOf(ctx.store, db, ctx.projectId, [row.id]),
    repo.transitionsOf(ctx.store, db, ctx.projectId, row.id),
  ])
  return toWorkflow(row, steps, transitions)
}

/**
 * The graph check of an enabled workflow (on enable and after every edit while enabled): 422 whose errors
 * name each faulty step and what is wrong.
 */
export async function assertValidGraph(ctx: Ctx, db: Db, workflowId: string): Promise<void> {
  const [steps, transitions] = await Promise.all([
    repo.stepsOf(ctx.store, db, ctx.projectId, [workflowId]),
    repo.transitionsOf(ctx.store, db, ctx.projectId, workflowId),
  ])
  const templateIds = steps.filter((s) => s.type === 'SEND_EMAIL' && typeof s.config.templateId === 'string').map((s) => s.config.templateId as string)
  const faults = graphFaults(steps, transitions, await repo.existingTemplates(ctx.store, db, ctx.projectId, templateIds))
  if (faults.length) throw validation(faults, `The workflow cannot run: ${faults[0].message}${faults.length > 1 ? ` (and ${faults.length - 1} more)` : ''}`)
}

/** Runs an edit of a workflow's graph in one transaction; an enabled workflow must still be valid after it. */
async function editGraph<T>(ctx: Ctx, workflowId: string, edit: (db: Db, wf: repo.WorkflowRow) => Promise<T>): Promise<T> {
  return ctx.store.tx(async (db) => {
    const wf = await mustWorkflow(ctx, db, workflowId)
    const out = await edit(db, wf)
    if (wf.enabled) await assertValidGraph(ctx, db, workflowId)
    await repo.updateWorkflow(ctx.store, db, ctx.projectId, workflowId, { updatedAt: ctx.deps.clock.date() })
    return out
  })
}

// --- workflows ------------------------------------------------------------------------------------

export async function createWorkflow(ctx: Ctx, input: CreateWorkflow): Promise<Workflow> {
  const eventName = input.eventName ?? input.triggerConfig?.eventName
  if (!eventName) throw invalidField('eventName', 'eventName is required: the event that starts an execution', 'required')
  const now = ctx.deps.clock.date()
  const row: repo.WorkflowRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, name: input.name, description: input.description ?? null,
    triggerType: 'EVENT', triggerEvent: eventName, enabled: false, allowReentry: input.allowReentry ?? false,
    createdAt: now, updatedAt: now,
  }
  const trigger: repo.StepRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, workflowId: row.id, type: 'TRIGGER', name: DEFAULT_NAMES.TRIGGER,
    config: { eventName }, position: { x: 0, y: 0 }, createdAt: now, updatedAt: now,
  }
  await ctx.store.tx(async (db) => {
    await repo.insertWorkflow(ctx.store, db, row)
    await repo.insertStep(ctx.store, db, trigger)
  })
  return toWorkflow(row, [trigger], [])
}

export async function getWorkflow(ctx: Ctx, id: string): Promise<Workflow> {
  return loadWorkflow(ctx, ctx.store.db, await mustWorkflow(ctx, ctx.store.db, id))
}

export async function listWorkflows(ctx: Ctx, q: ListWorkflowsQuery): Promise<WorkflowList> {
  const page = q.page ?? 1
  const pageSize = Math.min(MAX_PAGE_SIZE, q.pageSize ?? DEFAULT_PAGE_SIZE)
  const { rows, total } = await repo.listWorkflows(ctx.store, ctx.store.db, ctx.projectId, {
    search: q.search, enabled: q.enabled === undefined ? undefined : q.enabled === 'true', limit: pageSize, offset: (page - 1) * pageSize,
  })
  return { data: rows.map(toSummary), page, pageSize, total, totalPages: Math.ceil(total / pageSize) }
}

/** PATCH /workflows/:id: metadata, trigger, enabled, allowReentry. Enabling (or staying enabled) validates the graph. */
export async function updateWorkflow(ctx: Ctx, id: string, patch: UpdateWorkflow): Promise<Workflow> {
  return ctx.store.tx(async (db) => {
    const wf = await mustWorkflow(ctx, db, id)
    const set: Partial<repo.WorkflowRow> = { updatedAt: ctx.deps.clock.date() }
    if (patch.name !== undefined) set.name = patch.name
    if (patch.description !== undefined) set.description = patch.description
    if (patch.allowReentry !== undefined) set.allowReentry = patch.allowReentry
    if (patch.enabled !== undefined) set.enabled = patch.enabled
    const eventName = patch.triggerConfig?.eventName ?? patch.eventName
    if (eventName !== undefined && eventName !== wf.triggerEvent) {
      set.triggerEvent = eventName
      for (const s of await repo.stepsOf(ctx.store, db, ctx.projectId, [id])) {
        if (s.type === 'TRIGGER') await repo.updateStep(ctx.store, db, ctx.projectId, s.id, { config: { ...s.config, eventName }, updatedAt: set.updatedAt })
      }
    }
    const row = await repo.updateWorkflow(ctx.store, db, ctx.projectId, id, set)
    if (!row) throw notFound('workflow')
    if (row.enabled) await assertValidGraph(ctx, db, id)
    return loadWorkflow(ctx, db, row)
  })
}

/** DELETE /workflows/:id: 409 while executions are RUNNING or WAITING (cancel them or let them finish). */
export async function deleteWorkflow(ctx: Ctx, id: string): Promise<void> {
  await ctx.store.tx(async (db) => {
    await mustWorkflow(ctx, db, id)
    const active = await repo.countActive(ctx.store, db, ctx.projectId, id)
    if (active) throw conflict(`The workflow has ${active} active execution${active === 1 ? '' : 's'}: cancel them (POST /workflows/${id}/executions/cancel-all) or let them finish first`, { activeExecutions: active })
    await repo.deleteWorkflow(ctx.store, db, ctx.projectId, id)
  })
}

/** GET /workflows/fields: contact fields of the filter engine, and the execution context's fields. */
export async function workflowFields(ctx: Ctx) {
  const contact = await listFilterFields(ctx)
  const compare = ['equals', 'notEquals', 'contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists']
  const event = [
    { field: 'context.event.name', label: 'Trigger event name', kind: 'context', operators: compare },
    { field: 'context.event.data.<key>', label: 'Trigger event data', kind: 'context', operators: compare },
    { field: 'context.<key>', label: 'Execution context (POST /workflows/:id/executions)', kind: 'context', operators: compare },
  ]
  return { contact: contact.map((f) => ({ ...f, operators: [...f.operators] })), event }
}

// --- steps and transitions ------------------------------------------------------------------------

export async function addStep(ctx: Ctx, workflowId: string, input: AddStep): Promise<Step> {
  await mustWorkflow(ctx, ctx.store.db, workflowId)
  const config = await checkStepConfig(ctx, input.type, input.config)
  const now = ctx.deps.clock.date()
  const row: repo.StepRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, workflowId, type: input.type, name: input.name ?? DEFAULT_NAMES[input.type],
    config, position: input.position ?? { x: 0, y: 0 }, createdAt: now, updatedAt: now,
  }
  await editGraph(ctx, workflowId, (db) => repo.insertStep(ctx.store, db, row))
  return toStep(row)
}

export async function updateStep(ctx: Ctx, workflowId: string, stepId: string, patch: UpdateStep): Promise<Step> {
  const step = await repo.findStep(ctx.store, ctx.store.db, ctx.projectId, workflowId, stepId)
  if (!step) throw notFound('step')
  const set: Partial<repo.StepRow> = { updatedAt: ctx.deps.clock.date() }
  if (patch.name !== undefined) set.name = patch.name
  if (patch.position !== undefined) set.position = patch.position
  if (patch.config !== undefined) {
    if (step.type === 'TRIGGER') throw invalidField('config', 'the TRIGGER step\'s config is the workflow\'s triggerConfig: change it with PATCH /workflows/:id', 'invalid_config')
    set.config = await checkStepConfig(ctx, step.type as StepType, patch.config)
  }
  return editGraph(ctx, workflowId, async (db) => {
    const row = await repo.updateStep(ctx.store, db, ctx.projectId, stepId, set)
    if (!row) throw notFound('step')
    return toStep(row)
  })
}

/**
 * DELETE /workflows/:id/steps/:stepId. `splice`: each transition into the step is reconnected to the step it
 * led to (keeping its branch); a step with several ways out cannot be spliced (422).
 */
export async function deleteStep(ctx: Ctx, workflowId: string, stepId: string, splice: boolean): Promise<void> {
  await editGraph(ctx, workflowId, async (db) => {
    const step = await repo.findStep(ctx.store, db, ctx.projectId, workflowId, stepId)
    if (!step) throw notFound('step')
    if (step.type === 'TRIGGER') throw invalidField('stepId', 'the TRIGGER step cannot be deleted: every workflow has one', 'trigger_required')
    const transitions = await repo.transitionsOf(ctx.store, db, ctx.projectId, workflowId)
    const incoming = transitions.filter((t) => t.toStepId === stepId && t.fromStepId !== stepId)
    const outgoing = transitions.filter((t) => t.fromStepId === stepId && t.toStepId !== stepId)
    if (splice && outgoing.length > 1) throw invalidField('splice', `step "${step.name}" (${step.type}) has ${outgoing.length} outgoing transitions: splice needs at most one`, 'cannot_splice')
    await repo.deleteStep(ctx.store, db, ctx.projectId, stepId)
    if (splice && outgoing.length === 1) {
      const now = ctx.deps.clock.date()
      for (const t of incoming) {
        await repo.insertTransition(ctx.store, db, { id: Bun.randomUUIDv7(), projectId: ctx.projectId, workflowId, fromStepId: t.fromStepId, toStepId: outgoing[0].toStepId, branch: t.branch, createdAt: now })
      }
    }
  })
}

export async function addTransition(ctx: Ctx, workflowId: string, input: AddTransition): Promise<Transition> {
  return editGraph(ctx, workflowId, async (db) => {
    const from = await repo.findStep(ctx.store, db, ctx.projectId, workflowId, input.fromStepId)
    if (!from) throw invalidField('fromStepId', `step ${input.fromStepId} is not a step of this workflow`, 'unknown_step', input.fromStepId)
    const to = await repo.findStep(ctx.store, db, ctx.projectId, workflowId, input.toStepId)
    if (!to) throw invalidField('toStepId', `step ${input.toStepId} is not a step of this workflow`, 'unknown_step', input.toStepId)
    if (to.type === 'TRIGGER') throw invalidField('toStepId', 'no transition leads into the TRIGGER step', 'invalid_transition')
    if (from.type === 'EXIT') throw invalidField('fromStepId', `step "${from.name}" is an EXIT step: it has no outgoing transition`, 'invalid_transition')
    const branch = input.branch ?? null
    const allowed = branchesOf(from.type, { ...from.config, timeout: from.type === 'WAIT_FOR_EVENT' ? (from.config.timeout ?? 1) : undefined })
    if (allowed && (!branch || !allowed.includes(branch))) {
      throw invalidField('branch', `a transition from step "${from.name}" (${from.type}) needs branch ${allowed.join(' or ')}`, 'invalid_branch', branch)
    }
    if (!allowed && branch) throw invalidField('branch', `step "${from.name}" (${from.type}) does not branch: leave branch out`, 'invalid_branch', branch)
    const existing = (await repo.transitionsOf(ctx.store, db, ctx.projectId, workflowId)).filter((t) => t.fromStepId === from.id && (allowed ? t.branch === branch : true))
    if (existing.length) throw conflict(`step "${from.name}" already has a transition${branch ? ` on branch ${branch}` : ''} (${existing[0].id}): delete it first`)
    const row: repo.TransitionRow = { id: Bun.randomUUIDv7(), projectId: ctx.projectId, workflowId, fromStepId: from.id, toStepId: to.id, branch, createdAt: ctx.deps.clock.date() }
    await repo.insertTransition(ctx.store, db, row)
    return toTransition(row)
  })
}

export async function deleteTransition(ctx: Ctx, workflowId: string, transitionId: string): Promise<void> {
  await editGraph(ctx, workflowId, async (db) => {
    if (!(await repo.deleteTransition(ctx.store, db, ctx.projectId, workflowId, transitionId))) throw notFound('transition')
  })
}

// --- executions -----------------------------------------------------------------------------------

/**
 * POST /workflows/:id/executions: starts an execution for one contact (by id or email) with an optional
 * context, enabled or not; the graph must be valid (422), and allowReentry holds (409).
 */
export async function startExecution(ctx: Ctx, workflowId: string, input: StartExecution): Promise<Execution> {
  if (!input.contactId && !input.email) throw invalidField('contactId', 'contactId or email is required: the contact to run the workflow for', 'required')
  const row = await ctx.store.tx(async (db) => {
    const wf = await mustWorkflow(ctx, db, workflowId)
    const contact = await repo.findContact(ctx.store, db, ctx.projectId, input.contactId ? { id: input.contactId } : { email: normalizeEmail(input.email ?? '') })
    if (!contact) throw notFound('contact')
    await assertValidGraph(ctx, db, workflowId)
    const trigger = (await repo.stepsOf(ctx.store, db, ctx.projectId, [workflowId])).find((s) => s.type === 'TRIGGER')
    if (!trigger) throw notFound('trigger step')
    const exec = await createExecution(ctx, db, wf, trigger.id, contact.id, { context: input.context ?? {}, triggerEventId: null })
    if (!exec) {
      throw conflict(wf.allowReentry
        ? 'The contact already has a running or waiting execution of this workflow'
        : 'The contact already entered this workflow, and allowReentry is false')
    }
    return exec
  })
  return toExecution(row, [])
}

export async function listExecutions(ctx: Ctx, workflowId: string, q: ListExecutionsQuery): Promise<ExecutionList> {
  if (q.status !== undefined && !(EXECUTION_STATUSES as readonly string[]).includes(q.status)) {
    throw badRequest(`Unknown status ${q.status}: one of ${EXECUTION_STATUSES.join(', ')}`)
  }
  await mustWorkflow(ctx, ctx.store.db, workflowId)
  const limit = Math.min(100, q.limit ?? 20)
  const cur = q.cursor ? decodeTimeCursor(q.cursor) : null
  const rows = await repo.listExecutions(ctx.store, ctx.store.db, ctx.projectId, workflowId, {
    status: q.status, limit: limit + 1, before: cur ? { at: new Date(cur.at), id: cur.id } : undefined,
  })
  const hasMore = rows.length > limit
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    data: page.map((e) => toExecution(e)),
    cursor: hasMore && last ? encodeTimeCursor({ at: last.startedAt.getTime(), id: last.id }) : '',
    hasMore,
    total: cur ? 0 : await repo.countExecutions(ctx.store, ctx.store.db, ctx.projectId, workflowId, q.status),
  }
}

export async function getExecution(ctx: Ctx, workflowId: string, executionId: string): Promise<Execution> {
  await mustWorkflow(ctx, ctx.store.db, workflowId)
  const e = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, executionId, workflowId)
  if (!e) throw notFound('execution')
  return toExecution(e, await repo.stepExecutionsOf(ctx.store, ctx.store.db, ctx.projectId, [e.id]))
}

/** DELETE /workflows/:id/executions/:executionId: a RUNNING or WAITING execution becomes CANCELLED (409 otherwise). */
export async function cancelOne(ctx: Ctx, workflowId: string, executionId: string): Promise<Execution> {
  await mustWorkflow(ctx, ctx.store.db, workflowId)
  const e = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, executionId, workflowId)
  if (!e) throw notFound('execution')
  if (!(await cancelExecution(ctx, e))) {
    const now = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, executionId, workflowId)
    throw conflict(`The execution is ${now?.status ?? e.status}: only a RUNNING or WAITING execution can be cancelled`)
  }
  return getExecution(ctx, workflowId, executionId)
}

/** POST /workflows/:id/executions/:executionId/continue: a test run's wait ends now (engine.continueExecution). */
export async function continueOne(ctx: Ctx, workflowId: string, executionId: string): Promise<Execution> {
  await mustWorkflow(ctx, ctx.store.db, workflowId)
  const e = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, executionId, workflowId)
  if (!e) throw notFound('execution')
  if (!(await continueExecution(ctx, e))) {
    const now = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, executionId, workflowId)
    const s = now ?? e
    throw conflict(s.status === 'WAITING'
      ? 'The execution waits for an event without a timeout: track the event to continue it'
      : `The execution is ${s.status}: only a WAITING execution can continue now`)
  }
  return getExecution(ctx, workflowId, executionId)
}

/** GET /workflows/:id/stats: per step, how many executions entered, wait there now, completed and failed it. */
export async function stepStats(ctx: Ctx, workflowId: string): Promise<StepStats> {
  const wf = await mustWorkflow(ctx, ctx.store.db, workflowId)
  const steps = await repo.stepsOf(ctx.store, ctx.store.db, ctx.projectId, [wf.id])
  const { runs, waiting } = await repo.stepCounts(ctx.store, ctx.store.db, ctx.projectId, wf.id)
  return {
    data: steps.map((s) => {
      const of = runs.filter((r) => r.stepId === s.id)
      const sum = (status?: string) => of.filter((r) => !status || r.status === status).reduce((a, r) => a + r.n, 0)
      return { stepId: s.id, entered: sum(), waiting: waiting.find((w) => w.stepId === s.id)?.n ?? 0, completed: sum('COMPLETED'), failed: sum('FAILED') }
    }),
  }
}

/** POST /workflows/:id/executions/cancel-all: every RUNNING or WAITING execution, in batches. */
export async function cancelAll(ctx: Ctx, workflowId: string): Promise<{ cancelled: number }> {
  await mustWorkflow(ctx, ctx.store.db, workflowId)
  let cancelled = 0
  for (;;) {
    const batch = await repo.activeExecutions(ctx.store, ctx.store.db, ctx.projectId, workflowId, 500)
    if (!batch.length) break
    let progressed = false
    for (const e of batch) {
      if (await cancelExecution(ctx, e)) { cancelled++; progressed = true }
    }
    if (!progressed) break
  }
  return { cancelled }
}
