import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'
import { MAX_DATA_BYTES, MAX_DATA_DEPTH } from './data'

/** TypeBox models of the contacts module: request validation and the OpenAPI document. */

export const Email = t.String({ format: 'email', maxLength: 320, error: 'Invalid email' })
export const ContactDataIn = t.Record(t.String(), t.Unknown(), {
  description: `Custom fields. null deletes a field, "" is ignored, {value, persistent:false} is not stored (track/send: used for that request only), reserved keys (id, service_id, service_email, email, unsubscribeUrl, subscribeUrl, manageUrl) are dropped. Limits (422 VALIDATION_ERROR, field data): at most ${MAX_DATA_DEPTH} levels of objects and arrays, data itself the first (code too_deep); at most ${MAX_DATA_BYTES} bytes as compact JSON, for the request and for the contact's stored data after the change (code too_big); no NUL character in strings or keys (code invalid_string).`,
})

export const Contact = t.Object({
  id: t.String(),
  email: t.String(),
  subscribed: t.Boolean(),
  data: t.Record(t.String(), t.Unknown()),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
})

export const ContactWithMeta = t.Composite([Contact, t.Object({ _meta: t.Object({ isNew: t.Boolean(), isUpdate: t.Boolean() }) })])

/** POST /contacts. `email` is optional here only so that its absence answers the flat 400 of docs/decisions.md, Errors. */
export const CreateContactBody = t.Object({
  email: t.Optional(Email),
  subscribed: t.Optional(t.Boolean({ default: undefined })),
  data: t.Optional(t.Union([ContactDataIn, t.Null()])),
})

export const UpdateContactBody = t.Object({
  email: t.Optional(Email),
  subscribed: t.Optional(t.Boolean()),
  data: t.Optional(t.Union([ContactDataIn, t.Null()])),
})

export const ListContactsQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String({ description: 'Opaque cursor from the previous page' })),
  search: t.Optional(t.String({ description: 'Case-insensitive substring of the email' })),
  subscribed: t.Optional(t.BooleanString({ description: 'true or false; omitted returns both states' })),
  sort: t.Optional(t.String({ description: 'createdAt (default) or email; anything else falls back to createdAt' })),
  dir: t.Optional(t.String({ description: 'desc (default) or asc; anything else falls back to desc' })),
  total: t.Optional(t.BooleanString({ description: 'false: the first page without its count (total 0, as on later pages), for a client that shows the rows at once and asks the count apart (the dashboard); default true' })),
})
export type ListContactsQuery = Static<typeof ListContactsQuery>

export const ContactList = t.Object({
  data: t.Array(Contact),
  cursor: t.Union([t.String(), t.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  hasMore: t.Boolean(),
  total: t.Integer({ description: 'Matching contacts; computed on the first page only (0 on later pages)' }),
})

export const IdParams = t.Object({ id: t.String() })
export const JobParams = t.Object({ jobId: t.String() })
export const FieldParams = t.Object({ field: t.String({ minLength: 1, maxLength: 255 }) })

export const LookupBody = t.Object({
  emails: t.Array(t.String({ maxLength: 320 }), { minItems: 1, maxItems: 500, description: 'At most 500 emails' }),
})
export const LookupResult = t.Object({
  results: t.Array(t.Object({
    email: t.String(),
    exists: t.Boolean(),
    id: t.Union([t.String(), t.Null()]),
    subscribed: t.Union([t.Boolean(), t.Null()]),
  })),
  found: t.Integer(),
  missing: t.Integer(),
})

export const FieldInfo = t.Object({
  name: t.String(),
  standard: t.Boolean({ description: 'true for email, subscribed, createdAt, updatedAt' }),
  type: t.String({ description: 'string | number | boolean | date | object | array | mixed' }),
  types: t.Record(t.String(), t.Integer(), { description: 'How many contacts hold a value of each type' }),
  count: t.Integer({ description: 'Contacts that have this field' }),
  coverage: t.Number({ description: 'count / all contacts, in percent (0-100, one decimal)' }),
})
export const FieldList = t.Object({ totalContacts: t.Integer(), fields: t.Array(FieldInfo) })

export const FieldValuesQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 1000, default 100; larger values are clamped to 1000'),
  search: t.Optional(t.String({ description: 'Case-insensitive substring of the value' })),
})
export const FieldValues = t.Object({
  field: t.String(),
  values: t.Array(t.Object({ value: t.Unknown(), count: t.Integer() })),
  distinct: t.Integer({ description: 'Number of distinct values (all, not only those listed)' }),
})

export const UsageRef = t.Object({ id: t.String(), name: t.String(), where: t.Optional(t.String()) })
export const FieldUsage = t.Object({
  field: t.String(),
  inUse: t.Boolean(),
  segments: t.Array(UsageRef),
  campaigns: t.Array(UsageRef),
  workflows: t.Array(UsageRef),
})

export const BulkBody = t.Object({
  contactIds: t.Array(t.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 1000, description: 'At most 1,000 contact ids' }),
})

export const JobQueued = t.Object({ jobId: t.String(), status: t.Literal('queued') })

export const JobRecord = t.Object({
  id: t.String(),
  type: t.String({ description: 'import | bulk-subscribe | bulk-unsubscribe | bulk-delete' }),
  status: t.Union([t.Literal('queued'), t.Literal('running'), t.Literal('completed'), t.Literal('failed')]),
  progress: t.Integer({ minimum: 0, maximum: 100 }),
  total: t.Integer(),
  processed: t.Integer(),
  result: t.Union([t.Null(), t.Object({
    created: t.Integer(), updated: t.Integer(), skipped: t.Integer(), failed: t.Integer(),
    errors: t.Array(t.Object({ row: t.Integer(), message: t.String() })),
  })]),
  error: t.Optional(t.String({ description: 'Why a failed job failed' })),
  createdAt: t.String({ format: 'date-time' }),
  finishedAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})

// The dashboard's contacts page: a filter (segment condition, search, state), pages, bulk jobs and CSV export of it.

export const ContactFilter = t.Object({
  condition: t.Optional(t.Unknown({ description: 'A segment filter tree (see POST /segments); omitted: every contact' })),
  search: t.Optional(t.String({ maxLength: 200, description: 'Substring of the email or of a custom field\'s text value; case and accents are folded ("muller" finds "Müller")' })),
  subscribed: t.Optional(t.Boolean()),
})
export type ContactFilter = Static<typeof ContactFilter>

export const QueryBody = t.Composite([ContactFilter, t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: '1 to 100, default 20' })),
  cursor: t.Optional(t.String({ maxLength: 1000, description: 'Opaque cursor from the previous page' })),
  sort: t.Optional(t.Union([t.Literal('createdAt'), t.Literal('email')])),
  dir: t.Optional(t.Union([t.Literal('asc'), t.Literal('desc')])),
  total: t.Optional(t.Boolean({ description: 'false: no count on the first page (0), as GET /contacts?total=false' })),
})])
export type QueryBody = Static<typeof QueryBody>

export const CountBody = t.Composite([ContactFilter, t.Object({
  estimate: t.Optional(t.Boolean({ description: 'true: answer within about a third of a second with an estimate (`estimated: true`, two significant digits) when the exact count would take longer; a filter matching few contacts is still counted exactly' })),
})])
export type CountBody = Static<typeof CountBody>

export const CountResult = t.Object({ total: t.Integer(), estimated: t.Boolean({ description: 'true: `total` is an estimate from a random sample of the table' }) })

export const BULK_ACTIONS = ['subscribe', 'unsubscribe', 'delete', 'addToSegment', 'removeFromSegment', 'setField'] as const
export const BulkActionBody = t.Object({
  action: t.Union(BULK_ACTIONS.map((a) => t.Literal(a))),
  contactIds: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 1000, description: 'A selection of at most 1,000 ids; or `filter`' })),
  filter: t.Optional(ContactFilter),
  segmentId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'addToSegment / removeFromSegment: a STATIC segment of the project' })),
  field: t.Optional(t.String({ minLength: 1, maxLength: 255, description: 'setField: the custom field' })),
  value: t.Optional(t.Union([t.String({ maxLength: 10_000 }), t.Number(), t.Boolean(), t.Null()], { description: 'setField: the value (null removes the field)' })),
})
export type BulkActionBody = Static<typeof BulkActionBody>

export const FieldType = t.Union([t.Literal('string'), t.Literal('number'), t.Literal('boolean'), t.Literal('date')])
export type FieldType = Static<typeof FieldType>

export const RenameFieldBody = t.Object({ to: t.String({ minLength: 1, maxLength: 255, description: 'The new name' }) })
export const RetypeFieldBody = t.Object({ type: FieldType, dryRun: t.Optional(t.Boolean({ description: 'true: only count the values that do not fit' })) })
export const FieldChange = t.Object({
  field: t.String(),
  contacts: t.Integer({ description: 'Contacts holding the field' }),
  jobId: t.Union([t.String(), t.Null()], { description: 'Set when the change runs as a job (more than 5,000 contacts): poll GET /contacts/bulk/:jobId' }),
  changed: t.Integer({ description: 'Contacts changed now (0 when queued)' }),
})
export const RetypeResult = t.Composite([FieldChange, t.Object({
  type: FieldType,
  fit: t.Integer({ description: 'Values that convert to the type' }),
  misfit: t.Integer({ description: 'Values that do not convert: the retype leaves them as they are' }),
  examples: t.Array(t.Unknown(), { description: 'Up to 5 values that do not fit' }),
  dryRun: t.Boolean(),
})])

// Import with a column mapping

export const ColumnMap = t.Object({
  column: t.String({ maxLength: 255, description: 'A header of the file, as written' }),
  to: t.Union([t.Literal('email'), t.Literal('subscribed'), t.Literal('field'), t.Literal('ignore')]),
  field: t.Optional(t.String({ minLength: 1, maxLength: 255, description: 'to=field: an existing field or a new one' })),
  type: t.Optional(t.Union([FieldType, t.Literal('auto')], { description: 'to=field: how cells are read (auto: typed from each value, the default)' })),
})
export type ColumnMap = Static<typeof ColumnMap>
export const ImportMapping = t.Array(ColumnMap, { maxItems: 500, description: 'One entry per column; a column not named keeps its automatic mapping' })
export type ImportMapping = Static<typeof ImportMapping>

export const MappedImportBody = t.Object({
  file: t.File({ description: 'CSV, at most 5 MB' }),
  /** JSON text (multipart); checked against ImportMapping by the service, so that errors name `mapping.<i>.<key>`. */
  mapping: t.Optional(t.Unknown({ description: 'JSON of an array of {column, to: email|subscribed|field|ignore, field?, type?: auto|string|number|boolean|date}' })),
})

export const ImportPreview = t.Object({
  columns: t.Array(t.Object({
    column: t.String(),
    to: t.String(),
    field: t.Optional(t.String()),
    type: t.Optional(t.String()),
    existing: t.Boolean({ description: 'to=field: the field exists in the project already' }),
    misfit: t.Integer({ description: 'Cells of the file that do not fit the type' }),
  })),
  rows: t.Array(t.Array(t.String()), { description: 'The first 10 data rows' }),
  totalRows: t.Integer(),
  errors: t.Array(t.Object({ row: t.Integer(), message: t.String() }), { description: 'Rows that would fail (first 100)' }),
  failing: t.Integer({ description: 'Rows that would fail' }),
})
