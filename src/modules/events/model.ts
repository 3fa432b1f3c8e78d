import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'
import { ContactDataIn, Email } from '../contacts/model'

/** TypeBox models of the events module (validation and the OpenAPI document). */

export const TrackBody = t.Object({
  email: Email,
  event: t.String({ minLength: 1, maxLength: 255, description: 'Event name; email.*, contact.subscribed, contact.unsubscribed and segment.<slug>.entry|exit are reserved (422 reserved_event)' }),
  subscribed: t.Optional(t.Boolean({ description: 'New contacts default to true; existing contacts keep their state unless given' })),
  data: t.Optional(t.Union([ContactDataIn, t.Null()])),
})
export type TrackBody = Static<typeof TrackBody>

export const TrackResult = t.Object({
  success: t.Literal(true),
  data: t.Object({
    contact: t.String({ description: 'Contact id' }),
    event: t.String({ description: 'Event id' }),
    timestamp: t.String({ format: 'date-time' }),
  }),
})

export const IdempotencyKey = t.String({ minLength: 1, maxLength: 255, description: '1-255 printable ASCII; a key already used by the project answers 409 IDEMPOTENCY_KEY_REUSED (nothing is performed again)' })

export const Event = t.Object({
  id: t.String(),
  name: t.String(),
  contactId: t.Union([t.String(), t.Null()]),
  contact: t.Union([t.Object({ id: t.String(), email: t.String() }), t.Null()]),
  data: t.Record(t.String(), t.Unknown()),
  emailId: t.Union([t.String(), t.Null()]),
  createdAt: t.String({ format: 'date-time' }),
})

export const EventList = t.Object({
  data: t.Array(Event),
  cursor: t.Union([t.String(), t.Null()]),
  hasMore: t.Boolean(),
  total: t.Integer({ description: 'Computed on the first page only (0 on later pages)' }),
})

export const ListEventsQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String()),
  name: t.Optional(t.String({ description: 'Only events with this name' })),
  contactId: t.Optional(t.String({ description: 'Only events of this contact' })),
})
export type ListEventsQuery = Static<typeof ListEventsQuery>

export const ContactEventsQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 100; larger values are clamped to 100'),
  cursor: t.Optional(t.String()),
})

export const StatsQuery = t.Object({
  days: positiveIntQuery('days', '1 to 365, default 30; larger values are clamped to 365'),
})

export const EventStats = t.Object({
  totalEvents: t.Integer({ description: 'All events of the project' }),
  periodDays: t.Integer(),
  since: t.String({ format: 'date-time' }),
  eventsInPeriod: t.Integer(),
  uniqueNames: t.Integer({ description: 'Distinct names in the period' }),
  uniqueContacts: t.Integer({ description: 'Distinct contacts with events in the period' }),
  topEvents: t.Array(t.Object({ name: t.String(), count: t.Integer() }), { description: 'Top 20 names in the period' }),
  daily: t.Array(t.Object({ date: t.String(), count: t.Integer() }), { description: 'Events per UTC day in the period (days without events omitted)' }),
})

export const EventNames = t.Object({
  data: t.Array(t.Object({
    name: t.String(),
    count: t.Integer(),
    lastSeenAt: t.String({ format: 'date-time' }),
    reserved: t.Boolean({ description: 'Emitted by the service (`email.*`, `contact.*`, `segment.*`), not trackable' }),
  })),
})

export const EventNameParams = t.Object({ eventName: t.String({ minLength: 1, maxLength: 255 }) })
export const ContactIdParams = t.Object({ contactId: t.String() })

export const EventUsage = t.Object({
  eventName: t.String(),
  count: t.Integer({ description: 'Stored events with this name' }),
  inUse: t.Boolean(),
  segments: t.Array(t.Object({ id: t.String(), name: t.String(), where: t.Optional(t.String()) })),
  campaigns: t.Array(t.Object({ id: t.String(), name: t.String(), where: t.Optional(t.String()) })),
  workflows: t.Array(t.Object({ id: t.String(), name: t.String(), where: t.Optional(t.String()) })),
})
