import type { EventConsumer } from '../events/consumers'
import { ENABLED_ENDPOINT_SQL } from './repo'
import { createDeliveries } from './service'

/**
 * Customer webhooks as a consumer of the event stream (src/modules/events/consumers.ts): each committed
 * event becomes one delivery per enabled endpoint that wants it. Idempotent by (endpoint, event), so an
 * event handed over again (after a crash, on another node) adds nothing. Registered in `wireConsumers`.
 */
export const webhookDeliveriesConsumer: EventConsumer = {
  name: 'hooks.deliveries',
  // An enabled endpoint.
  interest: ENABLED_ENDPOINT_SQL,
  async handle(ctx, events) {
    await createDeliveries(ctx, events)
  },
}
