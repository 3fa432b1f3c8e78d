import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import { carriesBase, storedData, type EmailBase } from './email-base'
import { owedToConsumers, recordOutbox, wakeOutbox } from './outbox'
import * as repo from './repo'

/**
 * The one event stream: tracked events and the service's own (email.*, contact.*, segment.*) are rows of
 * `events`. Segment conditions (src/filters) and the activity feed read it; the event consumers
 * (consumers.ts: segment recompute hints, workflow triggers, ...) get every committed event, at least
 * once, through the outbox written in the same transaction (outbox.ts).
 */
export interface NewEvent {
  contactId: string | null
  name: string
  data?: Record<string, unknown>
  emailId?: string | null
  createdAt?: Date
  /**
   * The base of the email an email.* event is about (`data` starts with it): stored on the email's row,
   * it is left out of the stored data and put back when events are read (email-base.ts).
   */
  base?: EmailBase
}

export type EventRow = typeof import('../../db/schema').pgSchema.events.$inferSelect

/**
 * The row of a new event of `projectId`, created at `now` unless the event says when. `id` is given for an
 * event already written under it (by the track writer thread, writer.ts), and new otherwise.
 */
export function eventRow(projectId: string, now: Date, e: NewEvent, id: string = Bun.randomUUIDv7()): EventRow {
  return { id, projectId, contactId: e.contactId, name: e.name, data: e.data ?? {}, emailId: e.emailId ?? null, createdAt: e.createdAt ?? now }
}

/**
 * Appends events inside the caller's transaction `db` (so they commit with the change that caused them),
 * with the outbox row that owes them to the consumers, and returns the rows (with their full data: an
 * email event's base is stored on the email's row only). Call `notifyEvents` after the transaction commits.
 */
export async function appendEvents(ctx: Pick<Ctx, 'store' | 'projectId' | 'now'>, db: Db, events: NewEvent[]): Promise<EventRow[]> {
  if (!events.length) return []
  const rows = events.map((e) => eventRow(ctx.projectId, ctx.now, e))
  const inserted = repo.insertEvents(ctx.store, db, rows.map((r, i) => {
    const base = events[i].base
    // Only where the readers put it back: an email.* event of the base's email (carriesBase).
    return base && carriesBase(r) && r.emailId === base.emailId ? { ...r, data: storedData(r.data, base) } : r
  }))
  // Recorded before the insert is awaited: the outbox's question to the consumers goes out with it.
  recordOutbox(ctx.store, db, ctx.projectId, rows, ctx.now)
  await inserted
  return rows
}

/**
 * Appends one event per contact that share name, data and time (a segment's membership change of many
 * contacts), in one statement, with their outbox row, inside the caller's transaction `db`. Call
 * `notifyEvents` after the transaction commits.
 */
export async function appendSameEvents(ctx: Pick<Ctx, 'store' | 'projectId'>, db: Db, name: string, data: Record<string, unknown>, contactIds: string[], at: Date): Promise<EventRow[]> {
  const rows = await repo.insertSameEvents(ctx.store, db, ctx.projectId, name, data, contactIds, at)
  recordOutbox(ctx.store, db, ctx.projectId, rows, at)
  return rows
}

/**
 * Events have committed: wakes the outbox's drainers so that the consumers get them now rather than at
 * the next poll (events no consumer was interested in, which have no outbox row, are left out). Only an
 * accelerator: a caller that never calls it loses nothing.
 */
export async function notifyEvents(ctx: Ctx, rows: EventRow[]): Promise<void> {
  const owed = rows.filter(owedToConsumers)
  if (!owed.length) return
  wakeOutbox(ctx.deps, owed)
}
