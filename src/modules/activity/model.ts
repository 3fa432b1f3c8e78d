import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'
import { EmailRecord } from '../emails/model'
import { COUNTED_EVENT_TYPES } from '../events/counted'

/**
 * The activity feed (GET /activity): what happened to the project's mail and audience, newest first.
 * Two kinds of item, merged on time:
 * - `email`: one per email sent (send, campaigns, workflows, relay), with its current state (status only
 *   moves forward: PENDING ... DELIVERED, OPENED, CLICKED, or BOUNCED / COMPLAINED / FAILED): the sends;
 * - `event`: what came back or changed: opens, clicks, bounces, complaints, inbound mail
 *   (email.received), subscription changes.
 */
export const EVENT_TYPES = COUNTED_EVENT_TYPES
export const ACTIVITY_TYPES = ['email', ...EVENT_TYPES] as const

export const EmailItem = t.Composite([t.Object({ kind: t.Literal('email') }), EmailRecord, t.Object({
  opens: t.Integer({ description: 'Opens counted for this email (every pixel load)' }),
  clicks: t.Integer({ description: 'Tracked link clicks of this email' }),
})])

export const EventItem = t.Object({
  kind: t.Literal('event'),
  id: t.String({ description: 'The event id' }),
  type: t.String({ description: `One of ${EVENT_TYPES.join(', ')}` }),
  contact: t.Union([t.Object({ id: t.String(), email: t.String() }), t.Null()]),
  emailId: t.Union([t.String(), t.Null()], { description: 'The email it is about (for email.received: the email replied to, if any)' }),
  data: t.Record(t.String(), t.Unknown(), { description: 'Event data: emailId, messageId, subject, from, to, templateId, campaignId, sourceType, and isFirstOpen, link/isFirstClick, bounceType/bounceKind/reply/suppressed, feedbackType, or the inbound message\'s from/to/subject/snippet' }),
  createdAt: t.String({ format: 'date-time' }),
})

export const ActivityList = t.Object({
  data: t.Array(t.Union([EmailItem, EventItem])),
  cursor: t.Union([t.String(), t.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  hasMore: t.Boolean(),
  total: t.Integer({ description: 'Computed on the first page only (0 on later pages). Exact when only type and from/to filter; with contact, contactId, campaignId, emailId or status, counted up to 10,000 emails and 10,000 events (a larger set answers that lower bound)' }),
})

export const ListActivityQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String()),
  type: t.Optional(t.String({ description: `Comma-separated: ${ACTIVITY_TYPES.join(', ')} (default all); an unknown type answers 400` })),
  status: t.Optional(t.String({ description: 'Only emails in this status (implies type=email)' })),
  contactId: t.Optional(t.String()),
  contact: t.Optional(t.String({ description: 'A contact by id or by email address' })),
  campaignId: t.Optional(t.String({ description: 'Only the emails of this campaign and what happened to them' })),
  emailId: t.Optional(t.String({ description: 'One email and what happened to it' })),
  from: t.Optional(t.String({ description: 'Date-time (ISO 8601): only items at or after it' })),
  to: t.Optional(t.String({ description: 'Date-time (ISO 8601): only items before it' })),
})
export type ListActivityQuery = Static<typeof ListActivityQuery>

export const StatsQuery = t.Object({
  days: positiveIntQuery('days', '1 to 365, default 30; larger values are clamped to 365'),
})

export const ActivityStats = t.Object({
  periodDays: t.Integer(),
  since: t.String({ format: 'date-time' }),
  emails: t.Integer({ description: 'Emails queued in the period' }),
  sent: t.Integer({ description: 'email.sent events (accepted by the next server or captured)' }),
  delivered: t.Integer(),
  opens: t.Integer({ description: 'Every open' }),
  uniqueOpens: t.Integer({ description: 'Emails opened for the first time in the period' }),
  clicks: t.Integer(),
  uniqueClicks: t.Integer(),
  bounces: t.Integer({ description: 'Every bounce event' }),
  hardBounces: t.Integer(),
  softBounces: t.Integer(),
  complaints: t.Integer(),
  received: t.Integer({ description: 'Inbound messages (email.received)' }),
  failed: t.Integer(),
  subscribed: t.Integer(),
  unsubscribed: t.Integer(),
  rates: t.Object({
    delivery: t.Number({ description: 'delivered / sent (0-1; 0 when nothing was sent)' }),
    open: t.Number({ description: 'uniqueOpens / sent' }),
    click: t.Number({ description: 'uniqueClicks / sent' }),
    bounce: t.Number({ description: 'hardBounces / sent' }),
    complaint: t.Number({ description: 'complaints / sent' }),
  }),
})

export const ActivityTypes = t.Object({
  data: t.Array(t.Object({ type: t.String(), count: t.Integer(), lastSeenAt: t.String({ format: 'date-time' }) })),
})

export const RecentCountQuery = t.Object({
  minutes: positiveIntQuery('minutes', '1 to 10080, default 60; larger values are clamped to 10080'),
})

export const RecentCount = t.Object({
  count: t.Integer({ description: 'Emails queued plus events in the window' }),
  minutes: t.Integer(),
  since: t.String({ format: 'date-time' }),
})

export const UpcomingQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
})

export const UpcomingItem = t.Object({
  kind: t.String({ description: 'campaign (a SCHEDULED campaign), deferred (an email waiting for its next delivery attempt), or the kind of a registered source (workflow executions waiting: workflow)' }),
  id: t.String({ description: 'The campaign, email or execution id' }),
  at: t.String({ format: 'date-time', description: 'When it is due: the scheduled time, or the next attempt' }),
  title: t.String({ description: 'Campaign name, the email\'s subject, or what the source says' }),
  detail: t.Record(t.String(), t.Unknown(), { description: 'campaign: {status, audienceType}; deferred: {to, attempts, lastError, campaignId}' }),
})

export const UpcomingList = t.Object({
  data: t.Array(UpcomingItem),
  total: t.Integer({ description: 'Upcoming items of every kind (the list shows the first `limit`, soonest first)' }),
})
