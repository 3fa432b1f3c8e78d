import { ctxFor, type Ctx } from '../../deps'
import { defineJob, enqueue, type AnyJob } from '../../jobs/queue'
import type { EventConsumer } from '../events/consumers'
import type { EventRow } from '../events/stream'
import * as repo from './repo'
import { COMPUTE_JOB, REFRESH_JOB, computeKey, prepareStored, recomputeById, refreshKey } from './service'

/**
 * Background work of the segments module:
 * - every 5 minutes a sweep queues one job per segment: tracked DYNAMIC segments are recomputed (member rows
 *   and entry/exit events), the others get a fresh memberCount;
 * - soon after an event that can change a tracked segment (an event its condition names, or any write to
 *   contacts: tracking, sending and subscription changes all put an event on the stream), a debounced
 *   compute job is queued for that segment.
 */
export const SWEEP_EVERY_MS = 5 * 60_000
/** How long a hint waits, so that a burst of events costs one recompute. */
export const HINT_DELAY_MS = 10_000
/** How long the list of a project's tracked segments (and what they read) is reused by the hint listener. */
const HINT_CACHE_MS = 10_000

interface SegmentPayload { segmentId: string }

const jobCtx = (deps: Parameters<typeof ctxFor>[0], projectId: string | null, name: string): Ctx => {
  if (!projectId) throw new Error(`${name} job without a project`)
  return ctxFor(deps, projectId, { kind: 'job', name })
}

export const segmentJobs: AnyJob[] = [
  defineJob({
    name: 'segments.sweep',
    everyMs: SWEEP_EVERY_MS,
    async run({ deps }) {
      const all = await repo.allSegmentsForSweep(deps.store)
      let queued = 0
      for (const s of all) {
        const compute = s.type === 'DYNAMIC' && s.trackMembership
        const id = await enqueue(deps.store, compute ? COMPUTE_JOB : REFRESH_JOB, { segmentId: s.id }, {
          wake: deps, now: deps.clock.date(), projectId: s.projectId, uniqueKey: compute ? computeKey(s.id) : refreshKey(s.id), maxAttempts: 3,
        })
        if (id) queued++
      }
      return { segments: all.length, queued }
    },
  }),
  defineJob<SegmentPayload>({
    name: COMPUTE_JOB,
    maxAttempts: 3,
    leaseMs: 10 * 60_000,
    async run({ deps, job }, payload) {
      return recomputeById(jobCtx(deps, job.projectId, COMPUTE_JOB), payload.segmentId)
    },
  }),
  defineJob<SegmentPayload>({
    name: REFRESH_JOB,
    maxAttempts: 3,
    async run({ deps, job }, payload) {
      return recomputeById(jobCtx(deps, job.projectId, REFRESH_JOB), payload.segmentId)
    },
  }),
]

// ---- recompute hints ----

interface TrackedDeps { id: string; events: Set<string>; contacts: boolean }
/** Per project: the tracked segments, as a promise so that concurrent events share one look-up. */
const depsCache = new Map<string, { at: number; segments: Promise<TrackedDeps[]> }>()
const lastHint = new Map<string, number>()

function trackedDeps(ctx: Ctx): Promise<TrackedDeps[]> {
  const hit = depsCache.get(ctx.projectId)
  if (hit && Date.now() - hit.at < HINT_CACHE_MS) return hit.segments
  const entry = { at: Date.now(), segments: loadTrackedDeps(ctx) }
  depsCache.set(ctx.projectId, entry)
  // A failed look-up is not cached: the next event tries again.
  entry.segments.catch(() => { if (depsCache.get(ctx.projectId) === entry) depsCache.delete(ctx.projectId) })
  return entry.segments
}

async function loadTrackedDeps(ctx: Ctx): Promise<TrackedDeps[]> {
  const segments: TrackedDeps[] = []
  for (const seg of await repo.trackedDynamic(ctx.store, ctx.projectId)) {
    const f = await prepareStored(ctx, seg)
    segments.push({ id: seg.id, events: f.deps.events, contacts: f.deps.contacts })
  }
  return segments
}

async function hint(ctx: Ctx, rows: EventRow[]): Promise<void> {
  const segments = await trackedDeps(ctx)
  if (!segments.length) return
  const names = new Set(rows.map((r) => r.name))
  // Every event but the service's segment.* ones comes with a write of its contact (track, send, subscription).
  const contactsTouched = rows.some((r) => !r.name.startsWith('segment.'))
  const now = Date.now()
  for (const s of segments) {
    const affected = (s.contacts && contactsTouched) || [...s.events].some((n) => names.has(n))
    if (!affected) continue
    if (now - (lastHint.get(s.id) ?? 0) < HINT_DELAY_MS) continue
    lastHint.set(s.id, now)
    await enqueue(ctx.store, COMPUTE_JOB, { segmentId: s.id }, {
      wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, uniqueKey: computeKey(s.id), runAt: new Date(ctx.deps.clock.now() + HINT_DELAY_MS), maxAttempts: 3,
    })
  }
  if (lastHint.size > 10_000) for (const [id, at] of lastHint) if (now - at > HINT_DELAY_MS) lastHint.delete(id)
}

/**
 * The event consumer of the recompute hints, registered by `wireConsumers` (src/main.ts): the outbox
 * (events/outbox.ts) hands it committed events; a failure (the look-up, the enqueue) is retried there.
 */
export const segmentHintConsumer: EventConsumer = {
  name: 'segments.hints',
  // A tracked DYNAMIC segment (trackedDeps).
  interest: repo.TRACKED_SEGMENT_SQL,
  async handle(ctx, rows) {
    if (rows.length) await hint(ctx, rows)
  },
}

/** Forgets cached segment lists (tests that change segments and expect the next hint to see it at once). */
export function forgetSegmentHintCache(): void {
  depsCache.clear()
  lastHint.clear()
}
