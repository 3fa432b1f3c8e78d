import { ctxFor } from '../../deps'
import { defineJob, type AnyJob } from '../../jobs/queue'
import { RUN_JOB, runExecution, type RunPayload } from './engine'

/**
 * `workflow.run`: runs one execution from the version it was queued for (engine.ts). Queued when an
 * execution starts, when a DELAY or a WAIT_FOR_EVENT timeout is due (runAt), and when an event resumes a
 * wait. A crash mid-run leaves the job leased; the next holder resumes from the last committed step.
 */
export const workflowRunJob = defineJob<RunPayload>({
  name: RUN_JOB,
  maxAttempts: 8,
  leaseMs: 60_000,
  backoffMs: (attempt) => Math.min(60_000, 500 * 2 ** attempt),
  async run({ deps, job }, payload) {
    if (!job.projectId) throw new Error(`${RUN_JOB} job without a project`)
    const ctx = ctxFor(deps, job.projectId, { kind: 'job', name: RUN_JOB })
    return { ...(await runExecution(ctx, payload.executionId, payload.version)) }
  },
})

export const workflowJobs: AnyJob[] = [workflowRunJob]
