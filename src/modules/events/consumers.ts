import type { Ctx, Deps } from '../../deps'
import { drainOutboxes } from './outbox'
import type { EventRow } from './stream'

/**
 * The contract between the event stream and what reacts to it (segment hints, workflow triggers, waits
 * for events, customer webhooks). A consumer is told about committed events of one project, in batches,
 * at least once: it may see an event again after a crash or on another node, so it is idempotent, keyed
 * by the event id (a unique constraint in the database, or a state change that happens once).
 * Consumers are listed in `wireConsumers` (src/main.ts), never registered on import.
 */
export interface EventConsumer {
  /** Stable name (logs, metrics, the outbox's bookkeeping), e.g. 'segments.hints', 'workflows.triggers'. */
  name: string
  /** Handles `events` (all of `ctx.projectId`, oldest first). Throwing means "try this batch again later". */
  handle(ctx: Ctx, events: EventRow[]): Promise<void>
}

const consumers: EventConsumer[] = []

/** Adds a consumer (from `wireConsumers` only). Returns its remover. */
export function registerEventConsumer(c: EventConsumer): () => void {
  consumers.push(c)
  return () => { const i = consumers.indexOf(c); if (i >= 0) consumers.splice(i, 1) }
}

/** The registered consumers, in registration order. */
export function eventConsumers(): readonly EventConsumer[] {
  return consumers
}

/**
 * Waits until every committed event has reached its consumers (tests): delivers, in this process and
 * now, what the outbox holds for the stores this process committed events to (and `deps`' store). A
 * consumer that throws is not waited for again: its retry is due after a backoff (outbox.ts).
 */
export async function settleEvents(deps?: Deps): Promise<void> {
  await drainOutboxes(deps)
}
