import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'
import { Design } from './design'
import { Preheader } from './preheader'

/** TypeBox models of the templates module: request validation and the OpenAPI document. */

export const TEMPLATE_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const
export type TemplateType = (typeof TEMPLATE_TYPES)[number]

/** Largest pageSize of GET /templates; larger values are clamped (docs/decisions.md, Lists and pages: the contract leaves the maximum open). */
export const MAX_PAGE_SIZE = 100
export const DEFAULT_PAGE_SIZE = 20

const TypeField = t.Union(TEMPLATE_TYPES.map((v) => t.Literal(v)), {
  error: 'type must be TRANSACTIONAL, MARKETING or HEADLESS',
  description: 'TRANSACTIONAL, MARKETING or HEADLESS',
})
const Email = t.String({ format: 'email', maxLength: 320, error: 'Invalid email' })
const Name = t.String({ minLength: 1, maxLength: 255, error: 'name must be 1-255 characters' })
const Description = t.String({ maxLength: 1000, error: 'description must be at most 1000 characters' })
/** docs/decisions.md, Limits: a subject is 1-998 characters without a line break (the rendered subject is also folded). */
const Subject = t.String({
  minLength: 1, maxLength: 998, pattern: '^[^\\r\\n]*$',
  error: 'subject must be 1-998 characters without line breaks',
  description: 'Handlebars template, rendered without HTML escaping; 1-998 characters, no line break',
})
/** 500,000 characters of template source: far beyond real email bodies, cheap enough to compile. */
export const MAX_BODY_CHARS = 500_000
const Body = t.String({
  minLength: 1, maxLength: MAX_BODY_CHARS,
  error: `body must be 1-${MAX_BODY_CHARS} characters`,
  description: 'HTML with Handlebars {{variable}} placeholders (HTML-escaped when rendered); must compile',
})
const OptDesign = t.Optional(Design)
const OptPreheader = t.Optional(t.Union([Preheader, t.Null()], { error: 'preheader must be at most 255 characters without line breaks, or null' }))

/** A display name goes into the From header: no line breaks. */
const FromName = t.String({ maxLength: 255, pattern: '^[^\\r\\n]*$', error: 'fromName must be at most 255 characters without line breaks' })

const OptDescription = t.Optional(t.Union([Description, t.Null()], { error: 'description must be a string of at most 1000 characters, or null' }))
const OptFromName = t.Optional(t.Union([FromName, t.Null()], { error: 'fromName must be at most 255 characters without line breaks, or null' }))
const OptReplyTo = t.Optional(t.Union([Email, t.Null()], { error: 'replyTo must be an email address, or null' }))

export const Template = t.Object({
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
  projectId: t.String(),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})
export type Template = Static<typeof Template>

/**
 * POST /templates. `from` is optional in the schema only so that its absence answers the flat
 * `{error}` 400 of docs/decisions.md, Errors; the service requires it.
 */
export const CreateTemplateBody = t.Object({
  name: Name,
  description: OptDescription,
  subject: Subject,
  body: Body,
  design: OptDesign,
  preheader: OptPreheader,
  from: t.Optional(Email),
  fromName: OptFromName,
  replyTo: OptReplyTo,
  type: t.Optional(TypeField),
})
export type CreateTemplate = Static<typeof CreateTemplateBody>

/** PATCH /templates/:id: any subset; null clears description, fromName, replyTo and design; a body without a design clears the design. */
export const UpdateTemplateBody = t.Object({
  name: t.Optional(Name),
  description: OptDescription,
  subject: t.Optional(Subject),
  body: t.Optional(Body),
  /** Omitted with a changed `body`: the design no longer describes the body and is cleared. */
  design: OptDesign,
  /** Null takes it out of the body; a body sent alone keeps the preheader (put back at its top). */
  preheader: OptPreheader,
  from: t.Optional(Email),
  fromName: OptFromName,
  replyTo: OptReplyTo,
  type: t.Optional(TypeField),
})
export type UpdateTemplate = Static<typeof UpdateTemplateBody>

export const ListTemplatesQuery = t.Object({
  page: positiveIntQuery('page', '1 to 1000000, default 1', 1_000_000),
  pageSize: positiveIntQuery('pageSize', `1 up, default ${DEFAULT_PAGE_SIZE}; values above ${MAX_PAGE_SIZE} are clamped to ${MAX_PAGE_SIZE}`),
  type: t.Optional(t.String({ description: 'TRANSACTIONAL, MARKETING or HEADLESS; any other value answers 400 BAD_REQUEST' })),
  search: t.Optional(t.String({ maxLength: 200, description: 'Case-insensitive substring of name, description or subject' })),
  sort: t.Optional(t.String({ description: 'createdAt (default), name (case-insensitive) or updatedAt; anything else falls back to createdAt' })),
  dir: t.Optional(t.String({ description: 'desc (default) or asc; anything else falls back to desc' })),
})
export type ListTemplatesQuery = Static<typeof ListTemplatesQuery>

export const TemplateList = t.Object({
  data: t.Array(Template),
  page: t.Integer(),
  pageSize: t.Integer(),
  total: t.Integer(),
  totalPages: t.Integer(),
})
export type TemplateList = Static<typeof TemplateList>

export const CampaignUse = t.Object({ id: t.String(), name: t.String(), status: t.String() })
export const WorkflowStepUse = t.Object({
  workflowId: t.String(), workflowName: t.String(), stepId: t.String(), stepName: t.String(), enabled: t.Boolean(),
})
export const TemplateUsage = t.Object({
  templateId: t.String(),
  campaigns: t.Array(CampaignUse),
  workflowSteps: t.Array(WorkflowStepUse),
  inUse: t.Boolean({ description: 'true when a workflow step sends it or an unsent campaign was built from it: DELETE answers 409 then' }),
})
export type TemplateUsage = Static<typeof TemplateUsage>

export const IdParams = t.Object({ id: t.String() })
export const ErrorBody = t.Object({ error: t.String() })

/** POST /templates/preview: content saved or not, and the contact to render it as. */
export const PreviewBody = t.Object({
  subject: t.String({ maxLength: 998, pattern: '^[^\\r\\n]*$', error: 'subject must be at most 998 characters without line breaks' }),
  body: Body,
  preheader: OptPreheader,
  contactId: t.Optional(t.String({ minLength: 1, maxLength: 64, error: 'contactId must be a contact id' , description: 'A contact of the project (404 otherwise); omitted: rendered as for an address that is not a contact' })),
})
export type PreviewInput = Static<typeof PreviewBody>

export const PreviewResult = t.Object({
  subject: t.String(),
  html: t.String(),
  text: t.String(),
  contact: t.Union([t.Object({ id: t.String(), email: t.String() }), t.Null()], { description: 'The contact rendered as, or null' }),
  missing: t.Array(t.String(), { description: 'Variables used without a fallback that render empty for this contact; built-in ones (email, unsubscribeUrl, subscribeUrl, manageUrl) are never listed' }),
})
export type PreviewResult = Static<typeof PreviewResult>

/** POST /templates/:id/test. */
export const TemplateTestBody = t.Object({
  email: Email,
  contactId: t.Optional(t.String({ minLength: 1, maxLength: 64, error: 'contactId must be a contact id', description: 'Render with this contact\'s data (a contact of the project, else 404)' })),
})
export type TemplateTestInput = Static<typeof TemplateTestBody>
export const TemplateTestResult = t.Object({
  success: t.Literal(true),
  data: t.Object({ id: t.String({ description: 'The id of the queued test email' }), email: t.String() }),
  message: t.String(),
})
export type TemplateTestResult = Static<typeof TemplateTestResult>
