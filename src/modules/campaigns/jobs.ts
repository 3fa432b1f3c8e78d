import { ctxFor, type Deps } from '../../deps'
import { defineJob, type AnyJob } from '../../jobs/queue'
import { fanOut, type FanOutOptions } from './fanout'
import * as repo from './repo'
import { SCHEDULER_JOB, SEND_JOB, startSending } from './service'

/**
 * Background work of the campaigns module:
 * - `campaign.send`: the fan-out of one campaign (queued with SENDING, unique per campaign); a failed run is
 *   retried by the job queue and resumes from the campaign's checkpoint;
 * - `campaigns.scheduler`: every few seconds, SCHEDULED campaigns whose time has come start sending. A time
 *   that passed while no worker ran is caught at the next run (the next boot).
 */
export const SCHEDULER_EVERY_MS = 5_000
/** Campaigns started per scheduler run (the rest at the next run). */
const SCHEDULER_BATCH = 100

interface SendPayload { campaignId: string }

function jobCtx(deps: Deps, projectId: string | null, name: string) {
  if (!projectId) throw new Error(`${name} job without a project`)
  return ctxFor(deps, projectId, { kind: 'job', name })
}

/** The fan-out job; the options are for tests (batch size, a hook after each batch). */
export function campaignSendJob(opts: FanOutOptions = {}) {
  return defineJob<SendPayload>({
    name: SEND_JOB,
    maxAttempts: 10,
    leaseMs: 5 * 60_000,
    async run({ deps, job, progress }, payload) {
      const result = await fanOut(jobCtx(deps, job.projectId, SEND_JOB), payload.campaignId, {
        batchSize: opts.batchSize,
        sleep: opts.sleep,
        async afterBatch(b) {
          await progress(b.handled)
          await opts.afterBatch?.(b)
        },
      })
      return { ...result }
    },
  })
}

export const campaignSchedulerJob = defineJob({
  name: SCHEDULER_JOB,
  everyMs: SCHEDULER_EVERY_MS,
  async run({ deps }) {
    const due = await repo.dueScheduled(deps.store, new Date(), SCHEDULER_BATCH)
    let started = 0
    for (const c of due) {
      if (await startSending(jobCtx(deps, c.projectId, SCHEDULER_JOB), c.id, ['SCHEDULED'])) started++
    }
    return { due: due.length, started }
  },
})

export const campaignJobs: AnyJob[] = [campaignSendJob(), campaignSchedulerJob]
