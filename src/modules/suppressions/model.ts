import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'

/** TypeBox models of the suppression list: request validation and the OpenAPI document. */

export type { SuppressionReason } from './reasons'
const Reason = t.Union([t.Literal('bounce'), t.Literal('complaint'), t.Literal('manual')])

export const Suppression = t.Object({
  email: t.String(),
  reason: t.Union([t.Literal('bounce'), t.Literal('complaint'), t.Literal('manual')], { description: 'bounce: a hard bounce; complaint: the recipient reported spam; manual: added through the API' }),
  emailId: t.Union([t.String(), t.Null()], { description: 'The email whose bounce or complaint caused it' }),
  detail: t.Union([t.String(), t.Null()], { description: 'The SMTP reply of the bounce, or the note given' }),
  createdAt: t.String({ format: 'date-time' }),
}, { description: 'An address the project never sends to. POST /v1/send skips it and reports it in data.emails with status "suppressed".' })

export const SuppressionList = t.Object({
  data: t.Array(Suppression),
  cursor: t.Union([t.String(), t.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  hasMore: t.Boolean(),
  total: t.Integer({ description: 'Matching entries; computed on the first page only (0 on later pages)' }),
})

export const ListSuppressionsQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String()),
  reason: t.Optional(Reason),
  search: t.Optional(t.String({ description: 'Case-insensitive substring of the address' })),
})
export type ListSuppressionsQuery = Static<typeof ListSuppressionsQuery>

export const AddSuppressionBody = t.Object({
  email: t.String({ format: 'email', maxLength: 320, error: 'Invalid email' }),
  note: t.Optional(t.String({ maxLength: 1000 })),
})
export type AddSuppressionBody = Static<typeof AddSuppressionBody>

export const EmailParams = t.Object({ email: t.String({ minLength: 1, maxLength: 320 }) })
