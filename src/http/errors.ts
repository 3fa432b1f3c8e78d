import type { ValidationError } from 'elysia'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { AppError, type FieldError } from '../errors'

/** The standard error envelope of API.md. The only place that turns errors into HTTP bodies. */
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

/** TypeBox error kinds mapped to the field-level codes clients see (`invalid_string` as in API.md). */
export function fieldCode(type: number): string {
  const T = ValueErrorType
  switch (type) {
    case T.ObjectRequiredProperty: return 'required'
    case T.StringFormat: case T.StringFormatUnknown: case T.StringPattern: return 'invalid_string'
    case T.StringMinLength: case T.ArrayMinItems: case T.NumberMinimum: case T.IntegerMinimum:
    case T.NumberExclusiveMinimum: case T.IntegerExclusiveMinimum: case T.ObjectMinProperties: return 'too_small'
    case T.StringMaxLength: case T.ArrayMaxItems: case T.NumberMaximum: case T.IntegerMaximum:
    case T.NumberExclusiveMaximum: case T.IntegerExclusiveMaximum: case T.ObjectMaxProperties: return 'too_big'
    case T.Union: case T.Literal: return 'invalid_enum_value'
    default: return 'invalid_type'
  }
}

export function fieldPath(path: string): string {
  return path.replace(/^\//, '').split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).join('.')
}

/** One TypeBox error as a field error; an absent value is `required` whatever the type check said first. */
export function toFieldError(field: string, e: { message: string; type: number; value: unknown; schema?: Record<string, unknown> }): FieldError {
  if (e.value === undefined) return { field, message: `${field}: Required`, code: 'required', received: 'undefined' }
  let message = e.message
  if (e.schema && typeof e.schema.error === 'string') message = e.schema.error
  else if (e.schema?.format === 'email') message = 'Invalid email'
  return { field, message: `${field}: ${message}`, code: fieldCode(e.type), received: e.value }
}

/**
 * Elysia/TypeBox validation failure -> one entry per field (first error each): 422 VALIDATION_ERROR for a
 * body, 400 BAD_REQUEST for query parameters ("invalid parameters" in the status table of the API).
 */
export function fromValidation(err: ValidationError): AppError {
  const seen = new Set<string>()
  const errors: FieldError[] = []
  for (const e of err.all as Array<{ path: string; message: string; type: number; value: unknown; schema?: Record<string, unknown>; summary?: string }>) {
    const field = fieldPath(e.path ?? '') || (err.type === 'query' ? 'query' : 'body')
    if (seen.has(field)) continue
    seen.add(field)
    errors.push(toFieldError(field, e))
  }
  if (!errors.length) errors.push({ field: err.type, message: err.message, code: 'invalid_type' })
  const message = errors.length === 1 ? errors[0].message : `Validation failed for ${errors.length} fields`
  if (err.type === 'query') return new AppError('BAD_REQUEST', message, { errors })
  return new AppError('VALIDATION_ERROR', message, { errors })
}
