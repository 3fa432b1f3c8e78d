import type { Ctx } from '../../deps'
import { ctxFor } from '../../deps'
import { notFound } from '../../errors'
import { defineJob, enqueue, getJob } from '../../jobs/queue'
import { appendEvents, notifyEvents } from '../events/stream'
import { jobRecord, type ImportResult } from './import'
import * as repo from './repo/contact'
import { subscriptionEvent } from './service'

/**
 * Bulk subscribe / unsubscribe / delete of up to 1,000 contacts by id (docs/decisions.md, Limits), queued as one
 * `contacts.bulk` job and processed in one transaction. Result (docs/decisions.md, Job records): `updated` =
 * contacts changed (or deleted), `skipped` = already in the asked state, `failed` = ids not found in the
 * project, each named in `errors` (`row` = its 1-based position in `contactIds`).
 */

export const BULK_JOB = 'contacts.bulk'
export type BulkAction = 'subscribe' | 'unsubscribe' | 'delete'
export const MAX_BULK = 1000

export async function queueBulk(ctx: Ctx, action: BulkAction, contactIds: string[]) {
  const ids = [...new Set(contactIds)]
  const jobId = await enqueue(ctx.store, BULK_JOB, { action, contactIds: ids }, { projectId: ctx.projectId, total: ids.length, maxAttempts: 5 })
  if (!jobId) throw new Error(`the ${BULK_JOB} job was not queued`)
  return { jobId, status: 'queued' as const }
}

export async function getBulkJob(ctx: Ctx, jobId: string) {
  const job = await getJob(ctx.store, ctx.projectId, jobId, [BULK_JOB])
  if (!job) throw notFound('bulk job')
  const action = (job.payload as { action?: string }).action ?? 'unknown'
  return jobRecord(job, `bulk-${action}`)
}

export async function runBulk(ctx: Ctx, action: BulkAction, ids: string[]): Promise<ImportResult> {
  const result: ImportResult = { created: 0, updated: 0, skipped: 0, failed: 0, errors: [] }
  const events = await ctx.store.tx(async (db) => {
    const found = new Set((await repo.findByIds(ctx.store, db, ctx.projectId, ids, true)).map((r) => r.id))
    ids.forEach((id, i) => {
      if (!found.has(id)) { result.failed++; result.errors.push({ row: i + 1, message: `Contact ${id} not found` }) }
    })
    const present = ids.filter((id) => found.has(id))
    if (action === 'delete') {
      result.updated = (await repo.deleteByIds(ctx.store, db, ctx.projectId, present)).length
      return []
    }
    const subscribed = action === 'subscribe'
    const changed = await repo.setSubscribed(ctx.store, db, ctx.projectId, present, subscribed, new Date())
    result.updated = changed.length
    result.skipped = present.length - changed.length
    return appendEvents(ctx, db, changed.map((id) => subscriptionEvent(id, subscribed)))
  })
  await notifyEvents(ctx, events)
  return result
}

export const bulkJob = defineJob<{ action: BulkAction; contactIds: string[] }>({
  name: BULK_JOB,
  maxAttempts: 5,
  async run(jc, payload) {
    const projectId = jc.job.projectId
    if (!projectId) throw new Error('bulk job without a project')
    const ctx = ctxFor(jc.deps, projectId, { kind: 'job', name: BULK_JOB })
    const result = await runBulk(ctx, payload.action, payload.contactIds)
    await jc.progress(payload.contactIds.length, payload.contactIds.length)
    return { ...result }
  },
})

