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
  /**
   * When the consumer may react to some event of a project: a SQL query over the project's rows ($1: the
   * project id, valid on both stores) that returns a row while it may, e.g. "an enabled workflow exists".
   * The outbox writes a transaction's events for delivery only when some registered consumer's interest
   * holds (interest.ts); for other projects it costs one look-up per transaction instead of a delivery.
   */
  interest: string
  /** Handles `events` (all of `ctx.projectId`, oldest first). Throwing means "try this batch again later". */
  handle(ctx: Ctx, events: EventRow[]): Promise<void>
}

const consumers: EventConsumer[] = []
let generation = 0

/** Adds a consumer (from `wireConsumers` only). Returns its remover. */
export function registerEventConsumer(c: EventConsumer): () => void {
  consumers.push(c)
  generation++
  return () => { const i = consumers.indexOf(c); if (i >= 0) { consumers.splice(i, 1); generation++ } }
}

/** A number that changes whenever a consumer is added or removed (what interest.ts derives is redone). */
export function consumersGeneration(): number {
  return generation
}

/** The registered consumers, in registration order. */
export function eventConsumers(): readonly EventConsumer[] {
  return consumers
}
