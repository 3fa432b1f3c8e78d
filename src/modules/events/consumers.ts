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

const consumers: EventConsumer[] = []
const inFlight = new Set<Promise<void>>()

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
 * Hands committed events to every consumer. Today in memory, after the commit (the durable outbox of issue
 * 12 replaces this); a failing consumer is logged, never thrown to the caller.
 */
export function deliverToConsumers(ctx: Ctx, rows: EventRow[]): void {
  if (!rows.length) return
  for (const c of consumers) {
    const p = c.handle(ctx, rows).catch((err) => ctx.deps.log.warn('event consumer failed', { consumer: c.name, error: String(err) }))
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p))
  }
}

/** Waits until every committed event has reached its consumers (tests, shutdown). */
export async function settleEvents(): Promise<void> {
  while (inFlight.size) await Promise.allSettled([...inFlight])
}
