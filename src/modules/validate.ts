/**
 * TypeBox validation, transport-neutral: input that did not come through an HTTP route, and the mapping
 * of TypeBox errors to the field errors of a VALIDATION_ERROR, which HTTP's error handler uses too.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { validation, type FieldError } from '../errors'
import { unstorableInput } from '../storable'

/**
 * Validates input that did not come through an HTTP route (CLI, jobs) against the same TypeBox model the
 * route uses, with the same 422 field errors. Unknown properties are stripped (docs/decisions.md, Requests).
 */
export function parseInput<S extends TSchema>(schema: S, value: unknown): Static<S> {
  const cleaned = Value.Clean(schema, Value.Clone(value))
  const seen = new Set<string>()
  const errors: FieldError[] = []
  for (const e of Value.Errors(schema, cleaned)) {
    const field = fieldPath(e.path) || 'body'
    if (seen.has(field)) continue
    seen.add(field)
    errors.push(toFieldError(field, e))
  }
  if (errors.length) throw validation(errors, errors.length === 1 ? errors[0].message : `Validation failed for ${errors.length} fields`)
  // As over HTTP (src/http/text.ts): text no store can hold is refused before any query.
  const unstorable = unstorableInput(cleaned)
  if (unstorable) throw unstorable
  return cleaned as Static<S>
}

/** TypeBox error kinds mapped to the field-level codes clients see (`invalid_string` as in docs/decisions.md, Errors). */
function fieldCode(type: number): string {
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

/** A TypeBox error path (a JSON pointer, `/a/b`) as the field name clients see (`a.b`). */
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
