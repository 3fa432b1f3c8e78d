import type { Db } from '../../db/client'
import type { Ctx, Deps } from '../../deps'
import { errorFields } from '../../log'
import { enqueue } from '../../jobs/queue'
import type { EventRow } from '../events/stream'
import type { ExecutionStatus, StepType } from './model'
import * as repo from './repo'
import { STEP_RUNNERS, StepFailure, type StepOutcome } from './steps'

/**
 * The workflow engine (docs/architecture.md, Workflows). An execution moves one step at a time; each move is
 * ONE transaction that writes the execution only at the version it read (and bumps it), records the step
 * execution, performs the step's own write (an email queued) and, when the execution must wake later,
 * queues the `workflow.run` job for that time. So:
 * - a crash loses nothing: the job (a lease) runs again and resumes from the last committed move;
 * - nothing runs twice: a second runner, a cancel or an event that got there first makes the write a no-op;
 * - time is the engine clock (`deps.clock`), one for due times, waits and records: tests move it.
 */

export const RUN_JOB = 'workflow.run'
/** Steps one job runs before it hands the rest to a new job (a long chain never holds one lease forever). */
const MAX_STEPS_PER_RUN = 50

export interface RunPayload { runs: Array<{ executionId: string; version: number }> }
/** The recurring job that wakes executions whose DELAY is due or whose WAIT_FOR_EVENT timed out. */
export const WAKE_JOB = 'workflows.wake'
/** Executions woken per query of the wake job (it queries again while any is due). */
export const WAKE_BATCH = 500
/** Executions one job runs at once (their moves share commits, src/db/group-commit.ts). */
export const RUN_CONCURRENCY = 32
/** Executions the wake job runs at once, and how long one run of it goes on while executions keep falling due. */
export const WAKE_CONCURRENCY = 64
export const WAKE_BUDGET_MS = 10_000
const WAKE_LOOKAHEAD_MS = 1_000
/** A RUNNING execution not moved for this long has lost its job; the wake job runs it again. */
export const STALLED_MS = 5 * 60_000


const TERMINAL: readonly ExecutionStatus[] = ['COMPLETED', 'EXITED', 'FAILED', 'CANCELLED']

/**
 * Queues the run of an execution at `version`, due at `runAt`, in the caller's transaction. One job per
 * (execution, version): a duplicate (an event delivered twice) is dropped by the queue's unique key.
 */
export async function enqueueRun(ctx: Ctx, db: Db, exec: { id: string; version: number }, runAt: Date): Promise<void> {
  await enqueueRuns(ctx, db, [exec], runAt)
}

/** Queues one job that runs several executions (those a batch of events started), keyed by the first. */
export async function enqueueRuns(ctx: Ctx, db: Db, execs: Array<{ id: string; version: number }>, runAt: Date): Promise<void> {
  if (!execs.length) return
  const runs: RunPayload['runs'] = execs.map((e) => ({ executionId: e.id, version: e.version }))
  await enqueue(ctx.store, RUN_JOB, { runs }, {
    wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, runAt, uniqueKey: `${execs[0].id}:${execs[0].version}${execs.length > 1 ? `+${execs.length - 1}` : ''}`, maxAttempts: 8,
  }, db)
}

/** Runs `fn` over `items`, at most `limit` at once. */
export async function inPool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++])
  }))
}

/** The entry key of a new execution: the allowReentry rule as a unique index (repo.insertExecution). */
export const entryKeyFor = (allowReentry: boolean) => (allowReentry ? 'active' : 'once')

/**
 * Creates an execution of `wf` for a contact at its TRIGGER step and queues its run, in the caller's
 * transaction; null when the database refuses it (the same trigger event again, or the allowReentry rule).
 */
export async function createExecution(
  ctx: Ctx, db: Db,
  wf: repo.WorkflowRow, triggerStepId: string, contactId: string,
  opts: { context: Record<string, unknown>; triggerEventId: string | null; enqueue?: boolean },
): Promise<repo.ExecutionRow | null> {
  if (!wf.allowReentry && await repo.hasEntered(ctx.store, db, ctx.projectId, wf.id, contactId)) return null
  const now = ctx.deps.clock.date()
  const row: repo.ExecutionRow = {
    id: Bun.randomUUIDv7(), projectId: ctx.projectId, workflowId: wf.id, contactId, status: 'RUNNING',
    currentStepId: triggerStepId, waitStepExecutionId: null, waitEvent: null, waitUntil: null,
    context: opts.context, triggerEventId: opts.triggerEventId, entryKey: entryKeyFor(wf.allowReentry), version: 0,
    error: null, exitReason: null, startedAt: now, updatedAt: now, finishedAt: null,
  }
  if (!(await repo.insertExecution(ctx.store, db, row))) return null
  if (opts.enqueue !== false) await enqueueRun(ctx, db, row, now)
  return row
}

interface Move {
  status: ExecutionStatus
  currentStepId: string | null
  wait?: { stepExecutionId: string; event: string | null; until: Date | null }
  error?: string | null
  exitReason?: string | null
}

/** The execution's fields for a move (the entry key of a re-entrant execution is freed when it ends). */
function moveFields(exec: repo.ExecutionRow, m: Move, now: Date): Partial<repo.ExecutionRow> {
  const ended = TERMINAL.includes(m.status)
  return {
    status: m.status, currentStepId: ended ? null : m.currentStepId,
    waitStepExecutionId: m.wait?.stepExecutionId ?? null, waitEvent: m.wait?.event ?? null, waitUntil: m.wait?.until ?? null,
    error: m.error ?? null, exitReason: m.exitReason ?? null, updatedAt: now,
    ...(ended ? { finishedAt: now, entryKey: exec.entryKey === 'active' ? null : exec.entryKey } : {}),
  }
}

/** The graph of one workflow as the runner walks it. */
interface Graph {
  steps: Map<string, repo.StepRow>
  next(stepId: string, branch?: string | null): string | null
}

async function loadGraph(ctx: Ctx, workflowId: string): Promise<Graph> {
  const [steps, transitions] = await Promise.all([
    repo.stepsOf(ctx.store, ctx.store.db, ctx.projectId, [workflowId]),
    repo.transitionsOf(ctx.store, ctx.store.db, ctx.projectId, workflowId),
  ])
  return {
    steps: new Map(steps.map((s) => [s.id, s])),
    next(stepId, branch) {
      const outs = transitions.filter((t) => t.fromStepId === stepId)
      const t = branch ? outs.find((x) => x.branch === branch) : outs[0]
      return t?.toStepId ?? null
    },
  }
}

/**
 * How a due wait ends (`exec` WAITING, its `waitUntil` come): a DELAY goes on to its next step, a
 * WAIT_FOR_EVENT that timed out takes its `timeout` branch; no next step completes the execution. The
 * step execution of the wait is completed with what happened.
 */
function waitEnd(graph: Graph, exec: repo.ExecutionRow, now: Date): { move: Move; stepExecutionId: string; step: Partial<repo.StepExecutionRow> } {
  const step = exec.currentStepId ? graph.steps.get(exec.currentStepId) : undefined
  const isDelay = step?.type === 'DELAY'
  const dueAt = exec.waitUntil ?? now
  const nextId = step ? graph.next(step.id, isDelay ? null : 'timeout') : null
  return {
    move: nextId ? { status: 'RUNNING', currentStepId: nextId } : { status: 'COMPLETED', currentStepId: null },
    stepExecutionId: exec.waitStepExecutionId ?? '',
    step: {
      status: 'COMPLETED', finishedAt: now,
      output: isDelay ? { dueAt: dueAt.toISOString(), ranAt: now.toISOString(), lateMs: now.getTime() - dueAt.getTime() } : { timedOut: true, timeoutAt: dueAt.toISOString() },
    },
  }
}

const label = (s: repo.StepRow) => `step "${s.name}" (${s.type})`

/**
 * Runs the execution from its current state while it is RUNNING (or its wait is due), as of `version`:
 * a job whose version is no longer the execution's is stale and does nothing.
 */
export async function runExecution(ctx: Ctx, executionId: string, version: number, opts: { orLater?: boolean } = {}): Promise<{ status: string; steps: number }> {
  const { store } = ctx
  const exec = await repo.findExecution(store, store.db, ctx.projectId, executionId)
  // A retried job (`orLater`) also takes over an execution its failed attempt had moved on, while RUNNING.
  const mine = exec && (exec.version === version || (opts.orLater && exec.version > version && exec.status === 'RUNNING'))
  if (!exec || !mine) return { status: exec ? 'stale' : 'missing', steps: 0 }
  const from = exec.version
  try {
    return await runFrom(ctx, exec)
  } catch (err) {
    // Moved on, then failed (a commit refused by a busy store): queue the rest at the version reached, so
    // the execution does not wait for the stalled-run sweep of the wake job. Best effort: the error stands.
    const now = await repo.findExecution(store, store.db, ctx.projectId, executionId).catch(() => null)
    if (now && now.version !== from && now.status === 'RUNNING') {
      await store.tx((db) => enqueueRun(ctx, db, now, ctx.deps.clock.date())).catch(() => {})
    }
    throw err
  }
}

async function runFrom(ctx: Ctx, first: repo.ExecutionRow): Promise<{ status: string; steps: number }> {
  const { store } = ctx
  const clock = () => ctx.deps.clock.date()
  let exec: repo.ExecutionRow | null = first
  const executionId = first.id
  const graph = await loadGraph(ctx, first.workflowId)
  let steps = 0

  while (exec && !TERMINAL.includes(exec.status as ExecutionStatus)) {
    if (steps >= MAX_STEPS_PER_RUN) {
      const at = exec
      await store.tx((db) => enqueueRun(ctx, db, at, clock()))
      break
    }
    steps++
    const now = clock()
    const step = exec.currentStepId ? graph.steps.get(exec.currentStepId) : undefined

    if (exec.status === 'WAITING') {
      // Woken by the job queued for its due time: a DELAY that is due, or a WAIT_FOR_EVENT that timed out.
      // A wait this run just began ends the run; a job that came early (another node's clock) is retried.
      if (steps > 1 || !exec.waitUntil || !exec.waitStepExecutionId) return { status: exec.status, steps: steps - 1 }
      if (exec.waitUntil.getTime() > now.getTime()) throw new Error(`execution ${exec.id} woken before its due time ${exec.waitUntil.toISOString()}`)
      const end = waitEnd(graph, exec, now)
      exec = await commit(ctx, exec, end.move, now, async (db) => {
        await repo.updateStepExecution(store, db, ctx.projectId, end.stepExecutionId, end.step)
      })
      continue
    }

    // RUNNING: run the current step.
    if (!step) {
      exec = await fail(ctx, exec, null, now, `step ${exec.currentStepId ?? '(none)'} no longer exists in the workflow`)
      continue
    }
    const contact = await repo.findContact(store, store.db, ctx.projectId, { id: exec.contactId })
    if (!contact) {
      exec = await fail(ctx, exec, step, now, `contact ${exec.contactId} no longer exists`)
      continue
    }
    let outcome: StepOutcome
    try {
      outcome = await STEP_RUNNERS[step.type as StepType]({ ctx, now, exec, step, contact: { ...contact, data: contact.data ?? {} } })
    } catch (err) {
      if (!(err instanceof StepFailure)) ctx.deps.log.warn('workflow step failed', { executionId: exec.id, stepId: step.id, type: step.type, ...errorFields(err) })
      outcome = { kind: 'fail', error: err instanceof Error ? err.message : String(err) }
    }
    const finished = clock()
    const stepExecId = Bun.randomUUIDv7()
    const record = (status: string, extra: Partial<repo.StepExecutionRow> = {}): repo.StepExecutionRow => ({
      id: stepExecId, projectId: ctx.projectId, executionId: exec?.id ?? executionId, stepId: step.id, stepType: step.type,
      status, output: null, error: null, dueAt: null, startedAt: now, finishedAt: finished, ...extra,
    })
    switch (outcome.kind) {
      case 'next': {
        const nextId = graph.next(step.id, outcome.branch ?? null)
        const o = outcome
        exec = await commit(ctx, exec, nextId ? { status: 'RUNNING', currentStepId: nextId } : { status: 'COMPLETED', currentStepId: null }, finished, async (db) => {
          await repo.insertStepExecution(store, db, record(o.status, { output: o.output }))
          await o.write?.(db)
        })
        if (exec) o.after?.()
        break
      }
      case 'wait': {
        const o = outcome
        // Woken by the wake job once `until` has come (repo.dueWaiting), or by the event.
        exec = await commit(ctx, exec, { status: 'WAITING', currentStepId: step.id, wait: { stepExecutionId: stepExecId, event: o.event, until: o.until } }, finished, async (db) => {
          await repo.insertStepExecution(store, db, record(o.status, { output: o.output, dueAt: o.until, finishedAt: null }))
        })
        break
      }
      case 'exit': {
        const o = outcome
        exec = await commit(ctx, exec, { status: 'EXITED', currentStepId: null, exitReason: o.reason ?? 'EXIT step' }, finished, async (db) => {
          await repo.insertStepExecution(store, db, record('COMPLETED', { output: o.output }))
        })
        break
      }
      case 'fail':
        exec = await fail(ctx, exec, step, finished, outcome.error, outcome.output)
        break
    }
  }
  return { status: exec?.status ?? 'stale', steps }
}

/**
 * Writes a move at the execution's version with `write` in the same transaction; the moved execution, or
 * null when someone else moved it first (then nothing of this move is written).
 */
async function commit(ctx: Ctx, exec: repo.ExecutionRow, m: Move, now: Date, write: (db: Db, moved: repo.ExecutionRow) => Promise<void>): Promise<repo.ExecutionRow | null> {
  // Only database writes (safe to run again after a rollback): on SQLite the moves of concurrent runs share
  // one commit (src/db/group-commit.ts); on PostgreSQL this is a transaction of its own.
  return ctx.deps.runtime.commits.run(async (db) => {
    const moved = await repo.updateExecutionAt(ctx.store, db, ctx.projectId, exec.id, exec.version, moveFields(exec, m, now))
    if (!moved) return null
    await write(db, moved)
    return moved
  }, { pure: true })
}

/** Marks the step execution and the execution FAILED with the reason. */
async function fail(ctx: Ctx, exec: repo.ExecutionRow, step: repo.StepRow | null, now: Date, error: string, output?: Record<string, unknown>): Promise<repo.ExecutionRow | null> {
  const reason = step ? `${label(step)}: ${error}` : error
  return commit(ctx, exec, { status: 'FAILED', currentStepId: null, error: reason }, now, async (db) => {
    if (step) {
      await repo.insertStepExecution(ctx.store, db, {
        id: Bun.randomUUIDv7(), projectId: ctx.projectId, executionId: exec.id, stepId: step.id, stepType: step.type,
        status: 'FAILED', output: output ?? null, error, dueAt: null, startedAt: now, finishedAt: now,
      })
    }
  })
}

/**
 * Cancels an active execution: CANCELLED, its open step executions SKIPPED, and any queued run made stale
 * (the version moves). False when it had already ended. Retries when a runner moved it meanwhile.
 */
export async function cancelExecution(ctx: Ctx, exec: repo.ExecutionRow): Promise<boolean> {
  let cur: repo.ExecutionRow | null = exec
  for (let i = 0; i < 20 && cur; i++) {
    if (TERMINAL.includes(cur.status as ExecutionStatus)) return false
    const now = ctx.deps.clock.date()
    const at: repo.ExecutionRow = cur
    const done = await commit(ctx, at, { status: 'CANCELLED', currentStepId: null, exitReason: 'cancelled' }, now, async (db) => {
      await repo.skipOpenSteps(ctx.store, db, ctx.projectId, at.id, now, 'execution cancelled')
    })
    if (done) return true
    cur = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, exec.id)
  }
  return false
}

/**
 * "Continue now" (a test run skips its wait): a WAITING execution whose wait ends by time (a DELAY, or a
 * WAIT_FOR_EVENT with a timeout) becomes due now, and a run is queued for now; the run ends the wait as at
 * its time (the DELAY goes on, the WAIT_FOR_EVENT takes its timeout branch). The version moves, so the run
 * queued for the old due time is stale. Null when it does not wait for a time (ended, or waiting for an
 * event without a timeout).
 */
export async function continueExecution(ctx: Ctx, exec: repo.ExecutionRow): Promise<repo.ExecutionRow | null> {
  let cur: repo.ExecutionRow | null = exec
  for (let i = 0; i < 20 && cur; i++) {
    const at: repo.ExecutionRow = cur
    if (at.status !== 'WAITING' || !at.waitUntil || !at.waitStepExecutionId) return null
    const now = ctx.deps.clock.date()
    const moved = await ctx.store.tx(async (db) => {
      const m = await repo.updateExecutionAt(ctx.store, db, ctx.projectId, at.id, at.version, { waitUntil: now, updatedAt: now })
      if (!m) return null
      await repo.updateStepExecution(ctx.store, db, ctx.projectId, at.waitStepExecutionId as string, { dueAt: now })
      await enqueueRun(ctx, db, m, now)
      return m
    })
    if (moved) return moved
    cur = await repo.findExecution(ctx.store, ctx.store.db, ctx.projectId, exec.id)
  }
  return null
}

/** The time a UUIDv7 was made (ms since the epoch): when a step execution began, on the writer's clock. */
function uuidTime(id: string): number {
  return Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)
}

/**
 * Resumes the WAITING executions of these events' contacts that wait for them (branch `event`). An event
 * resumes a wait only if it was recorded after the wait began (a late or repeated delivery of an older event
 * does not), and only once: the move is written at the version read.
 */
export async function resumeOnEvents(ctx: Ctx, events: EventRow[]): Promise<number> {
  const { store } = ctx
  const relevant = events.filter((e) => e.contactId)
  if (!relevant.length || !(await repo.hasWaitingExecution(store, ctx.projectId))) return 0
  const waiting = await repo.waitingFor(store, store.db, ctx.projectId, [...new Set(relevant.map((e) => e.contactId as string))], [...new Set(relevant.map((e) => e.name))])
  let resumed = 0
  for (const exec of waiting) {
    const since = exec.waitStepExecutionId ? uuidTime(exec.waitStepExecutionId) : 0
    const event = relevant.find((e) => e.contactId === exec.contactId && e.name === exec.waitEvent && e.id !== exec.triggerEventId && e.createdAt.getTime() >= since)
    if (!event || !exec.currentStepId || !exec.waitStepExecutionId) continue
    const graph = await loadGraph(ctx, exec.workflowId)
    const nextId = graph.next(exec.currentStepId, 'event')
    const now = ctx.deps.clock.date()
    const stepExecId = exec.waitStepExecutionId
    const moved = await commit(ctx, exec, nextId ? { status: 'RUNNING', currentStepId: nextId } : { status: 'COMPLETED', currentStepId: null }, now, async (db, m) => {
      await repo.updateStepExecution(store, db, ctx.projectId, stepExecId, {
        status: 'COMPLETED', finishedAt: now, output: { eventId: event.id, eventName: event.name, eventData: event.data },
      })
      if (nextId) await enqueueRun(ctx, db, m, now)
    })
    if (moved) resumed++
  }
  return resumed
}

/**
 * Starts executions of the enabled workflows these events trigger (tracked events and the service's own:
 * email.*, contact.subscribed/unsubscribed, segment.<slug>.entry/exit). One transaction for the batch; the
 * unique index on (workflow, trigger event) makes a repeated delivery, on any node, start nothing more.
 */
export async function startFromEvents(ctx: Ctx, events: EventRow[]): Promise<number> {
  const { store } = ctx
  const relevant = events.filter((e) => e.contactId)
  if (!relevant.length || !(await repo.hasEnabledWorkflow(store, ctx.projectId))) return 0
  const workflows = await repo.enabledTriggeredBy(store, store.db, ctx.projectId, [...new Set(relevant.map((e) => e.name))])
  if (!workflows.length) return 0
  const triggers = new Map((await repo.stepsOf(store, store.db, ctx.projectId, workflows.map((w) => w.id)))
    .filter((s) => s.type === 'TRIGGER').map((s) => [s.workflowId, s.id]))
  return store.tx(async (db) => {
    const started: repo.ExecutionRow[] = []
    for (const e of relevant) {
      for (const wf of workflows) {
        const triggerStepId = triggers.get(wf.id)
        if (wf.triggerEvent !== e.name || !triggerStepId) continue
        const context = { event: { id: e.id, name: e.name, data: e.data ?? {}, createdAt: e.createdAt.toISOString() } }
        const row = await createExecution(ctx, db, wf, triggerStepId, e.contactId as string, { context, triggerEventId: e.id, enqueue: false })
        if (row) started.push(row)
      }
    }
    // One job per 100 started executions (a job claim costs a commit; the runs of one job share theirs).
    const now = ctx.deps.clock.date()
    for (let i = 0; i < started.length; i += 100) await enqueueRuns(ctx, db, started.slice(i, i + 100), now)
    return started.length
  })
}

/**
 * The wake job's work: WAITING executions of every project whose DELAY is due or whose WAIT_FOR_EVENT timed
 * out at the engine clock's `now`, oldest due first, run RUN_CONCURRENCY at a time. Two nodes waking the same
 * execution is harmless: the move is written at the version read, once.
 */
export async function wakeDue(deps: Deps, ctxOf: (projectId: string) => Ctx, budgetMs = WAKE_BUDGET_MS): Promise<{ woken: number; lateMsMax: number }> {
  const clock = () => deps.clock.date()
  const started = Date.now()
  let woken = 0
  let lateMsMax = 0
  let round = 0
  // Rounds re-read the clock, so executions falling due meanwhile go on in this run, until none is due
  // (or the budget is spent: the job then ends and is queued again, and another node may take it).
  while (Date.now() - started < budgetMs) {
    const now = clock()
    const due = await repo.dueWaiting(deps.store, now, WAKE_BATCH)
    // RUNNING executions no run has moved for STALLED_MS: their job was lost (a run that failed after
    // moving on, a crash between two commits of a run whose job was then retried as stale).
    const stalled = round++ === 0 ? await repo.stalledRunning(deps.store, new Date(now.getTime() - STALLED_MS), WAKE_BATCH) : []
    if (!due.length && !stalled.length) {
      // The next wait ends within a second: wait for it here rather than for the next run of the job
      // (queued a second after this one ends, then claimed at the next poll), which would make it late.
      const next = await repo.nextDue(deps.store)
      const inMs = next ? next.getTime() - now.getTime() : Number.POSITIVE_INFINITY
      if (inMs > WAKE_LOOKAHEAD_MS || Date.now() - started + inMs >= budgetMs) break
      await Bun.sleep(Math.max(1, inMs))
      continue
    }
    const byProject = new Map<string, repo.ExecutionRow[]>()
    for (const e of due) byProject.set(e.projectId, [...(byProject.get(e.projectId) ?? []), e])
    for (const [projectId, execs] of byProject) {
      try {
        const ended = await endWaits(ctxOf(projectId), execs)
        woken += ended.length
        const at = clock().getTime()
        for (const e of ended) lateMsMax = Math.max(lateMsMax, at - (e.waitUntil?.getTime() ?? at))
      } catch (err) {
        // They stay WAITING and due: the next round (or run) takes them again.
        deps.log.warn('waking workflow executions failed', { projectId, executions: execs.length, ...errorFields(err) })
        if (!stalled.length) await Bun.sleep(50)
      }
    }
    await inPool(stalled, WAKE_CONCURRENCY, async (e) => {
      try {
        await runExecution(ctxOf(e.projectId), e.id, e.version)
        woken++
      } catch (err) {
        deps.log.warn('resuming a stalled workflow execution failed', { executionId: e.id, ...errorFields(err) })
      }
    })
  }
  return { woken, lateMsMax }
}

/**
 * Ends the due waits of one project's executions in ONE transaction (a DELAY, or a WAIT_FOR_EVENT that timed
 * out: waitEnd), each written at the version read, and queues the runs of those that go on, one job per
 * 100. Ending 10,000 delays due at once so costs 20 commits instead of one or more per execution, so they
 * run at their due time; the steps after them are the run jobs' work, on every worker.
 */
async function endWaits(ctx: Ctx, execs: repo.ExecutionRow[]): Promise<repo.ExecutionRow[]> {
  const graphs = new Map<string, Graph>()
  for (const id of new Set(execs.map((e) => e.workflowId))) graphs.set(id, await loadGraph(ctx, id))
  const now = ctx.deps.clock.date()
  return ctx.store.tx(async (db) => {
    const ended: repo.ExecutionRow[] = []
    const goOn: repo.ExecutionRow[] = []
    for (const exec of execs) {
      const graph = graphs.get(exec.workflowId)
      if (!graph || !exec.waitStepExecutionId || !exec.waitUntil || exec.waitUntil.getTime() > now.getTime()) continue
      const end = waitEnd(graph, exec, now)
      const moved = await repo.updateExecutionAt(ctx.store, db, ctx.projectId, exec.id, exec.version, moveFields(exec, end.move, now))
      if (!moved) continue
      await repo.updateStepExecution(ctx.store, db, ctx.projectId, end.stepExecutionId, end.step)
      ended.push(exec)
      if (moved.status === 'RUNNING') goOn.push(moved)
    }
    for (let i = 0; i < goOn.length; i += 100) await enqueueRuns(ctx, db, goOn.slice(i, i + 100), now)
    return ended
  })
}
