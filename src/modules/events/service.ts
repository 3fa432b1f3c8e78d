import type { Ctx } from '../../deps'
import { decodeTimeCursor, encodeTimeCursor } from '../cursor'
import { invalidField, notFound } from '../../errors'
import { checkDataLimits } from '../contacts/data'
import * as contactsRepo from '../contacts/repo/contact'
import { clampLimit } from '../contacts/service'
import { eventUsage } from '../contacts/usage'
import { idempotencyClaim, keepFailed, keyReused, type Claim } from '../idempotency/service'
import type { ListEventsQuery, TrackBody } from './model'
import * as repo from './repo'
import { notifyEvents } from './stream'
import { reconfirmKey, StaleKeyError, TRACK_KEYS, type KeyConfirm } from '../projects/service'
import { trackBatch, type TrackOutcome, type TrackReused, type TrackWrite } from './track-write'

/**
 * Names the service emits itself (docs/decisions.md, Events the service emits), refused on track. Compared
 * case-insensitively so that "Email.Sent" cannot pass for a service event either.
 */
export function isReservedEventName(name: string): boolean {
  const n = name.trim().toLowerCase()
  return n.startsWith('email.') || n === 'contact.subscribed' || n === 'contact.unsubscribed' || /^segment\..+\.(entry|exit)$/.test(n)
}

function assertTrackable(name: string) {
  if (isReservedEventName(name)) {
    throw invalidField('event', `"${name}" is reserved for events the service emits (email.*, contact.subscribed, contact.unsubscribed, segment.<slug>.entry/exit)`, 'reserved_event', name)
  }
}

/**
 * Upserts the contact (new contacts subscribed unless `subscribed: false`; existing keep their state
 * unless given) and appends the event, in one transaction (with the claim of the Idempotency-Key, if
 * any): on a file-backed SQLite database on the track writer thread (writer.ts), elsewhere grouped with
 * concurrent tracks (db/group-commit.ts), written a batch at a time (track-write.ts, trackBatch). Returns after
 * commit (the outbox row commits with it); drainers are not yet woken.
 */
export async function recordTrack(ctx: Ctx, body: TrackBody, claim: Claim | null = null, confirm?: KeyConfirm): Promise<TrackOutcome | TrackReused> {
  // Here, before the write goes to the track writer thread: a 422, not a 500 (see writeTrack).
  checkDataLimits(body.data)
  const input: TrackWrite = { email: body.email, event: body.event, subscribed: body.subscribed, data: body.data, claim }
  const { trackWriter, commits } = ctx.deps.runtime
  // A key to confirm (answered from memory, projectForKeyConfirmedInWrite) is confirmed by the batch below:
  // it never comes with the track writer thread's store (SQLite, whose key cache is exact).
  if (trackWriter && !confirm) return trackWriter.write(ctx.projectId, ctx.now, input)
  const job = { ctx: { store: ctx.store, projectId: ctx.projectId, now: ctx.now }, write: input }
  if (!confirm) return commits.runMany(trackBatch, job)
  try {
    return await commits.runMany(trackBatch, { ...job, write: { ...input, confirm } })
  } catch (err) {
    if (!(err instanceof StaleKeyError)) throw err
    // Nothing was written. The key afresh: its 401 or 403, or the track again as a first request's.
    await reconfirmKey(ctx.store, err.key, TRACK_KEYS)
    return commits.runMany(trackBatch, job)
  }
}

/**
 * POST /v1/track and /events/track. Reserved names answer 422 (field code reserved_event), `data` beyond
 * the limits of contacts/data.ts 422 (too_deep, too_big). With an
 * Idempotency-Key, the key is claimed in the track's own transaction: a key already used answers 409 and
 * nothing is performed again (a failed track keeps the key only on a 5xx). Committed events go to the
 * event consumers, through the outbox (outbox.ts).
 */
export async function track(ctx: Ctx, body: TrackBody, idempotencyKey: string | undefined, path: string, confirm?: KeyConfirm) {
  assertTrackable(body.event)
  const claim = idempotencyClaim(ctx, idempotencyKey, { method: 'POST', path, body })
  let out: TrackOutcome | TrackReused
  try {
    out = await recordTrack(ctx, body, claim, confirm)
  } catch (err) {
    if (claim) await keepFailed(ctx, claim, err)
    throw err
  }
  if (out.reused) {
    if (!claim) throw new Error('track: a reused idempotency key without a claim')
    throw keyReused(claim, out.reused)
  }
  await notifyEvents(ctx, out.events)
  return { success: true as const, data: { contact: out.contactId, event: out.event.id, timestamp: out.event.createdAt.toISOString() } }
}

// ---------------------------------------------------------------------------------------------------
// Reading

export function toEvent(row: repo.EventWithContact) {
  return {
    id: row.id,
    name: row.name,
    contactId: row.contactId,
    contact: row.contactId && row.contactEmail ? { id: row.contactId, email: row.contactEmail } : null,
    data: row.data ?? {},
    emailId: row.emailId,
    createdAt: row.createdAt.toISOString(),
  }
}


async function page(ctx: Ctx, filter: repo.EventFilter, q: { limit?: number; cursor?: string }, defaultLimit: number) {
  const limit = clampLimit(q.limit, defaultLimit)
  const after = q.cursor ? decodeTimeCursor(q.cursor) : null
  const [rows, total] = await Promise.all([
    repo.listPage(ctx.store, ctx.projectId, filter, limit + 1, after),
    after ? Promise.resolve(0) : repo.countEvents(ctx.store, ctx.projectId, filter),
  ])
  const hasMore = rows.length > limit
  const data = hasMore ? rows.slice(0, limit) : rows
  const last = data[data.length - 1]
  return { data: data.map(toEvent), cursor: hasMore && last ? encodeTimeCursor({ at: last.createdAt.getTime(), id: last.id }) : null, hasMore, total }
}

/** GET /events: the project's events, newest first (cursor list), optionally by name or contact. */
export function listEvents(ctx: Ctx, q: ListEventsQuery) {
  return page(ctx, { name: q.name || undefined, contactId: q.contactId || undefined }, q, 20)
}

/** GET /events/contact/:contactId: every event of one contact, newest first (cursor list, 100 per page). */
export async function contactEvents(ctx: Ctx, contactId: string, q: { limit?: number; cursor?: string }) {
  const contact = await contactsRepo.findById(ctx.store, ctx.store.db, ctx.projectId, contactId)
  if (!contact) throw notFound('contact')
  return page(ctx, { contactId }, q, 100)
}

/** GET /events/stats. */
export async function eventStats(ctx: Ctx, q: { days?: number }) {
  const days = Math.max(1, Math.min(365, Math.trunc(q.days ?? 30) || 30))
  const since = new Date(ctx.deps.clock.now() - days * 86_400_000)
  const [totalEvents, period] = await Promise.all([repo.countEvents(ctx.store, ctx.projectId), repo.periodStats(ctx.store, ctx.projectId, since)])
  return { totalEvents, periodDays: days, since: since.toISOString(), ...period }
}

/** GET /events/names: distinct names with counts, most frequent first. */
export async function eventNames(ctx: Ctx) {
  const rows = await repo.names(ctx.store, ctx.projectId)
  return { data: rows.map((r) => ({ name: r.name, count: r.count, lastSeenAt: r.lastSeenAt.toISOString(), reserved: isReservedEventName(r.name) })) }
}

/** GET /events/:eventName/usage: stored count plus segments, campaigns and workflows referencing the name. */
export async function eventNameUsage(ctx: Ctx, eventName: string) {
  const [n, usage] = await Promise.all([repo.countEvents(ctx.store, ctx.projectId, { name: eventName }), eventUsage(ctx, eventName)])
  if (!n && !usage.inUse) throw notFound('event')
  return { eventName, count: n, ...usage }
}

/** DELETE /events/:eventName: deletes every event with that name (service events are kept: 422). */
export async function deleteEventName(ctx: Ctx, eventName: string) {
  if (isReservedEventName(eventName)) {
    throw invalidField('eventName', `"${eventName}" is an event the service emits; its records cannot be deleted`, 'reserved_event', eventName)
  }
  const deleted = await ctx.store.tx((db) => repo.deleteByName(ctx.store, db, ctx.projectId, eventName))
  if (!deleted) throw notFound('event')
  return { eventName, deleted }
}
