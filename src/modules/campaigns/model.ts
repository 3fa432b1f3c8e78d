import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'
import { Design } from '../templates/design'
import { Preheader } from '../templates/preheader'

/** TypeBox models of the campaigns module: request validation and the OpenAPI document. */

export const CAMPAIGN_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const
export const AUDIENCE_TYPES = ['ALL', 'SEGMENT', 'FILTERED'] as const
export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number]

/** Largest pageSize of GET /campaigns; larger values are clamped (the contract leaves the maximum open). */
export const MAX_PAGE_SIZE = 100
export const DEFAULT_PAGE_SIZE = 20

const TypeField = t.Union(CAMPAIGN_TYPES.map((v) => t.Literal(v)), {
  error: 'type must be TRANSACTIONAL, MARKETING or HEADLESS', description: 'TRANSACTIONAL, MARKETING or HEADLESS; default MARKETING',
})
const AudienceField = t.Union(AUDIENCE_TYPES.map((v) => t.Literal(v)), {
  error: 'audienceType must be ALL, SEGMENT or FILTERED', description: 'ALL, SEGMENT (needs segmentId) or FILTERED (needs audienceCondition)',
})
const Email = t.String({ format: 'email', maxLength: 320, error: 'Invalid email' })
const Name = t.String({ minLength: 1, maxLength: 255, error: 'name must be 1-255 characters' })
const Description = t.String({ maxLength: 1000, error: 'description must be at most 1000 characters' })
const Subject = t.String({
  minLength: 1, maxLength: 998, pattern: '^[^\\r\\n]*$',
  error: 'subject must be 1-998 characters without line breaks',
  description: 'Handlebars template, rendered per recipient without HTML escaping; 1-998 characters, no line break',
})
export const MAX_BODY_CHARS = 500_000
const Body = t.String({
  minLength: 1, maxLength: MAX_BODY_CHARS, error: `body must be 1-${MAX_BODY_CHARS} characters`,
  description: 'HTML with Handlebars {{variable}} placeholders filled from each contact\'s data; must compile',
})
const FromName = t.String({ maxLength: 255, pattern: '^[^\\r\\n]*$', error: 'fromName must be at most 255 characters without line breaks' })
const Condition = t.Unknown({ description: 'Filter tree (see POST /segments): required when audienceType is FILTERED; checked by the filter engine (422 naming the bad filter)' })

const OptDescription = t.Optional(t.Union([Description, t.Null()], { error: 'description must be a string of at most 1000 characters, or null' }))
const OptFromName = t.Optional(t.Union([FromName, t.Null()], { error: 'fromName must be at most 255 characters without line breaks, or null' }))
const OptReplyTo = t.Optional(t.Union([Email, t.Null()], { error: 'replyTo must be an email address, or null' }))
const OptSegmentId = t.Optional(t.Union([t.String({ maxLength: 100 }), t.Null()], { error: 'segmentId must be a segment id, or null' }))

/** POST/PUT /campaigns `abTest`: 2-4 variants of the subject (and, optionally, the body). */
export const AbTest = t.Object({
  variants: t.Array(t.Object({
    subject: Subject,
    body: t.Optional(Body),
  }, { additionalProperties: false }), {
    minItems: 2, maxItems: 4, error: 'abTest.variants must be 2 to 4 variants, each {subject, body?}',
    description: 'Variant i is sent with its subject and its body (the campaign\'s body when it has none)',
  }),
  testPercent: t.Integer({ minimum: 5, maximum: 50, error: 'abTest.testPercent must be an integer from 5 to 50', description: 'Share of the audience in the test group, split evenly over the variants at random' }),
  metric: t.Union([t.Literal('opens'), t.Literal('clicks')], { error: 'abTest.metric must be "opens" or "clicks"', description: 'The winner has the highest rate of unique opens or clicks' }),
  waitMinutes: t.Integer({ minimum: 10, maximum: 1440, error: 'abTest.waitMinutes must be an integer from 10 to 1440', description: 'Minutes between the end of the test send and the choice of the winner' }),
}, { additionalProperties: false, error: 'abTest must be {variants, testPercent, metric, waitMinutes}' })

const AbTestStatus = t.Object({
  phase: t.String({ description: 'TEST (the test group is being sent), WAITING (for the winner), WINNER (the winner goes to the rest)' }),
  decideAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the winner is (or was) chosen' }),
  winner: t.Union([t.Integer(), t.Null()], { description: 'Index of the winning variant, once chosen' }),
  reason: t.Union([t.String(), t.Null()], { description: 'How the winner was chosen' }),
})

/** POST /campaigns/:id/send `sendAt`: one local time in each recipient's time zone. */
export const LocalSendAt = t.Object({
  date: t.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', error: 'sendAt.date must be a date YYYY-MM-DD', description: 'The local date' }),
  localTime: t.String({ pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', error: 'sendAt.localTime must be a time HH:MM (00:00-23:59)', description: 'The local time of day' }),
  fallbackTimeZone: t.String({ minLength: 1, maxLength: 100, error: 'sendAt.fallbackTimeZone must be an IANA time zone name', description: 'IANA zone of contacts whose data.timezone is missing or not a known IANA name' }),
}, { additionalProperties: false, error: 'sendAt must be {date, localTime, fallbackTimeZone}' })

export const Campaign = t.Object({
  id: t.String(),
  name: t.String(),
  description: t.Union([t.String(), t.Null()]),
  subject: t.String(),
  body: t.String(),
  design: t.Union([Design, t.Null()], { description: 'The editor\'s document that produced body, or null' }),
  preheader: t.Union([t.String(), t.Null()], { description: 'Inbox preview text, or null' }),
  from: t.String(),
  fromName: t.Union([t.String(), t.Null()]),
  replyTo: t.Union([t.String(), t.Null()]),
  type: t.String({ description: 'TRANSACTIONAL, MARKETING or HEADLESS' }),
  status: t.String({ description: 'DRAFT, SCHEDULED, SENDING, SENT or CANCELLED' }),
  audienceType: t.String({ description: 'ALL, SEGMENT or FILTERED' }),
  audienceCondition: t.Union([t.Unknown(), t.Null()]),
  segmentId: t.Union([t.String(), t.Null()]),
  scheduledFor: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  abTest: t.Union([AbTest, t.Null()], { description: 'The A/B test, or null' }),
  abTestStatus: t.Union([AbTestStatus, t.Null()], { description: 'Where the A/B test is, once sending started' }),
  sendAt: t.Union([LocalSendAt, t.Null()], { description: 'A send at one local time in each recipient\'s zone, or null' }),
  nextWaveAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'A local-time send: the wave in progress or next' }),
  totalRecipients: t.Integer({ description: 'Contacts the fan-out has handled so far: queued plus skipped' }),
  sentCount: t.Integer({ description: 'Emails handed to the outbound queue' }),
  deliveredCount: t.Integer(),
  openedCount: t.Integer(),
  clickedCount: t.Integer(),
  bouncedCount: t.Integer(),
  complainedCount: t.Integer({ description: 'Spam complaints (feedback loop reports) about the campaign\'s emails' }),
  unsubscribedCount: t.Integer({ description: 'Contacts who unsubscribed through the campaign\'s link or List-Unsubscribe header' }),
  skippedUnsubscribed: t.Integer({ description: 'MARKETING: audience contacts not subscribed, not sent to' }),
  skippedSuppressed: t.Integer({ description: 'Audience contacts whose address is suppressed, not sent to' }),
  projectId: t.String(),
  sentAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})
export type Campaign = Static<typeof Campaign>

/** POST /campaigns, and PUT /campaigns/:id (a replacement: the same body). */
export const CampaignBody = t.Object({
  name: Name,
  description: OptDescription,
  subject: Subject,
  body: Body,
  /** A replacement: PUT without a design leaves none. */
  design: t.Optional(Design),
  preheader: t.Optional(t.Union([Preheader, t.Null()], { error: 'preheader must be at most 255 characters without line breaks, or null' })),
  from: Email,
  fromName: OptFromName,
  replyTo: OptReplyTo,
  type: t.Optional(TypeField),
  audienceType: AudienceField,
  segmentId: OptSegmentId,
  audienceCondition: t.Optional(Condition),
  /** A replacement: PUT without abTest leaves none. (Not a union with null: its errors then name the inner field.) */
  abTest: t.Optional(AbTest),
})
export type CampaignInput = Static<typeof CampaignBody>

export const SendBody = t.Object({
  scheduledFor: t.Optional(t.Union([t.String({ maxLength: 100 }), t.Null()], {
    error: 'scheduledFor must be a date string, or null', description: 'Any value Date.parse accepts; omitted, null or in the past: send now',
  })),
  sendAt: t.Optional(LocalSendAt),
})
export type SendInput = Static<typeof SendBody>

export const SendResult = t.Object({
  success: t.Literal(true),
  data: t.Object({ id: t.String(), name: t.String(), status: t.String(), scheduledFor: t.Union([t.String(), t.Null()]) }),
  message: t.String(),
})
export type SendResult = Static<typeof SendResult>

export const CreateResult = t.Object({ success: t.Literal(true), data: Campaign })

export const ListCampaignsQuery = t.Object({
  page: positiveIntQuery('page', '1 to 1000000, default 1', 1_000_000),
  pageSize: positiveIntQuery('pageSize', `1 up, default ${DEFAULT_PAGE_SIZE}; values above ${MAX_PAGE_SIZE} are clamped to ${MAX_PAGE_SIZE}`),
  status: t.Optional(t.String({ description: 'DRAFT, SCHEDULED, SENDING, SENT or CANCELLED; any other value answers 400 BAD_REQUEST' })),
  search: t.Optional(t.String({ maxLength: 200, description: 'Case-insensitive substring of name, subject or sender address' })),
  sort: t.Optional(t.String({ description: 'createdAt (default), name (case-insensitive) or updatedAt; anything else falls back to createdAt' })),
  dir: t.Optional(t.String({ description: 'desc (default) or asc; anything else falls back to desc' })),
})
export type ListCampaignsQuery = Static<typeof ListCampaignsQuery>

export const CampaignList = t.Object({
  data: t.Array(Campaign), page: t.Integer(), pageSize: t.Integer(), total: t.Integer(), totalPages: t.Integer(),
})
export type CampaignList = Static<typeof CampaignList>

export const CampaignStats = t.Object({
  campaignId: t.String(),
  status: t.String(),
  totalRecipients: t.Integer(),
  queued: t.Integer({ description: 'Emails handed to the outbound queue (sentCount of the campaign)' }),
  pending: t.Integer({ description: 'Queued, not yet attempted or being delivered' }),
  sent: t.Integer({ description: 'Accepted by the next server (the recipient\'s MX or the smart host) or captured' }),
  delivered: t.Integer({ description: 'Accepted by the recipient\'s server (direct delivery), or reported delivered by the relay' }),
  opened: t.Integer({ description: 'Emails opened at least once (the open pixel)' }),
  clicked: t.Integer({ description: 'Emails with at least one tracked click' }),
  bounced: t.Integer({ description: 'Emails that bounced (hard, or soft until the retry period ended), also after being accepted' }),
  complained: t.Integer(),
  failed: t.Integer({ description: 'Emails that could not be sent (sender domain no longer verified, campaign or contact deleted...)' }),
  unsubscribed: t.Integer({ description: 'Contacts who unsubscribed through this campaign (link or List-Unsubscribe), once each' }),
  skippedUnsubscribed: t.Integer(),
  skippedSuppressed: t.Integer(),
  variants: t.Array(t.Object({
    index: t.Integer(),
    subject: t.String(),
    winner: t.Boolean(),
    recipients: t.Integer({ description: 'Test-group contacts drawn for the variant and sent to' }),
    delivered: t.Integer(),
    opened: t.Integer({ description: 'Emails opened at least once' }),
    clicked: t.Integer({ description: 'Emails with at least one tracked click' }),
    bounced: t.Integer(),
    openRate: t.Number({ description: 'opened / recipients (0 with no recipients)' }),
    clickRate: t.Number({ description: 'clicked / recipients' }),
  }), { description: 'An A/B campaign: its test group per variant (empty otherwise)' }),
})
export type CampaignStats = Static<typeof CampaignStats>

export const IdParams = t.Object({ id: t.String() })

export const TestBody = t.Object({
  email: Email,
  contactId: t.Optional(t.String({ minLength: 1, maxLength: 64, error: 'contactId must be a contact id', description: 'Render with this contact\'s data instead (a contact of the project, else 404)' })),
})
export type TestInput = Static<typeof TestBody>

export const TestResult = t.Object({
  success: t.Literal(true),
  data: t.Object({ id: t.String({ description: 'The id of the queued test email' }), email: t.String() }),
  message: t.String(),
})
export type TestResult = Static<typeof TestResult>

/** POST /campaigns/audience/count: an audience, saved or not yet (the composer's live count). */
export const AudienceBody = t.Object({
  type: t.Optional(TypeField),
  audienceType: AudienceField,
  segmentId: OptSegmentId,
  audienceCondition: t.Optional(Condition),
})
export type AudienceInput = Static<typeof AudienceBody>

export const AudienceCount = t.Object({
  matching: t.Integer({ description: 'Contacts the audience selects' }),
  recipients: t.Integer({ description: 'Of those, the ones a send now would mail: matching minus the two skipped counts' }),
  skippedUnsubscribed: t.Integer({ description: 'MARKETING: matching contacts not subscribed (0 for other types)' }),
  skippedSuppressed: t.Integer({ description: 'Matching contacts (subscribed ones for MARKETING) whose address is on the suppression list' }),
})
export type AudienceCount = Static<typeof AudienceCount>

export const LinksQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 10; larger values are clamped to 100'),
})

export const CampaignLinks = t.Object({
  campaignId: t.String(),
  data: t.Array(t.Object({
    url: t.String({ description: 'The link as written in the campaign (after rendering)' }),
    clicks: t.Integer({ description: 'Every tracked click on it' }),
    uniqueClicks: t.Integer({ description: 'Emails with at least one click on it' }),
  })),
})
export type CampaignLinks = Static<typeof CampaignLinks>

/** GET /campaigns/:id/recipients. */
export const RecipientsQuery = t.Object({
  filter: t.Optional(t.Union(['all', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'failed'].map((v) => t.Literal(v)), {
    error: 'filter must be all, delivered, opened, clicked, bounced, complained, unsubscribed or failed',
    description: 'all (default), delivered, opened (an open or a click), clicked, bounced, complained, unsubscribed or failed',
  })),
  link: t.Optional(t.String({ minLength: 1, maxLength: 4096, error: 'link must be 1-4096 characters', description: 'Only recipients who clicked this exact URL (as GET /campaigns/:id/links lists it)' })),
  limit: t.Optional(t.Numeric({ minimum: 1, error: 'limit must be a positive number', description: '1 to 500, default 50; larger values are clamped' })),
  cursor: t.Optional(t.String({ description: 'Opaque cursor from the previous page' })),
})
export type RecipientsQuery = Static<typeof RecipientsQuery>

const Stamp = t.Union([t.String(), t.Null()])
export const RecipientRow = t.Object({
  emailId: t.String(), contactId: t.Union([t.String(), t.Null()]), email: t.String(), status: t.String(),
  deliveredAt: Stamp, openedAt: Stamp, clickedAt: Stamp, bouncedAt: Stamp, bounceType: t.Union([t.String(), t.Null()]),
  complainedAt: Stamp, unsubscribedAt: Stamp, opens: t.Integer(), clicks: t.Integer(),
  links: t.Array(t.String(), { description: 'The distinct links this recipient clicked' }),
})
export type RecipientRow = Static<typeof RecipientRow>
export const RecipientsPage = t.Object({
  campaignId: t.String(), filter: t.String(), data: t.Array(RecipientRow),
  cursor: t.Union([t.String(), t.Null()]), hasMore: t.Boolean(),
})
export type RecipientsPage = Static<typeof RecipientsPage>
