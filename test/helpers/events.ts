import type { Deps } from '../../src/deps'
import { drainOutboxes } from '../../src/modules/events/outbox'

/**
 * Waits until every committed event has reached its consumers: delivers, in this process and now, what the
 * outbox holds for the stores this process committed events to (and `deps`' store). A consumer that throws
 * is not waited for again: its retry is due after a backoff (src/modules/events/outbox.ts).
 */
export async function settleEvents(deps?: Deps): Promise<void> {
  await drainOutboxes(deps)
}
