import type { ValidationError } from 'elysia'
import { AppError, type FieldError } from '../errors'
import { QUERY_PARAM } from '../modules/query'
import { fieldPath, toFieldError } from '../modules/validate'

/** The standard error envelope (docs/decisions.md, Errors). The only place that turns errors into HTTP bodies. */
export function envelope(err: AppError, requestId: string) {
  if (err.opts.flat) return { error: err.message }
  return {
    success: false,
    // The official SDK (@plunk/node) shows a top-level `message`; without it its users read "Unknown API Error".
    message: err.message,
    error: {
      code: err.code,
      message: err.message,
      statusCode: err.status,
      requestId,
      ...(err.opts.errors ? { errors: err.opts.errors } : {}),
      ...(err.opts.details ? { details: err.opts.details } : {}),
      ...(err.opts.suggestion ? { suggestion: err.opts.suggestion } : {}),
    },
    timestamp: new Date().toISOString(),
  }
}

/**
 * Elysia/TypeBox validation failure -> one entry per field (first error each): 422 VALIDATION_ERROR for a
 * body, 400 BAD_REQUEST for query parameters ("invalid parameters" in the status table of the API).
 */
export function fromValidation(err: ValidationError): AppError {
  let query = err.type === 'query'
  const seen = new Set<string>()
  const errors: FieldError[] = []
  for (const e of err.all as Array<{ path: string; message: string; type: number; value: unknown; schema?: Record<string, unknown>; summary?: string }>) {
    // A query parameter's own range check (positiveIntQuery) reports no path: its schema names it.
    const param = e.schema?.[QUERY_PARAM]
    if (typeof param === 'string') query = true
    const field = fieldPath(e.path ?? '') || (typeof param === 'string' ? param : err.type === 'query' ? 'query' : 'body')
    if (seen.has(field)) continue
    seen.add(field)
    errors.push(toFieldError(field, e))
  }
  if (!errors.length) errors.push({ field: err.type, message: err.message, code: 'invalid_type' })
  const message = errors.length === 1 ? errors[0].message : `Validation failed for ${errors.length} fields`
  if (query) return new AppError('BAD_REQUEST', message, { errors })
  return new AppError('VALIDATION_ERROR', message, { errors })
}
