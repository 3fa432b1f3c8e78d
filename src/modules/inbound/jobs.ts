import { defineJob } from '../../jobs/queue'
import { errorFields } from '../../log'
import { giveUpInbound, INBOUND_JOB, processInbound, pruneInboundMessages } from './service'

/** Processes one stored inbound message (service.ts); after its last attempt fails, the message is marked failed. */
export const inboundProcessJob = defineJob<{ inboundId: string }>({
  name: INBOUND_JOB,
  maxAttempts: 5,
  async run(ctx, payload) {
    try {
      const r = await processInbound(ctx.deps, payload.inboundId)
      return r ? { status: r.status, kind: r.kind, emailId: r.emailId } : { status: 'skipped' }
    } catch (err) {
      ctx.deps.log.error('inbound processing failed', { inboundId: payload.inboundId, attempt: ctx.job.attempts, ...errorFields(err) })
      if (ctx.job.attempts >= ctx.job.maxAttempts) await giveUpInbound(ctx.deps, payload.inboundId, err)
      throw err
    }
  },
})

/** Deletes finished inbound messages past their retention, once a day. */
export const inboundPruneJob = defineJob({
  name: 'inbound.prune',
  everyMs: 24 * 3600_000,
  async run(ctx) {
    return { deleted: await pruneInboundMessages(ctx.deps) }
  },
})

export const inboundJobs = [inboundProcessJob, inboundPruneJob]
