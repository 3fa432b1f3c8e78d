import type { Ctx } from '../../deps'
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
