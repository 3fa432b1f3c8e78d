import { ctxFor, type Deps } from '../../deps'
import { AppError } from '../../errors'
import { defineJob, type AnyJob } from '../../jobs/queue'
import { fanOut, type FanOutOptions } from './fanout'
import {
  AB_WINNER_JOB, assertScheduledWithinCap, cancelAtCap, decideAbWinner, dueScheduledCampaigns, SCHEDULER_JOB, SEND_JOB, startSending, unscheduleOverCap,
} from './service'

/**
 * Background work of the campaigns module:
 * - `campaign.send`: the fan-out of one campaign (queued with SENDING, unique per campaign); a failed run is
 *   retried by the job queue and resumes from the campaign's checkpoint;
 * - `campaign.ab-winner`: an A/B test's winner when its wait ends, and the send to the rest;
 * - `campaigns.scheduler`: every few seconds, SCHEDULED campaigns whose time has come start sending. A time
 *   that passed while no worker ran is caught at the next run (the next boot).
 * A campaign whose audience would pass the project's monthly campaigns cap does not start: a scheduled
 * one goes back to DRAFT, and a fan-out that reaches the cap midway is CANCELLED (what was queued goes
 * out); both are logged with the reason (the cap, the usage).
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
      const ctx = jobCtx(deps, job.projectId, SEND_JOB)
      const result = await fanOut(ctx, payload.campaignId, {
        batchSize: opts.batchSize,
        sleep: opts.sleep,
        async afterBatch(b) {
          await progress(b.handled)
          await opts.afterBatch?.(b)
        },
      }).catch(async (err) => {
        if (!(err instanceof AppError) || err.code !== 'BILLING_LIMIT_EXCEEDED') throw err
        await cancelAtCap(ctx, payload.campaignId)
        deps.log.warn('campaign stopped at the monthly campaigns cap', { campaignId: payload.campaignId, projectId: ctx.projectId, reason: err.message })
        return { status: 'CANCELLED', reason: err.message }
      })
      return { ...result }
    },
  })
}

export const campaignSchedulerJob = defineJob({
  name: SCHEDULER_JOB,
  everyMs: SCHEDULER_EVERY_MS,
  async run({ deps }) {
    const due = await dueScheduledCampaigns(deps, deps.clock.date(), SCHEDULER_BATCH)
    let started = 0
    for (const c of due) {
      const ctx = jobCtx(deps, c.projectId, SCHEDULER_JOB)
      try {
        await assertScheduledWithinCap(ctx, c.id)
      } catch (err) {
        // Only the cap holds a campaign back here; any other fault of its audience is the fan-out's to
        // report, as before, and never stops the other campaigns of this run.
        if (err instanceof AppError && err.code === 'BILLING_LIMIT_EXCEEDED') {
          await unscheduleOverCap(ctx, c.id)
          deps.log.warn('scheduled campaign not started: it would pass the monthly campaigns cap', { campaignId: c.id, projectId: c.projectId, reason: err.message })
          continue
        }
        deps.log.warn('scheduled campaign: the cap check failed, starting it anyway', { campaignId: c.id, projectId: c.projectId, error: String(err) })
      }
      if (await startSending(ctx, c.id, ['SCHEDULED'])) started++
    }
    return { due: due.length, started }
  },
})

/** `campaign.ab-winner`: an A/B test's winner, chosen when its wait ends (queued with that run time). */
export const abWinnerJob = defineJob<SendPayload>({
  name: AB_WINNER_JOB,
  maxAttempts: 10,
  async run({ deps, job }, payload) {
    return decideAbWinner(jobCtx(deps, job.projectId, AB_WINNER_JOB), payload.campaignId)
  },
})

export const campaignJobs: AnyJob[] = [campaignSendJob(), campaignSchedulerJob, abWinnerJob]
