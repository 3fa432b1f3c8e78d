import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'
import { Contact, Email } from '../contacts/model'

/** TypeBox models of the segments module: request validation and the OpenAPI document. */

export const ErrorBody = t.Object({ error: t.String() })

export const CONDITION_DOC = [
  'Filter tree `{logic: "AND"|"OR", groups: [{filters: [{field, operator, value?, unit?}], conditions?: <tree>}]}`:',
  '`logic` joins the groups (default AND); a group ANDs its filters and its nested `conditions` (at most 5 levels, 100 filters).',
  'Fields: email, subscribed, createdAt, updatedAt, data.<dotted.path>, event.<name>, email.opened, email.clicked, email.bounced, segment.<id>.',
  'Operators: equals, notEquals, contains, notContains (case-insensitive), greaterThan, lessThan, greaterThanOrEqual, lessThanOrEqual,',
  'exists, notExists, within / olderThan (value N of `unit`: minutes, hours or days, default days), triggered, notTriggered,',
  'triggeredWithin, notTriggeredWithin, triggeredMoreThan (count > value), memberOfSegment, notMemberOfSegment;',
  'email.opened/clicked/bounced also take equals true|false. Numbers compare as numbers and ISO-8601 dates as dates, whatever JSON',
  'type the contact stored (a date without time means that whole UTC day). Negative operators also match contacts without the field.',
  'Anything unknown is a 422 VALIDATION_ERROR whose `errors[].field` is the path of the bad part, e.g. `condition.groups.0.filters.1.operator`.',
].join(' ')

const Condition = t.Unknown({ description: CONDITION_DOC })
const SegmentType = t.Union([t.Literal('DYNAMIC'), t.Literal('STATIC')])
const Name = t.String({ minLength: 1, maxLength: 100 })
const Description = t.Union([t.String({ maxLength: 500 }), t.Null()])

export const CreateSegmentBody = t.Object({
  name: Name,
  description: t.Optional(Description),
  type: t.Optional(SegmentType),
  /** Validated by the service: DYNAMIC without an object answers the flat 400 of docs/decisions.md, Segments; STATIC ignores it. */
  condition: t.Optional(Condition),
  trackMembership: t.Optional(t.Boolean()),
})
export type CreateSegmentBody = Static<typeof CreateSegmentBody>

export const UpdateSegmentBody = t.Object({
  name: t.Optional(Name),
  description: t.Optional(Description),
  condition: t.Optional(Condition),
  trackMembership: t.Optional(t.Boolean()),
})
export type UpdateSegmentBody = Static<typeof UpdateSegmentBody>

export const Segment = t.Object({
  id: t.String(),
  name: t.String(),
  description: t.Union([t.String(), t.Null()]),
  type: SegmentType,
  condition: t.Union([t.Unknown(), t.Null()], { description: 'The filter tree (DYNAMIC); null for STATIC' }),
  trackMembership: t.Boolean(),
  memberCount: t.Integer({ description: 'Cached count, refreshed on writes, by POST /refresh and /compute, and every 5 minutes' }),
  slug: t.String({ description: 'Fixed at creation: the <slug> of the segment.<slug>.entry / .exit events' }),
  projectId: t.String(),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})
export type SegmentOut = Static<typeof Segment>

export const IdParams = t.Object({ id: t.String() })

export const PreviewBody = t.Object({
  /** Validated by the service, like the condition of POST /segments (flat 400 when it is not an object, 422 with paths when it is bad). */
  condition: Condition,
  segmentId: t.Optional(t.String({ maxLength: 64, description: 'The segment being edited: a reference back to it is a cycle, as on PATCH /segments/:id' })),
})
export type PreviewBody = Static<typeof PreviewBody>

export const PreviewResult = t.Object({
  count: t.Integer({ description: 'Contacts of the project the condition matches now' }),
  countedAt: t.String({ format: 'date-time' }),
})

export const ContactsQuery = t.Object({
  page: positiveIntQuery('page', '1 to 1000000, default 1', 1_000_000),
  pageSize: positiveIntQuery('pageSize', '1 up, default 20; larger values are clamped to 100'),
})

export const ContactsPage = t.Object({
  data: t.Array(Contact),
  page: t.Integer(),
  pageSize: t.Integer(),
  total: t.Integer(),
  totalPages: t.Integer(),
})

export const MAX_MEMBER_EMAILS = 1000

export const AddMembersBody = t.Object({
  emails: t.Array(Email, { minItems: 1, maxItems: MAX_MEMBER_EMAILS, description: `At most ${MAX_MEMBER_EMAILS} emails per call` }),
  createMissing: t.Optional(t.Boolean({ description: 'Create contacts for emails that are not contacts yet (default false: they are reported in notFound)' })),
  subscribed: t.Optional(t.Boolean({ description: 'Subscription state of the contacts createMissing creates (default true); existing contacts keep theirs' })),
})
export type AddMembersBody = Static<typeof AddMembersBody>

export const RemoveMembersBody = t.Object({
  emails: t.Array(Email, { minItems: 1, maxItems: MAX_MEMBER_EMAILS }),
})

export const AddMembersResult = t.Object({
  added: t.Integer({ description: 'Contacts that became members' }),
  alreadyMembers: t.Integer(),
  created: t.Integer({ description: 'Contacts created by createMissing' }),
  notFound: t.Array(t.String(), { description: 'Emails that are not contacts (and were not created)' }),
  memberCount: t.Integer(),
})

export const RemoveMembersResult = t.Object({
  removed: t.Integer(),
  notMembers: t.Array(t.String(), { description: 'Emails that were not members' }),
  memberCount: t.Integer(),
})

export const ComputeResult = t.Object({
  id: t.String(),
  entered: t.Integer({ description: 'Contacts that joined (one segment.<slug>.entry event each)' }),
  exited: t.Integer({ description: 'Contacts that left (one segment.<slug>.exit event each)' }),
  memberCount: t.Integer(),
  computedAt: t.String({ format: 'date-time' }),
})

export const RefreshResult = t.Object({
  id: t.String(),
  memberCount: t.Integer(),
  countedAt: t.String({ format: 'date-time' }),
})
