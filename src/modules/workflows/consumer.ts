import type { EventConsumer } from '../events/consumers'
import { ENABLED_WORKFLOW_SQL, WAITING_EXECUTION_SQL } from './repo'

/**
 * The workflows' consumers of the event stream (registered in `wireConsumers`, src/main.ts). Both are
 * idempotent, keyed by the event id, so the at-least-once delivery of the outbox is safe:
 * - triggers: an event starts at most one execution per workflow (unique (workflow_id, trigger_event_id));
 * - waits: an event resumes a waiting execution once (the move is written at the version read), and only a
 *   wait that began before the event was recorded.
 * The engine (and with it the mail libraries) is loaded at the first event, not when main.ts wires this.
 */
export const workflowTriggerConsumer: EventConsumer = {
  name: 'workflows.triggers',
  // An enabled workflow.
  interest: ENABLED_WORKFLOW_SQL,
  async handle(ctx, events) {
    const { startFromEvents } = await import('./engine')
    await startFromEvents(ctx, events)
  },
}

export const workflowWaitConsumer: EventConsumer = {
  name: 'workflows.waits',
  // A WAITING execution.
  interest: WAITING_EXECUTION_SQL,
  async handle(ctx, events) {
    const { resumeOnEvents } = await import('./engine')
    await resumeOnEvents(ctx, events)
  },
}
