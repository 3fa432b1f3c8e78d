import type { Ctx } from '../../deps'
import { ctxFor } from '../../deps'
import { badRequest, invalidField, notFound, validation } from '../../errors'
import { defineJob, enqueue, getJob } from '../../jobs/queue'
import { appendEvents, notifyEvents, type EventRow } from '../events/stream'
import { addMemberIds, removeMemberIds, staticSegmentOf } from '../segments/service'
import { applyDataRules, RESERVED_DATA_KEYS } from './data'
import { FIELD_JOB, STANDARD_FIELDS } from './fields'
import { jobRecord, type ImportResult } from './import'
import type { BulkActionBody, ContactFilter } from './model'
import { filterWhere } from './query'
import * as repo from './repo/contact'
import * as queryRepo from './repo/query'
import { subscriptionEvent } from './service'

/**
 * Bulk actions as one `contacts.bulk` job (docs/decisions.md, Limits and Contacts bulk actions):
 * subscribe, unsubscribe, delete, add to / remove from a STATIC segment, set a custom field, on a selection
 * of up to 1,000 contact ids or on every contact a filter matches (POST /contacts/bulk). A selection is
 * one transaction; a filter is walked in id order, BULK_BATCH contacts per transaction, the job's progress
 * written after each, and matched when the job runs (contacts that stop matching halfway are not touched
 * again). Result (docs/decisions.md, Job records): `updated` = contacts changed (or deleted), `skipped` =
 * already in the asked state, `failed` = ids not found in the project, each named in `errors` (`row` = its
 * 1-based position in `contactIds`).
 */

export const BULK_JOB = 'contacts.bulk'
export type BulkAction = BulkActionBody['action']
const BULK_BATCH = 1000
const MAX_REPORTED_ERRORS = 1000

export interface BulkOptions { segmentId?: string; field?: string; value?: string | number | boolean | null }

interface BulkPayload extends BulkOptions {
  action: BulkAction
  contactIds?: string[]
  filter?: ContactFilter
}

/** The legacy endpoints (bulk-subscribe, bulk-unsubscribe, bulk-delete) by ids. */
export async function queueBulk(ctx: Ctx, action: 'subscribe' | 'unsubscribe' | 'delete', contactIds: string[]) {
  return queueBulkAction(ctx, { action, contactIds })
}

function checkField(field: string | undefined): string {
  if (!field) throw invalidField('field', 'field is required for setField', 'required')
  if (RESERVED_DATA_KEYS.has(field) || STANDARD_FIELDS.some((f) => f.name === field)) {
    throw invalidField('field', `${field} is a standard or reserved name, not a custom field`, 'reserved_field', field)
  }
  return field
}

/** POST /contacts/bulk: checks the action's arguments and the filter now (422 / 404), then queues the job. */
export async function queueBulkAction(ctx: Ctx, body: BulkActionBody) {
  if ((body.contactIds === undefined) === (body.filter === undefined)) {
    throw validation([{ field: 'contactIds', message: 'Give either contactIds (a selection) or filter (every match)', code: 'one_of' }], 'Give either contactIds or filter')
  }
  const payload: BulkPayload = { action: body.action }
  if (body.action === 'addToSegment' || body.action === 'removeFromSegment') {
    if (!body.segmentId) throw invalidField('segmentId', `segmentId is required for ${body.action}`, 'required')
    await staticSegmentOf(ctx, body.segmentId)
    payload.segmentId = body.segmentId
  }
  if (body.action === 'setField') {
    payload.field = checkField(body.field)
    if (body.value === undefined) throw invalidField('value', 'value is required for setField (null removes the field)', 'required')
    payload.value = body.value
  }
  let total: number
  if (body.contactIds) {
    payload.contactIds = [...new Set(body.contactIds)]
    total = payload.contactIds.length
  } else {
    const filter = body.filter ?? {}
    const where = await filterWhere(ctx, filter, 'filter.condition')
    total = await queryRepo.total(ctx.store, where)
    payload.filter = filter
  }
  const jobId = await enqueue(ctx.store, BULK_JOB, { ...payload }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, total, maxAttempts: 5 })
  if (!jobId) throw new Error(`the ${BULK_JOB} job was not queued`)
  return { jobId, status: 'queued' as const, total }
}

export async function getBulkJob(ctx: Ctx, jobId: string) {
  const job = await getJob(ctx.store, ctx.projectId, jobId, [BULK_JOB, FIELD_JOB])
  if (!job) throw notFound('bulk job')
  if (job.name === FIELD_JOB) return jobRecord(job, `field-${(job.payload as { op?: string }).op ?? 'unknown'}`)
  const action = (job.payload as { action?: string }).action ?? 'unknown'
  return jobRecord(job, `bulk-${action}`)
}

function emptyResult(): ImportResult {
  return { created: 0, updated: 0, skipped: 0, failed: 0, errors: [] }
}

/** Applies `action` to the contacts `ids` in one transaction; ids not in the project are reported from `rowBase` + 1. */
export async function runBulk(ctx: Ctx, action: BulkAction, ids: string[], opts: BulkOptions = {}, result: ImportResult = emptyResult(), rowBase = 0): Promise<ImportResult> {
  const events = await ctx.store.tx(async (db): Promise<EventRow[]> => {
    const rows = await repo.findByIds(ctx.store, db, ctx.projectId, ids, true)
    const found = new Set(rows.map((r) => r.id))
    ids.forEach((id, i) => {
      if (found.has(id)) return
      result.failed++
      if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ row: rowBase + i + 1, message: `Contact ${id} not found` })
    })
    const present = ids.filter((id) => found.has(id))
    const now = new Date()
    if (action === 'delete') {
      result.updated += (await repo.deleteByIds(ctx.store, db, ctx.projectId, present)).length
      return []
    }
    if (action === 'addToSegment' || action === 'removeFromSegment') {
      const segmentId = opts.segmentId ?? ''
      const r = action === 'addToSegment'
        ? await addMemberIds(ctx, db, segmentId, present, now)
        : await removeMemberIds(ctx, db, segmentId, present, now)
      result.updated += r.changed
      result.skipped += present.length - r.changed
      return r.events
    }
    if (action === 'setField') {
      const field = opts.field ?? ''
      const changed = []
      for (const row of rows) {
        const patch = applyDataRules(row.data ?? {}, { [field]: opts.value ?? null })
        if (patch.changed) changed.push({ ...row, data: patch.data, updatedAt: now })
      }
      await repo.saveStates(ctx.store, db, changed)
      result.updated += changed.length
      result.skipped += present.length - changed.length
      return []
    }
    const subscribed = action === 'subscribe'
    const changed = await repo.setSubscribed(ctx.store, db, ctx.projectId, present, subscribed, now)
    result.updated += changed.length
    result.skipped += present.length - changed.length
    return appendEvents(ctx, db, changed.map((id) => subscriptionEvent(id, subscribed)))
  })
  await notifyEvents(ctx, events)
  return result
}

export const bulkJob = defineJob<BulkPayload>({
  name: BULK_JOB,
  maxAttempts: 5,
  leaseMs: 120_000,
  async run(jc, payload) {
    const projectId = jc.job.projectId
    if (!projectId) throw new Error('bulk job without a project')
    const ctx = ctxFor(jc.deps, projectId, { kind: 'job', name: BULK_JOB })
    const opts: BulkOptions = { segmentId: payload.segmentId, field: payload.field, value: payload.value }
    if (payload.contactIds) {
      const result = await runBulk(ctx, payload.action, payload.contactIds, opts)
      await jc.progress(payload.contactIds.length, payload.contactIds.length)
      return { ...result }
    }
    // Every match of the filter, in id order, one transaction per batch.
    const where = await filterWhere(ctx, payload.filter ?? {}, 'filter.condition').catch((err: unknown) => {
      throw badRequest(`The filter of this job no longer applies: ${(err as Error).message}`)
    })
    const result = emptyResult()
    let total = jc.job.total
    let processed = 0
    let after = ''
    for (;;) {
      const ids = await queryRepo.idsAfter(ctx.store, where, after, BULK_BATCH)
      if (!ids.length) break
      await runBulk(ctx, payload.action, ids, opts, result, processed)
      processed += ids.length
      after = ids[ids.length - 1]
      total = Math.max(total, processed)
      await jc.progress(processed, total)
      if (ids.length < BULK_BATCH) break
    }
    await jc.progress(processed, processed)
    return { ...result }
  },
})
