import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { validation, type FieldError } from '../errors'
import { fieldPath, toFieldError } from '../http/errors'

/**
 * Validates input that did not come through an HTTP route (CLI, jobs) against the same TypeBox model the
 * route uses, with the same 422 field errors. Unknown properties are stripped (DECISIONS.md).
 */
export function parseInput<S extends TSchema>(schema: S, value: unknown): Static<S> {
  const cleaned = Value.Clean(schema, Value.Clone(value))
  const seen = new Set<string>()
  const errors: FieldError[] = []
  for (const e of Value.Errors(schema, cleaned)) {
    const field = fieldPath(e.path) || 'body'
    if (seen.has(field)) continue
    seen.add(field)
    errors.push(toFieldError(field, e as unknown as Parameters<typeof toFieldError>[1]))
  }
  if (errors.length) throw validation(errors, errors.length === 1 ? errors[0].message : `Validation failed for ${errors.length} fields`)
  return cleaned as Static<S>
}
