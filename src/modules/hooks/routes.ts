import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import {
  AttemptList, CreateEndpointBody, DeliveryList, DeliveryParams, Delivery, DeliveryWithAttempts, Endpoint, EndpointList, EndpointWithSecret,
  IdParams, ListAttemptsQuery, ListDeliveriesQuery, ReplayBody, ReplayResult, RotateResult, UpdateEndpointBody,
} from './model'
import * as service from './service'

/**
 * Customer webhooks (secret key; in the dashboard, changing them is for OWNER and ADMIN: an endpoint
 * receives every event of the project): /webhooks/endpoints and their delivery logs and replays. The inbound
 * /webhooks/notifications of src/modules/webhooks shares the /webhooks prefix and nothing else.
 */
export function hooksRoutes(deps: Deps) {
  const detail = (summary: string, description?: string) => ({ tags: ['webhooks'], summary, ...(description ? { description } : {}) })
  return new Elysia({ prefix: '/webhooks/endpoints' }).use(authPlugin(deps))
    .get('', ({ ctx }) => service.listEndpoints(ctx), {
      apiKey: 'secret', response: { 200: EndpointList },
      detail: detail('List webhook endpoints'),
    })
    .post('', async ({ ctx, body, set }) => {
      const out = await service.createEndpoint(ctx, body)
      set.status = 201
      return out
    }, {
      apiKey: 'admin', body: CreateEndpointBody, response: { 201: EndpointWithSecret },
      detail: detail('Add a webhook endpoint', 'Events are POSTed as `{type, timestamp, data, contact?}` with the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>). The answer carries the signing secret, shown only here. 422 for a URL that is not http(s) or names a refused address.'),
    })
    .get('/:id', ({ ctx, params }) => service.getEndpoint(ctx, params.id), {
      apiKey: 'secret', params: IdParams, response: { 200: Endpoint },
      detail: detail('Get a webhook endpoint', 'disabledReason says why the service disabled it (410 Gone, failing for 5 days).'),
    })
    .patch('/:id', ({ ctx, params, body }) => service.updateEndpoint(ctx, params.id, body), {
      apiKey: 'admin', params: IdParams, body: UpdateEndpointBody, response: { 200: Endpoint },
      detail: detail('Update a webhook endpoint', 'Disabling fails the deliveries still waiting; enabling clears the reason and the run of failures.'),
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteEndpoint(ctx, params.id)
      set.status = 204
    }, {
      apiKey: 'admin', params: IdParams,
      detail: detail('Delete a webhook endpoint', 'With its deliveries and their log. 204.'),
    })
    .post('/:id/rotate-secret', ({ ctx, params }) => service.rotateSecret(ctx, params.id), {
      apiKey: 'admin', params: IdParams, response: { 200: RotateResult },
      detail: detail('Rotate the signing secret', 'The new secret is shown only here. Until previousSecretExpiresAt (24 hours) every message carries a signature by each secret.'),
    })
    .get('/:id/deliveries', ({ ctx, params, query }) => service.listDeliveries(ctx, params.id, query), {
      apiKey: 'secret', params: IdParams, query: ListDeliveriesQuery, response: { 200: DeliveryList },
      detail: detail('List the deliveries of an endpoint', 'Newest first; filter by status (pending, delivered, failed).'),
    })
    .get('/:id/deliveries/:deliveryId', ({ ctx, params }) => service.getDelivery(ctx, params.id, params.deliveryId), {
      apiKey: 'secret', params: DeliveryParams, response: { 200: DeliveryWithAttempts },
      detail: detail('Get a delivery with its body and attempts'),
    })
    .post('/:id/deliveries/:deliveryId/replay', ({ ctx, params }) => service.replayDelivery(ctx, params.id, params.deliveryId), {
      apiKey: 'admin', params: DeliveryParams, response: { 200: Delivery },
      detail: detail('Send a delivery again', 'Same id and body, due now with a fresh retry window. 409 while an attempt of it is in flight or the endpoint is disabled.'),
    })
    .post('/:id/replay', ({ ctx, params, body }) => service.replayFailed(ctx, params.id, body.since), {
      apiKey: 'admin', params: IdParams, body: ReplayBody, response: { 200: ReplayResult },
      detail: detail('Send every failed delivery since a time again', '409 when the endpoint is disabled.'),
    })
    .get('/:id/attempts', ({ ctx, params, query }) => service.listAttempts(ctx, params.id, query), {
      apiKey: 'secret', params: IdParams, query: ListAttemptsQuery, response: { 200: AttemptList },
      detail: detail('The delivery log of an endpoint', 'Every attempt, newest first: outcome, HTTP status, latency and the first KiB of the answer.'),
    })
}
