import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { deliverToConsumers } from './consumers'
import * as repo from './repo'

/**
 * The one event stream: tracked events and the service's own (email.*, contact.*, segment.*) are rows of
 * `events`. Segment conditions (src/filters) and the activity feed read it; listeners registered with
 * `onEvents` are told after the rows commit (today the segment recompute hints, segments/jobs.ts).
 */
export interface NewEvent {
  contactId: string | null
  name: string
  data?: Record<string, unknown>
  emailId?: string | null
  createdAt?: Date
}

export type EventRow = typeof import('../../db/schema').pgSchema.events.$inferSelect

export type EventListener = (ctx: Ctx, events: EventRow[]) => Promise<void> | void

const listeners: EventListener[] = []

/** Registers a listener called after events are committed. Returns an unsubscribe function. */
export function onEvents(fn: EventListener): () => void {
  listeners.push(fn)
  return () => { const i = listeners.indexOf(fn); if (i >= 0) listeners.splice(i, 1) }
}

/**
 * The row of a new event of `projectId`, created at `now` unless the event says when. `id` is given for an
 * event already written under it (by the track writer thread, writer.ts), and new otherwise.
 */
export function eventRow(projectId: string, now: Date, e: NewEvent, id: string = Bun.randomUUIDv7()): EventRow {
  return { id, projectId, contactId: e.contactId, name: e.name, data: e.data ?? {}, emailId: e.emailId ?? null, createdAt: e.createdAt ?? now }
}

/**
 * Appends events inside the caller's transaction `db` (so they commit with the change that caused them)
 * and returns the rows. Call `notifyEvents` after the transaction commits.
 */
export async function appendEvents(ctx: Pick<Ctx, 'store' | 'projectId' | 'now'>, db: Db, events: NewEvent[]): Promise<EventRow[]> {
  if (!events.length) return []
  const rows = events.map((e) => eventRow(ctx.projectId, ctx.now, e))
  await repo.insertEvents(ctx.store, db, rows)
  return rows
}

/** Tells listeners about committed events; a failing listener is logged, never thrown to the caller. */
export async function notifyEvents(ctx: Ctx, rows: EventRow[]): Promise<void> {
  if (!rows.length) return
  for (const fn of listeners) {
    try { await fn(ctx, rows) } catch (err) { ctx.deps.log.error('event listener failed', { error: String(err) }) }
  }
  deliverToConsumers(ctx, rows)
}
