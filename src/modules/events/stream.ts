import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import * as repo from './repo'

/**
 * The one event stream (ROADMAP): tracked events and the service's own (email.*, contact.*, segment.*)
 * are rows of `events`. Workflows, segments and the activity feed read it; listeners registered here
 * are told after the rows commit (the workflow trigger hook, segment recompute hints).
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
 * Appends events inside the caller's transaction `db` (so they commit with the change that caused them)
 * and returns the rows. Call `notifyEvents` after the transaction commits.
 */
export async function appendEvents(ctx: Pick<Ctx, 'store' | 'projectId' | 'now'>, db: Db, events: NewEvent[]): Promise<EventRow[]> {
  if (!events.length) return []
  const rows: EventRow[] = events.map((e) => ({
    id: Bun.randomUUIDv7(),
    projectId: ctx.projectId,
    contactId: e.contactId,
    name: e.name,
    data: e.data ?? {},
    emailId: e.emailId ?? null,
    createdAt: e.createdAt ?? ctx.now,
  }))
  await repo.insertEvents(ctx.store, db, rows)
  return rows
}

/** Tells listeners about committed events; a failing listener is logged, never thrown to the caller. */
export async function notifyEvents(ctx: Ctx, rows: EventRow[]): Promise<void> {
  if (!rows.length) return
  for (const fn of listeners) {
    try { await fn(ctx, rows) } catch (err) { ctx.deps.log.error('event listener failed', { error: String(err) }) }
  }
}
