import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import { previewMessage, testTemplate } from './preview'
import * as service from './service'

const tags = ['templates']

/** Trims the address fields before validation (docs/decisions.md, Requests: emails are trimmed and lower-cased). */
function trimAddresses({ body }: { body: unknown }) {
  if (!body || typeof body !== 'object') return
  const b = body as Record<string, unknown>
  for (const k of ['from', 'replyTo', 'email']) if (typeof b[k] === 'string') b[k] = (b[k] as string).trim()
}

/** On create, an empty or null `from` is a missing one: the flat 400 of docs/decisions.md, Errors, not a 422. */
function dropEmptyFrom({ body }: { body: unknown }) {
  if (body && typeof body === 'object' && ((body as { from?: unknown }).from === '' || (body as { from?: unknown }).from === null)) {
    delete (body as { from?: unknown }).from
  }
}

const VARIABLES = 'Placeholders: `{{field}}` and `{{nested.field}}` from the contact data and the send request data, plus `{{email}}`, `{{unsubscribeUrl}}`, `{{subscribeUrl}}`, `{{manageUrl}}`. Body values are HTML-escaped (`{{{field}}}` inserts raw HTML); a missing variable renders empty. Helpers: if, unless, each, with, lookup; no partials. A subject or body that does not compile answers 422 VALIDATION_ERROR (field `subject` or `body`, code `invalid_template`).'

export function templatesRoutes(deps: Deps) {
  return new Elysia({ prefix: '/templates' })
    .use(authPlugin(deps))
    .onTransform(trimAddresses)
    .post('', async ({ ctx, body, set }) => {
      const tpl = await service.createTemplate(ctx, body)
      set.status = 201
      return tpl
    }, {
      apiKey: 'secret', body: m.CreateTemplateBody, transform: dropEmptyFrom,
      response: { 201: m.Template, 400: m.ErrorBody },
      detail: {
        tags, summary: 'Create a template',
        description: `201 with the template. A missing \`from\` answers 400 \`{error}\`; a \`from\` whose domain is not verified for the project answers 403 (code INTERNAL_SERVER_ERROR, kept for compatibility with Plunk's API). \`type\` defaults to MARKETING. ${VARIABLES}`,
      },
    })
    .post('/preview', ({ ctx, body }) => previewMessage(ctx, body), {
      apiKey: 'secret', body: m.PreviewBody, response: { 200: m.PreviewResult },
      detail: {
        tags, summary: 'Preview a subject and body as one contact gets them (writes nothing)',
        description: `Not in the contract. Content saved or not (the editors send what they show), rendered with the data, email and subscription links of \`contactId\` (a contact of the project, else 404), or without it as for an address that is not a contact. \`missing\` lists the variables used without a fallback that render empty for that contact; the built-in ones never. A source that does not compile or exceeds a render budget answers 422. ${VARIABLES}`,
      },
    })
    .get('', ({ ctx, query }) => service.listTemplates(ctx, query), {
      apiKey: 'secret', query: m.ListTemplatesQuery, response: { 200: m.TemplateList },
      detail: { tags, summary: 'List templates (offset list)', description: `Pages of at most ${m.MAX_PAGE_SIZE} (larger pageSize values are clamped); \`totalPages\` is ceil(total / pageSize).` },
    })
    .get('/:id', ({ ctx, params }) => service.getTemplate(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Template },
      detail: { tags, summary: 'Get a template' },
    })
    .patch('/:id', ({ ctx, params, body }) => service.updateTemplate(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.UpdateTemplateBody, response: { 200: m.Template },
      detail: { tags, summary: 'Update a template', description: `Any subset of the fields; null clears description, fromName and replyTo. A changed \`from\` must be on a verified domain (403). ${VARIABLES}` },
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteTemplate(ctx, params.id)
      set.status = 204
      return ''
    }, {
      apiKey: 'secret', params: m.IdParams,
      detail: { tags, summary: 'Delete a template', description: '204. 409 CONFLICT while a workflow step sends it or an unsent campaign was built from it (error.details lists them).' },
    })
    .post('/:id/duplicate', async ({ ctx, params, set }) => {
      const tpl = await service.duplicateTemplate(ctx, params.id)
      set.status = 201
      return tpl
    }, {
      apiKey: 'secret', params: m.IdParams, response: { 201: m.Template },
      detail: { tags, summary: 'Duplicate a template', description: '201 with the new template (its `id` is the new template id), named "<name> (copy)". The sender is not re-checked.' },
    })
    .post('/:id/test', ({ ctx, params, body }) => testTemplate(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.TemplateTestBody, response: { 200: m.TemplateTestResult },
      detail: { tags, summary: 'Send a test email of the saved template to one address', description: 'Not in the contract. Rendered with the data of `contactId` (a contact of the project, else 404) or of the address\'s own contact; the subscription links are only ever the address\'s own. Marked as a test (sourceType test). A suppressed address answers 422; a sender domain no longer verified 403.' },
    })
    .get('/:id/usage', ({ ctx, params }) => service.getTemplateUsage(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.TemplateUsage },
      detail: { tags, summary: 'Campaigns and workflow steps referencing the template', description: 'The campaigns and workflows modules plug their look-ups in; until they exist the lists are empty.' },
    })
}
