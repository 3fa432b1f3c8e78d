import { and, asc, count, desc, eq, inArray, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { compiledRead, type Db, type Store } from '../../db/client'
import { inJsonList } from '../../db/dialect'

/** The only SQL of the workflows module. Every function that reads tenant data takes the project id. */

type S = typeof import('../../db/schema').pgSchema
export type WorkflowRow = S['workflows']['$inferSelect']
export type StepRow = S['workflowSteps']['$inferSelect']
export type TransitionRow = S['workflowTransitions']['$inferSelect']
export type ExecutionRow = S['workflowExecutions']['$inferSelect']
export type StepExecutionRow = S['workflowStepExecutions']['$inferSelect']

// --- workflows ------------------------------------------------------------------------------------

export async function insertWorkflow(store: Store, db: Db, row: WorkflowRow): Promise<void> {
  await db.insert(store.t.workflows).values(row)
}

export async function findWorkflow(store: Store, db: Db, projectId: string, id: string): Promise<WorkflowRow | null> {
  const { workflows: w } = store.t
  const [row] = await db.select().from(w).where(and(eq(w.projectId, projectId), eq(w.id, id))).limit(1)
  return row ?? null
}

export async function updateWorkflow(store: Store, db: Db, projectId: string, id: string, set: Partial<Omit<WorkflowRow, 'id' | 'projectId' | 'createdAt'>>): Promise<WorkflowRow | null> {
  const { workflows: w } = store.t
  const [row] = await db.update(w).set(set).where(and(eq(w.projectId, projectId), eq(w.id, id))).returning()
  return row ?? null
}

export async function deleteWorkflow(store: Store, db: Db, projectId: string, id: string): Promise<boolean> {
  const { workflows: w } = store.t
  const rows = await db.delete(w).where(and(eq(w.projectId, projectId), eq(w.id, id))).returning({ id: w.id })
  return rows.length > 0
}

function likePattern(s: string): string {
  return `%${s.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
}

export async function listWorkflows(store: Store, db: Db, projectId: string, f: { search?: string; enabled?: boolean; limit: number; offset: number }): Promise<{ rows: WorkflowRow[]; total: number }> {
  const { workflows: w } = store.t
  const where: SQL[] = [eq(w.projectId, projectId)]
  if (f.search) where.push(sql`lower(${w.name}) LIKE ${likePattern(f.search)} ESCAPE '\\'`)
  if (f.enabled !== undefined) where.push(eq(w.enabled, f.enabled))
  const cond = and(...where)
  const [rows, [{ n }]] = await Promise.all([
    db.select().from(w).where(cond).orderBy(desc(w.createdAt), desc(w.id)).limit(f.limit).offset(f.offset),
    db.select({ n: count() }).from(w).where(cond),
  ])
  return { rows, total: Number(n) }
}

/** The project ($1) has an enabled workflow / a WAITING execution, as SQL (also events/interest.ts). */
export const ENABLED_WORKFLOW_SQL = 'SELECT 1 FROM workflows WHERE project_id = $1 AND enabled = true'
export const WAITING_EXECUTION_SQL = "SELECT 1 FROM workflow_executions WHERE project_id = $1 AND status = 'WAITING'"
const anyEnabled = compiledRead(`${ENABLED_WORKFLOW_SQL} LIMIT 1`)
const anyWaiting = compiledRead(`${WAITING_EXECUTION_SQL} LIMIT 1`)

/**
 * Whether the project has an enabled workflow / a WAITING execution: the event stream's consumers ask it
 * first for every batch, so a project without workflows pays a compiled look-up, not a query build.
 */
export async function hasEnabledWorkflow(store: Store, projectId: string): Promise<boolean> {
  return (await anyEnabled(store)(projectId)).length > 0
}
export async function hasWaitingExecution(store: Store, projectId: string): Promise<boolean> {
  return (await anyWaiting(store)(projectId)).length > 0
}

/** Enabled workflows of the project whose trigger is one of `names` (the trigger consumer). */
export async function enabledTriggeredBy(store: Store, db: Db, projectId: string, names: string[]): Promise<WorkflowRow[]> {
  if (!names.length) return []
  const { workflows: w } = store.t
  return db.select().from(w).where(and(eq(w.projectId, projectId), eq(w.enabled, true), inArray(w.triggerEvent, names)))
}

/** Every workflow of the project (usage look-ups). */
export async function allWorkflows(store: Store, db: Db, projectId: string): Promise<WorkflowRow[]> {
  const { workflows: w } = store.t
  return db.select().from(w).where(eq(w.projectId, projectId))
}

// --- steps and transitions ------------------------------------------------------------------------

export async function stepsOf(store: Store, db: Db, projectId: string, workflowIds: string[]): Promise<StepRow[]> {
  if (!workflowIds.length) return []
  const { workflowSteps: s } = store.t
  return db.select().from(s).where(and(eq(s.projectId, projectId), inArray(s.workflowId, workflowIds))).orderBy(asc(s.createdAt), asc(s.id))
}

export async function transitionsOf(store: Store, db: Db, projectId: string, workflowId: string): Promise<TransitionRow[]> {
  const { workflowTransitions: tr } = store.t
  return db.select().from(tr).where(and(eq(tr.projectId, projectId), eq(tr.workflowId, workflowId))).orderBy(asc(tr.createdAt), asc(tr.id))
}

export async function findStep(store: Store, db: Db, projectId: string, workflowId: string, id: string): Promise<StepRow | null> {
  const { workflowSteps: s } = store.t
  const [row] = await db.select().from(s).where(and(eq(s.projectId, projectId), eq(s.workflowId, workflowId), eq(s.id, id))).limit(1)
  return row ?? null
}

export async function insertStep(store: Store, db: Db, row: StepRow): Promise<void> {
  await db.insert(store.t.workflowSteps).values(row)
}

export async function updateStep(store: Store, db: Db, projectId: string, id: string, set: Partial<Pick<StepRow, 'name' | 'config' | 'position' | 'updatedAt'>>): Promise<StepRow | null> {
  const { workflowSteps: s } = store.t
  const [row] = await db.update(s).set(set).where(and(eq(s.projectId, projectId), eq(s.id, id))).returning()
  return row ?? null
}

/** Deletes a step and the transitions into and out of it. */
export async function deleteStep(store: Store, db: Db, projectId: string, id: string): Promise<void> {
  const { workflowSteps: s, workflowTransitions: tr } = store.t
  await db.delete(tr).where(and(eq(tr.projectId, projectId), or(eq(tr.fromStepId, id), eq(tr.toStepId, id))))
  await db.delete(s).where(and(eq(s.projectId, projectId), eq(s.id, id)))
}

export async function insertTransition(store: Store, db: Db, row: TransitionRow): Promise<void> {
  await db.insert(store.t.workflowTransitions).values(row)
}

export async function deleteTransition(store: Store, db: Db, projectId: string, workflowId: string, id: string): Promise<boolean> {
  const { workflowTransitions: tr } = store.t
  const rows = await db.delete(tr).where(and(eq(tr.projectId, projectId), eq(tr.workflowId, workflowId), eq(tr.id, id))).returning({ id: tr.id })
  return rows.length > 0
}

/** SEND_EMAIL steps of the project whose config names the template (template usage). */
export async function stepsUsingTemplate(store: Store, db: Db, projectId: string, templateId: string): Promise<Array<{ workflowId: string; workflowName: string; stepId: string; stepName: string; enabled: boolean }>> {
  const { workflowSteps: s, workflows: w } = store.t
  const rows = await db.select({ workflowId: s.workflowId, workflowName: w.name, stepId: s.id, stepName: s.name, enabled: w.enabled, config: s.config })
    .from(s).innerJoin(w, eq(w.id, s.workflowId))
    .where(and(eq(s.projectId, projectId), eq(s.type, 'SEND_EMAIL')))
  return rows.filter((r) => r.config?.templateId === templateId).map(({ config: _c, ...r }) => r)
}

/** The ids among `ids` of templates of the project. */
export async function existingTemplates(store: Store, db: Db, projectId: string, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set()
  const { templates: t } = store.t
  const rows = await db.select({ id: t.id }).from(t).where(and(eq(t.projectId, projectId), inArray(t.id, ids)))
  return new Set(rows.map((r) => r.id))
}

// --- executions -----------------------------------------------------------------------------------

/**
 * Inserts an execution unless a unique index refuses it (the same trigger event, or the allowReentry rule);
 * true when inserted. The database decides, so two nodes handling the same event start one execution.
 */
export async function insertExecution(store: Store, db: Db, row: ExecutionRow): Promise<boolean> {
  const rows = await db.insert(store.t.workflowExecutions).values(row).onConflictDoNothing().returning({ id: store.t.workflowExecutions.id })
  return rows.length > 0
}

export async function findExecution(store: Store, db: Db, projectId: string, id: string, workflowId?: string): Promise<ExecutionRow | null> {
  const { workflowExecutions: e } = store.t
  const conds = [eq(e.projectId, projectId), eq(e.id, id)]
  if (workflowId) conds.push(eq(e.workflowId, workflowId))
  const [row] = await db.select().from(e).where(and(...conds)).limit(1)
  return row ?? null
}

/** Whether the contact ever entered the workflow (allowReentry false). */
export async function hasEntered(store: Store, db: Db, projectId: string, workflowId: string, contactId: string): Promise<boolean> {
  const { workflowExecutions: e } = store.t
  const [row] = await db.select({ id: e.id }).from(e).where(and(eq(e.projectId, projectId), eq(e.workflowId, workflowId), eq(e.contactId, contactId))).limit(1)
  return !!row
}

/**
 * Writes a state change of an execution only at the version it was read at (and bumps it): null when another
 * runner, a cancel or an event got there first.
 */
export async function updateExecutionAt(store: Store, db: Db, projectId: string, id: string, version: number, set: Partial<Omit<ExecutionRow, 'id' | 'projectId' | 'version'>>): Promise<ExecutionRow | null> {
  const { workflowExecutions: e } = store.t
  const [row] = await db.update(e).set({ ...set, version: version + 1 })
    .where(and(eq(e.projectId, projectId), eq(e.id, id), eq(e.version, version))).returning()
  return row ?? null
}

/** Per step of a workflow: its step executions by status, and the executions WAITING at it now. */
export async function stepCounts(store: Store, db: Db, projectId: string, workflowId: string): Promise<{
  runs: Array<{ stepId: string; status: string; n: number }>; waiting: Array<{ stepId: string | null; n: number }>
}> {
  const { workflowExecutions: e, workflowStepExecutions: x } = store.t
  const runs = await db.select({ stepId: x.stepId, status: x.status, n: count() }).from(x)
    .innerJoin(e, and(eq(e.id, x.executionId), eq(e.projectId, projectId)))
    .where(and(eq(x.projectId, projectId), eq(e.workflowId, workflowId))).groupBy(x.stepId, x.status)
  const waiting = await db.select({ stepId: e.currentStepId, n: count() }).from(e)
    .where(and(eq(e.projectId, projectId), eq(e.workflowId, workflowId), eq(e.status, 'WAITING'))).groupBy(e.currentStepId)
  return { runs: runs.map((r) => ({ ...r, n: Number(r.n) })), waiting: waiting.map((r) => ({ ...r, n: Number(r.n) })) }
}

export async function countActive(store: Store, db: Db, projectId: string, workflowId: string): Promise<number> {
  const { workflowExecutions: e } = store.t
  const [{ n }] = await db.select({ n: count() }).from(e)
    .where(and(eq(e.projectId, projectId), eq(e.workflowId, workflowId), inArray(e.status, ['RUNNING', 'WAITING'])))
  return Number(n)
}

/** Active executions of a workflow, oldest first (cancel-all walks them in batches). */
export async function activeExecutions(store: Store, db: Db, projectId: string, workflowId: string, limit: number): Promise<ExecutionRow[]> {
  const { workflowExecutions: e } = store.t
  return db.select().from(e)
    .where(and(eq(e.projectId, projectId), eq(e.workflowId, workflowId), inArray(e.status, ['RUNNING', 'WAITING'])))
    .orderBy(asc(e.startedAt), asc(e.id)).limit(limit)
}

export async function listExecutions(store: Store, db: Db, projectId: string, workflowId: string, f: { status?: string; before?: { at: Date; id: string }; limit: number }): Promise<ExecutionRow[]> {
  const { workflowExecutions: e } = store.t
  const conds: SQL[] = [eq(e.projectId, projectId), eq(e.workflowId, workflowId)]
  if (f.status) conds.push(eq(e.status, f.status))
  if (f.before) {
    const b = or(lt(e.startedAt, f.before.at), and(eq(e.startedAt, f.before.at), lt(e.id, f.before.id)))
    if (b) conds.push(b)
  }
  return db.select().from(e).where(and(...conds)).orderBy(desc(e.startedAt), desc(e.id)).limit(f.limit)
}

export async function countExecutions(store: Store, db: Db, projectId: string, workflowId: string, status?: string): Promise<number> {
  const { workflowExecutions: e } = store.t
  const conds: SQL[] = [eq(e.projectId, projectId), eq(e.workflowId, workflowId)]
  if (status) conds.push(eq(e.status, status))
  const [{ n }] = await db.select({ n: count() }).from(e).where(and(...conds))
  return Number(n)
}

/** WAITING executions of the project's contacts that wait for one of `names` (the wait consumer). */
export async function waitingFor(store: Store, db: Db, projectId: string, contactIds: string[], names: string[]): Promise<ExecutionRow[]> {
  if (!contactIds.length || !names.length) return []
  const { workflowExecutions: e } = store.t
  // The contact ids (a batch of the event stream: hundreds) go as one JSON parameter: bound one by one,
  // building and binding the query cost more than the look-ups (about 0.6 ms a batch of 285 on SQLite).
  const inContacts = inJsonList(store, e.contactId, contactIds)
  return db.select().from(e).where(and(eq(e.projectId, projectId), inContacts, inArray(e.waitEvent, names), eq(e.status, 'WAITING')))
}

/** WAITING executions of every project whose wait ends at or before `now` (the wake job), oldest first. */
export async function dueWaiting(store: Store, now: Date, limit: number): Promise<ExecutionRow[]> {
  const { workflowExecutions: e } = store.t
  return store.db.select().from(e)
    .where(and(eq(e.status, 'WAITING'), lte(e.waitUntil, now))).orderBy(asc(e.waitUntil)).limit(limit)
}

/** RUNNING executions of every project not moved since `before` (their run job was lost), oldest first. */
export async function stalledRunning(store: Store, before: Date, limit: number): Promise<Array<{ id: string; projectId: string; version: number; waitUntil: Date | null }>> {
  const { workflowExecutions: e } = store.t
  const rows = await store.db.select({ id: e.id, projectId: e.projectId, version: e.version }).from(e)
    .where(and(eq(e.status, 'RUNNING'), lt(e.updatedAt, before))).orderBy(asc(e.updatedAt)).limit(limit)
  return rows.map((r) => ({ ...r, waitUntil: null }))
}

/** When the next wait of any project ends (null: nothing waits with a time). */
export async function nextDue(store: Store): Promise<Date | null> {
  const { workflowExecutions: e } = store.t
  const [row] = await store.db.select({ at: e.waitUntil }).from(e)
    .where(and(eq(e.status, 'WAITING'), sql`${e.waitUntil} IS NOT NULL`)).orderBy(asc(e.waitUntil)).limit(1)
  return row?.at ?? null
}

// --- step executions ------------------------------------------------------------------------------

export async function insertStepExecution(store: Store, db: Db, row: StepExecutionRow): Promise<void> {
  await db.insert(store.t.workflowStepExecutions).values(row)
}

export async function updateStepExecution(store: Store, db: Db, projectId: string, id: string, set: Partial<Omit<StepExecutionRow, 'id' | 'projectId' | 'executionId'>>): Promise<void> {
  const { workflowStepExecutions: x } = store.t
  await db.update(x).set(set).where(and(eq(x.projectId, projectId), eq(x.id, id)))
}

export async function stepExecutionsOf(store: Store, db: Db, projectId: string, executionIds: string[]): Promise<StepExecutionRow[]> {
  if (!executionIds.length) return []
  const { workflowStepExecutions: x } = store.t
  return db.select().from(x).where(and(eq(x.projectId, projectId), inArray(x.executionId, executionIds))).orderBy(asc(x.startedAt), asc(x.id))
}

/** Marks the open step executions (scheduled, waiting, running, pending) of an execution as skipped. */
export async function skipOpenSteps(store: Store, db: Db, projectId: string, executionId: string, now: Date, reason: string): Promise<void> {
  const { workflowStepExecutions: x } = store.t
  await db.update(x).set({ status: 'SKIPPED', error: reason, finishedAt: now })
    .where(and(eq(x.projectId, projectId), eq(x.executionId, executionId), inArray(x.status, ['PENDING', 'SCHEDULED', 'WAITING', 'RUNNING'])))
}

/** A contact of the project (id, email, subscribed, data), by id or by email. */
export async function findContact(store: Store, db: Db, projectId: string, by: { id?: string; email?: string }) {
  const c = store.t.contacts
  const cond = by.id !== undefined ? eq(c.id, by.id) : eq(c.email, by.email ?? '')
  const [row] = await db.select({ id: c.id, email: c.email, subscribed: c.subscribed, data: c.data }).from(c)
    .where(and(eq(c.projectId, projectId), cond)).limit(1)
  return row ?? null
}

/** The project's WAITING executions with a resume time, soonest first, with their workflow's name and step type (GET /activity/upcoming). */
export async function upcomingWaits(store: Store, db: Db, projectId: string, limit: number) {
  const { workflowExecutions: e, workflows: w, workflowSteps: s } = store.t
  return db.select({ id: e.id, workflowId: e.workflowId, contactId: e.contactId, stepId: e.currentStepId, waitUntil: e.waitUntil, name: w.name, stepType: s.type })
    .from(e).innerJoin(w, eq(w.id, e.workflowId)).leftJoin(s, eq(s.id, e.currentStepId))
    .where(and(eq(e.projectId, projectId), eq(e.status, 'WAITING'), sql`${e.waitUntil} IS NOT NULL`))
    .orderBy(asc(e.waitUntil), asc(e.id)).limit(limit)
}

export async function countUpcomingWaits(store: Store, db: Db, projectId: string): Promise<number> {
  const e = store.t.workflowExecutions
  const [row] = await db.select({ n: count() }).from(e).where(and(eq(e.projectId, projectId), eq(e.status, 'WAITING'), sql`${e.waitUntil} IS NOT NULL`))
  return Number(row?.n ?? 0)
}
