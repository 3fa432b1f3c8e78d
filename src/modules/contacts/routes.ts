import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { invalidField, tooLarge } from '../../errors'
import { authPlugin } from '../../http/auth'
import * as bulk from './bulk'
import { exportCsv } from './export'
import * as fields from './fields'
import * as imports from './import'
import * as m from './model'
import * as query from './query'
import * as service from './service'

const tags = ['contacts']
const ErrorBody = t.Object({ error: t.String() })

/**
 * Runs before validation on contacts and track bodies: trims `email` (and `event`), and refuses a `data`
 * that is not an object (Elysia would otherwise coerce "abc" into {0: "a", ...}).
 */
export function prepareBody({ body }: { body: unknown }) {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return
  const b = body as { email?: unknown; event?: unknown; data?: unknown }
  if (typeof b.email === 'string') b.email = b.email.trim()
  if (typeof b.event === 'string') b.event = b.event.trim()
  if (b.data !== undefined && b.data !== null && (typeof b.data !== 'object' || Array.isArray(b.data))) {
    throw invalidField('data', 'data: Expected an object of custom fields', 'invalid_type', b.data)
  }
}

export function contactsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/contacts' })
    .use(authPlugin(deps))
    .onTransform(prepareBody)
    .get('', ({ ctx, query }) => service.listContacts(ctx, query), {
      apiKey: 'secret', query: m.ListContactsQuery, response: { 200: m.ContactList },
      detail: { tags, summary: 'List contacts (cursor list)', description: 'Keyset pages: the opaque cursor carries the sort key of the last row, so contacts inserted while paging never shift the pages not yet read. `subscribed=true|false` filters by state; `total` is computed on the first page only, and not at all with `total=false` (0 then).' },
    })
    .post('', async ({ ctx, body, set }) => {
      const contact = await service.createContact(ctx, body)
      set.status = contact._meta.isNew ? 201 : 200
      return contact
    }, {
      apiKey: 'secret', body: m.CreateContactBody,
      // No body or an empty email is a missing email: the flat 400 of docs/decisions.md, Errors, rather than a 422.
      transform: (c) => {
        if (c.body === undefined || c.body === null) c.body = {}
        const b = c.body as { email?: unknown }
        if (typeof b === 'object' && b.email === '') delete b.email
      }, response: { 200: m.ContactWithMeta, 201: m.ContactWithMeta, 400: ErrorBody, 409: ErrorBody },
      detail: { tags, summary: 'Create or update a contact by email', description: '201 with `_meta.isNew` when created, 200 when the email matched an existing contact. A missing email answers 400 `{error}`; 409 when other requests deleted the contact while it was written, or the write deadlocked with theirs, three times over (send it again).' },
    })
    // The dashboard's filtered list (docs/decisions.md, Contacts page)
    .post('/query', ({ ctx, body }) => query.queryContacts(ctx, body), {
      apiKey: 'secret', body: m.QueryBody, response: { 200: m.ContactList },
      detail: { tags, summary: 'List contacts matching a filter (cursor list)', description: `Keyset pages like GET /contacts, over a filter: \`condition\` (a segment filter tree, 422 with its path when bad), \`subscribed\`, and \`search\` over the email and the text values of the custom fields, folding case and accents. ${m.ContactFilter.properties.condition.description ?? ''}` },
    })
    .post('/query/count', ({ ctx, body }) => query.countContacts(ctx, body), {
      apiKey: 'secret', body: m.CountBody, response: { 200: m.CountResult },
      detail: { tags, summary: 'Count the contacts a filter matches', description: 'Exact unless `estimate: true`: then, when counting would take longer than about 300 ms, an estimate from a random sample of the table (`estimated: true`).' },
    })
    .post('/export', async ({ ctx, body }) => {
      const where = await query.filterWhere(ctx, body)
      const chunks = exportCsv(ctx, where)
      const stream = new ReadableStream<string>({
        async pull(controller) {
          const next = await chunks.next()
          if (next.done) controller.close()
          else controller.enqueue(next.value)
        },
      })
      return new Response(stream, { headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename="contacts.csv"' } })
    }, {
      apiKey: 'secret', body: m.ContactFilter,
      detail: { tags, summary: 'CSV of the contacts a filter matches', description: 'Columns as `mailctl contacts export`: id, email, subscribed, createdAt, updatedAt, then one per custom field; creation order. POST /contacts/import reads it back.' },
    })
    .post('/lookup', ({ ctx, body }) => service.lookupContacts(ctx, body.emails), {
      apiKey: 'secret', body: m.LookupBody, response: { 200: m.LookupResult },
      detail: { tags, summary: 'Check which of up to 500 emails are contacts' },
    })
    // Custom fields
    .get('/fields', ({ ctx }) => fields.listFields(ctx), {
      apiKey: 'secret', response: { 200: m.FieldList },
      detail: { tags, summary: 'Standard and custom fields with inferred types and coverage' },
    })
    .get('/fields/:field/values', ({ ctx, params, query }) => fields.fieldValues(ctx, params.field, query), {
      apiKey: 'secret', params: m.FieldParams, query: m.FieldValuesQuery, response: { 200: m.FieldValues },
      detail: { tags, summary: 'Distinct values of a custom field (or subscribed), most frequent first' },
    })
    .get('/fields/:field/usage', ({ ctx, params }) => fields.fieldUsage(ctx, params.field), {
      apiKey: 'secret', params: m.FieldParams, response: { 200: m.FieldUsage },
      detail: { tags, summary: 'Segments, campaigns and workflows referencing a field' },
    })
    .post('/fields/:field/rename', ({ ctx, params, body }) => fields.renameField(ctx, params.field, body.to), {
      apiKey: 'secret', params: m.FieldParams, body: m.RenameFieldBody, response: { 200: m.FieldChange },
      detail: { tags, summary: 'Rename a custom field on every contact', description: `The values move to the new name. 409 when contacts already hold the new name. Above ${fields.FIELD_INLINE_MAX} contacts it runs as a job: poll GET /contacts/bulk/:jobId.` },
    })
    .post('/fields/:field/retype', ({ ctx, params, body }) => fields.retypeField(ctx, params.field, body.type, body.dryRun), {
      apiKey: 'secret', params: m.FieldParams, body: m.RetypeFieldBody, response: { 200: m.RetypeResult },
      detail: { tags, summary: 'Convert a custom field\'s values to a type', description: `Counts the values that fit and those that do not (left as they are); \`dryRun: true\` only counts. Above ${fields.FIELD_INLINE_MAX} contacts the conversion runs as a job: poll GET /contacts/bulk/:jobId.` },
    })
    .delete('/fields/:field', ({ ctx, params }) => fields.deleteField(ctx, params.field), {
      apiKey: 'secret', params: m.FieldParams,
      response: { 200: t.Object({ field: t.String(), deleted: t.Boolean(), contactsUpdated: t.Integer() }) },
      detail: { tags, summary: 'Delete a custom field from every contact of the project' },
    })
    // CSV import
    .post('/import', async ({ ctx, body, set }) => {
      const queued = await imports.queueImport(ctx, body.file, imports.parseMapping(body.mapping))
      set.status = 202
      return queued
    }, {
      apiKey: 'secret', type: 'multipart/form-data', body: m.MappedImportBody, response: { 202: m.JobQueued },
      parse: ({ request }) => {
        const len = Number(request.headers.get('content-length') ?? 0)
        // The multipart envelope adds a little to the file; anything well beyond 5 MB is refused unread.
        if (len > imports.MAX_IMPORT_BYTES + 64 * 1024) throw tooLarge(`Request of ${len} bytes: CSV imports are limited to 5 MB`)
      },
      detail: { tags, summary: 'Upload a CSV (multipart field `file`, at most 5 MB); queued', description: 'Header row: an email column (required), subscribed (optional), other columns go to custom fields: one matching the header case- and space-insensitively, else a new one. The optional multipart field `mapping` (JSON: [{column, to: email|subscribed|field|ignore, field?, type?: auto|string|number|boolean|date}]) overrides that per column; a cell that does not fit its column\'s type fails its row. Answers 202 {jobId}; poll GET /contacts/import/:jobId.' },
    })
    .post('/import/preview', async ({ ctx, body }) => {
      if (body.file.size > imports.MAX_IMPORT_BYTES) throw tooLarge(`The CSV file is ${body.file.size} bytes; imports are limited to 5 MB`)
      return imports.previewImport(ctx, await body.file.text(), imports.parseMapping(body.mapping))
    }, {
      apiKey: 'secret', type: 'multipart/form-data', body: m.MappedImportBody, response: { 200: m.ImportPreview },
      parse: ({ request }) => {
        const len = Number(request.headers.get('content-length') ?? 0)
        if (len > imports.MAX_IMPORT_BYTES + 64 * 1024) throw tooLarge(`Request of ${len} bytes: CSV imports are limited to 5 MB`)
      },
      detail: { tags, summary: 'Preview an import: the mapping of each column, the first rows, the rows that would fail', description: 'Same multipart fields as POST /contacts/import; nothing is stored.' },
    })
    .get('/import/:jobId', ({ ctx, params }) => imports.getImportJob(ctx, params.jobId), {
      apiKey: 'secret', params: m.JobParams, response: { 200: m.JobRecord },
      detail: { tags, summary: 'Poll an import job: progress and per-row error report' },
    })
    // Bulk
    .post('/bulk-subscribe', async ({ ctx, body, set }) => { set.status = 202; return bulk.queueBulk(ctx, 'subscribe', body.contactIds) }, {
      apiKey: 'secret', body: m.BulkBody, response: { 202: m.JobQueued },
      detail: { tags, summary: 'Subscribe up to 1,000 contacts by id; queued' },
    })
    .post('/bulk-unsubscribe', async ({ ctx, body, set }) => { set.status = 202; return bulk.queueBulk(ctx, 'unsubscribe', body.contactIds) }, {
      apiKey: 'secret', body: m.BulkBody, response: { 202: m.JobQueued },
      detail: { tags, summary: 'Unsubscribe up to 1,000 contacts by id; queued' },
    })
    .post('/bulk-delete', async ({ ctx, body, set }) => { set.status = 202; return bulk.queueBulk(ctx, 'delete', body.contactIds) }, {
      apiKey: 'secret', body: m.BulkBody, response: { 202: m.JobQueued },
      detail: { tags, summary: 'Delete up to 1,000 contacts by id; queued' },
    })
    .post('/bulk', async ({ ctx, body, set }) => { set.status = 202; return bulk.queueBulkAction(ctx, body) }, {
      apiKey: 'secret', body: m.BulkActionBody, response: { 202: t.Composite([m.JobQueued, t.Object({ total: t.Integer() })]) },
      detail: { tags, summary: 'A bulk action on a selection or on every match of a filter; queued', description: 'action: subscribe, unsubscribe, delete, addToSegment / removeFromSegment (segmentId of a STATIC segment), setField (field, value; null removes it). Either `contactIds` (at most 1,000) or `filter` ({condition?, search?, subscribed?}, as POST /contacts/query). Poll GET /contacts/bulk/:jobId.' },
    })
    .get('/bulk/:jobId', ({ ctx, params }) => bulk.getBulkJob(ctx, params.jobId), {
      apiKey: 'secret', params: m.JobParams, response: { 200: m.JobRecord },
      detail: { tags, summary: 'Poll a bulk job' },
    })
    // One contact
    .get('/:id', ({ ctx, params }) => service.getContact(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Contact },
      detail: { tags, summary: 'Get a contact' },
    })
    .patch('/:id', ({ ctx, params, body }) => service.updateContact(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.UpdateContactBody, response: { 200: m.Contact },
      detail: { tags, summary: 'Update a contact', description: '409 when another contact of the project uses the email; flipping subscribed emits contact.subscribed or contact.unsubscribed; data is patched by the data rules.' },
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteContact(ctx, params.id)
      set.status = 204
      return ''
    }, {
      apiKey: 'secret', params: m.IdParams,
      detail: { tags, summary: 'Delete a contact permanently (its events too); empty 204 answer' },
    })
}
