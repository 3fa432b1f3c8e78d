import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'

/** TypeBox models of customer webhooks: request validation and the OpenAPI document. */

const EventType = t.String({
  minLength: 1, maxLength: 255,
  description: 'An event name (email.bounce, contact.unsubscribed, segment.vip.entry, a tracked event), a prefix pattern (email.*, contact.*, segment.*), or * for every event',
})
const EventTypes = t.Array(EventType, { minItems: 1, maxItems: 100, description: 'The events this endpoint receives; default ["*"]' })
const Url = t.String({ minLength: 1, maxLength: 2048, description: 'An http(s) URL; it must not resolve to a loopback, private, link-local or metadata address unless the operator allows the host (MAILCTL_WEBHOOK_ALLOW_HOSTS)' })
const Description = t.Union([t.String({ maxLength: 500 }), t.Null()])

export const CreateEndpointBody = t.Object({
  url: Url,
  eventTypes: t.Optional(EventTypes),
  description: t.Optional(Description),
  enabled: t.Optional(t.Boolean({ description: 'Default true' })),
})
export type CreateEndpointBody = Static<typeof CreateEndpointBody>

export const UpdateEndpointBody = t.Object({
  url: t.Optional(Url),
  eventTypes: t.Optional(EventTypes),
  description: t.Optional(Description),
  enabled: t.Optional(t.Boolean({ description: 'Enabling an endpoint the service disabled clears its reason and its run of failures' })),
})
export type UpdateEndpointBody = Static<typeof UpdateEndpointBody>

const Time = t.String({ format: 'date-time' })
const MaybeTime = t.Union([Time, t.Null()])

export const Endpoint = t.Object({
  id: t.String(),
  url: t.String(),
  description: t.Union([t.String(), t.Null()]),
  eventTypes: t.Array(t.String()),
  enabled: t.Boolean(),
  disabledReason: t.Union([t.String(), t.Null()], { description: 'Why the service disabled the endpoint (410 Gone, failing for 5 days); null otherwise' }),
  disabledAt: MaybeTime,
  failingSince: t.Union([Time, t.Null()], { description: 'Start of the current run of failed attempts; null after a success' }),
  previousSecretExpiresAt: t.Union([Time, t.Null()], { description: 'Until then the secret before the last rotation also signs' }),
  createdAt: Time,
  updatedAt: Time,
})
export type EndpointOut = Static<typeof Endpoint>

export const EndpointWithSecret = t.Composite([Endpoint, t.Object({
  secret: t.String({ description: 'The signing secret (whsec_...), shown only in this answer' }),
})])
export type EndpointWithSecret = Static<typeof EndpointWithSecret>

export const EndpointList = t.Object({ data: t.Array(Endpoint) })

const DeliveryStatus = t.Union([t.Literal('pending'), t.Literal('delivered'), t.Literal('failed')])

export const Delivery = t.Object({
  id: t.String({ description: 'Also the webhook-id header: the same on every attempt and replay' }),
  endpointId: t.String(),
  eventId: t.String(),
  eventType: t.String(),
  status: DeliveryStatus,
  attempts: t.Integer(),
  nextAttemptAt: MaybeTime,
  lastStatus: t.Union([t.Integer(), t.Null()], { description: 'The HTTP status of the last answer' }),
  lastError: t.Union([t.String(), t.Null()]),
  deliveredAt: MaybeTime,
  createdAt: Time,
  updatedAt: Time,
})
export type DeliveryOut = Static<typeof Delivery>

export const Attempt = t.Object({
  id: t.String(),
  deliveryId: t.String(),
  attempt: t.Integer(),
  outcome: t.String({ description: 'success, http_error, timeout, connect, blocked, dns, redirect or invalid_url' }),
  status: t.Union([t.Integer(), t.Null()]),
  latencyMs: t.Integer(),
  response: t.Union([t.String(), t.Null()], { description: 'The first KiB of the answer, or the error' }),
  createdAt: Time,
})
export type AttemptOut = Static<typeof Attempt>

export const DeliveryWithAttempts = t.Composite([Delivery, t.Object({
  body: t.String({ description: 'The JSON body sent on every attempt' }),
  attemptLog: t.Array(Attempt, { description: 'Newest first, at most 100' }),
})])
export type DeliveryWithAttempts = Static<typeof DeliveryWithAttempts>

const page = <T extends ReturnType<typeof t.Object>>(item: T) => t.Object({
  data: t.Array(item),
  cursor: t.Union([t.String(), t.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  hasMore: t.Boolean(),
})
export const DeliveryList = page(Delivery)
export const AttemptList = page(Attempt)

export const ListDeliveriesQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String()),
  status: t.Optional(DeliveryStatus),
})
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>

export const ListAttemptsQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String()),
})
export type ListAttemptsQuery = Static<typeof ListAttemptsQuery>

export const ReplayBody = t.Object({
  since: t.String({ format: 'date-time', description: 'Every failed delivery created at or after this time is tried again' }),
})
export type ReplayBody = Static<typeof ReplayBody>

export const ReplayResult = t.Object({ replayed: t.Integer(), ids: t.Array(t.String()) })

export const RotateResult = t.Object({
  secret: t.String({ description: 'The new signing secret, shown only in this answer' }),
  previousSecretExpiresAt: Time,
})

export const IdParams = t.Object({ id: t.String() })
export const DeliveryParams = t.Object({ id: t.String(), deliveryId: t.String() })
