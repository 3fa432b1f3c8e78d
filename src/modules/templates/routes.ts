import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as service from './service'

const tags = ['templates']

/** Trims the address fields before validation (docs/decisions.md, Requests: emails are trimmed and lower-cased). */
function trimAddresses({ body }: { body: unknown }) {
  if (!body || typeof body !== 'object') return
  const b = body as Record<string, unknown>
  for (const k of ['from', 'replyTo']) if (typeof b[k] === 'string') b[k] = (b[k] as string).trim()
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
    .get('/:id/usage', ({ ctx, params }) => service.getTemplateUsage(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.TemplateUsage },
      detail: { tags, summary: 'Campaigns and workflow steps referencing the template', description: 'The campaigns and workflows modules plug their look-ups in; until they exist the lists are empty.' },
    })
}
