import { ctxFor } from '../../deps'
import { defineJob, type AnyJob } from '../../jobs/queue'
import { inPool, RUN_CONCURRENCY, RUN_JOB, runExecution, WAKE_JOB, wakeDue, type RunPayload } from './engine'

/**
 * Background work of the workflow engine (engine.ts):
 * - `workflow.run`: runs executions from the version each was queued at; queued when executions start (one
 *   job per batch of a trigger's executions) and when an event resumes a wait. A crash mid-run leaves the
 *   job leased; the next holder resumes each execution from its last committed step.
 * - `workflows.wake`: every second, the WAITING executions whose DELAY is due or whose WAIT_FOR_EVENT timed
 *   out (the due index of workflow_executions) go on: their waits end in batches (engine.ts endWaits) that
 *   queue `workflow.run` jobs for the steps after. A time that passed while no worker ran is caught at
 *   the next run (the next boot).
 */
export const WAKE_EVERY_MS = 1000

export const workflowRunJob = defineJob<RunPayload & { executionId?: string; version?: number }>({
  name: RUN_JOB,
  maxAttempts: 8,
  leaseMs: 60_000,
  backoffMs: (attempt) => Math.min(60_000, 500 * 2 ** attempt),
  async run({ deps, job }, payload) {
    const projectId = job.projectId
    if (!projectId) throw new Error(`${RUN_JOB} job without a project`)
    const ctx = ctxFor(deps, projectId, { kind: 'job', name: RUN_JOB })
    const runs = payload.runs ?? (payload.executionId ? [{ executionId: payload.executionId, version: payload.version ?? 0 }] : [])
    const errors: unknown[] = []
    let steps = 0
    await inPool(runs, RUN_CONCURRENCY, async (r) => {
      try { steps += (await runExecution(ctx, r.executionId, r.version, { orLater: job.attempts > 1 })).steps } catch (err) { errors.push(err) }
    })
    // A failed run is retried with the whole job; the retry also takes over executions its attempt moved
    // on (still RUNNING); the others are stale then and do nothing.
    if (errors.length) throw errors[0]
    return { executions: runs.length, steps }
  },
})

export const workflowWakeJob = defineJob({
  name: WAKE_JOB,
  everyMs: WAKE_EVERY_MS,
  leaseMs: 60_000,
  async run({ deps }) {
    return { ...(await wakeDue(deps, (projectId) => ctxFor(deps, projectId, { kind: 'job', name: WAKE_JOB }))) }
  },
})

export const workflowJobs: AnyJob[] = [workflowRunJob, workflowWakeJob]
