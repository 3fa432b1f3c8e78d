import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { prepareBody } from '../contacts/routes'
import * as m from './model'
import * as service from './service'

const tags = ['events']

const trackDoc = 'Upserts the contact (new contacts are subscribed unless `subscribed: false`; existing contacts keep their state unless `subscribed` is given) and stores the event. `data` follows the contact data rules; the event keeps the request data (wrappers unwrapped). Reserved names answer 422 with field code reserved_event. With Idempotency-Key, a key already used by the project answers 409 IDEMPOTENCY_KEY_REUSED and nothing is performed again. 409 CONFLICT when other requests deleted the contact while it was written, or the write deadlocked with theirs, three times over (send it again).'

const trackDocs = {
  parameters: [{ in: 'header' as const, name: 'Idempotency-Key', required: false, schema: m.IdempotencyKey, description: m.IdempotencyKey.description }],
  responses: { 200: { description: 'Track result', content: { 'application/json': { schema: m.TrackResult } } } },
}

/** POST /v1/track: public or secret key (docs/decisions.md, API keys). */
export function trackRoutes(deps: Deps) {
  return new Elysia({ prefix: '/v1' })
    .use(authPlugin(deps))
    .onTransform(prepareBody)
    .post('/track', ({ ctx, confirm, body, request }) => service.track(ctx, body, request.headers.get('idempotency-key') ?? undefined, '/v1/track', confirm), {
      // The hot path: no header or response validation at run time; both are documented through `detail`.
      apiKey: 'track', body: m.TrackBody,
      detail: { tags, summary: 'Track an event for a contact (public or secret key)', description: trackDoc, security: [{ publicKey: [] }, { secretKey: [] }], ...trackDocs },
    })
}

/** The /events endpoints (secret key). */
export function eventsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/events' })
    .use(authPlugin(deps))
    .onTransform(prepareBody)
    .post('/track', ({ ctx, body, request }) => service.track(ctx, body, request.headers.get('idempotency-key') ?? undefined, '/events/track'), {
      apiKey: 'secret', body: m.TrackBody,
      detail: { tags, summary: 'Track an event (dashboard alias of /v1/track, secret key)', description: trackDoc, ...trackDocs },
    })
    .get('', ({ ctx, query }) => service.listEvents(ctx, query), {
      apiKey: 'secret', query: m.ListEventsQuery, response: { 200: m.EventList },
      detail: { tags, summary: 'Recent events, newest first (cursor list)' },
    })
    .get('/stats', ({ ctx, query }) => service.eventStats(ctx, query), {
      apiKey: 'secret', query: m.StatsQuery, response: { 200: m.EventStats },
      detail: { tags, summary: 'Aggregated event statistics over a period' },
    })
    .get('/names', ({ ctx }) => service.eventNames(ctx), {
      apiKey: 'secret', response: { 200: m.EventNames },
      detail: { tags, summary: 'Distinct event names with counts' },
    })
    .get('/contact/:contactId', ({ ctx, params, query }) => service.contactEvents(ctx, params.contactId, query), {
      apiKey: 'secret', params: m.ContactIdParams, query: m.ContactEventsQuery, response: { 200: m.EventList },
      detail: { tags, summary: 'Every event of one contact, newest first (cursor list)' },
    })
    .get('/:eventName/usage', ({ ctx, params }) => service.eventNameUsage(ctx, params.eventName), {
      apiKey: 'secret', params: m.EventNameParams, response: { 200: m.EventUsage },
      detail: { tags, summary: 'Where an event name is referenced (segments, campaigns, workflows)' },
    })
    .delete('/:eventName', ({ ctx, params }) => service.deleteEventName(ctx, params.eventName), {
      apiKey: 'secret', params: m.EventNameParams, response: { 200: t.Object({ eventName: t.String(), deleted: t.Integer() }) },
      detail: { tags, summary: 'Delete every event with this name (service events cannot be deleted)' },
    })
}
