import type { Cols } from '../columns'

/**
 * The events' outbox (migration 0016_event_outbox; src/modules/events/outbox.ts): what committed events
 * still owe their consumers, written in the transaction that appends them, deleted once delivered.
 */
export function outboxTables(c: Cols) {
  const eventOutbox = c.table('event_outbox', {
    /** UUIDv7: claims take a project's rows oldest first. */
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    /** null: every consumer; a consumer's name: that one only (a retry after it failed). */
    consumer: c.text('consumer'),
    /** The events, by id (up to 500; ids of events deleted since are skipped). */
    eventIds: c.json<string[]>('event_ids').notNull(),
    /** Failed deliveries of this row (its consumer's). */
    attempts: c.int('attempts').notNull(),
    dueAt: c.ts('due_at').notNull(),
    lockedBy: c.text('locked_by'),
    lockedUntil: c.ts('locked_until'),
    lastError: c.text('last_error'),
    /** Set when its consumer failed too many times: never claimed again, kept for operators. */
    failedAt: c.ts('failed_at'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.index('event_outbox_project_idx').on(t.projectId, t.id)])
  return { eventOutbox }
}
