import { t } from 'elysia'
import { invalidField } from '../../errors'

/**
 * A design: the dashboard editor's JSON document kept beside a template's or a campaign's `body`.
 * The API stores and returns it as given and never renders it: `body` is what is sent.
 */

/** Characters of a design's JSON text: twice a body's, since a design carries its text and its styles. */
export const MAX_DESIGN_CHARS = 1_000_000

/**
 * Unknown to TypeBox and checked by `checkDesign`: Elysia's coercion would turn a string or an array given
 * for a Record into an object rather than refuse it.
 */
export const Design = t.Unknown({
  description: `The visual editor's document (a JSON object of at most ${MAX_DESIGN_CHARS} characters as JSON) that produced \`body\`. Stored and returned as given, never rendered: \`body\` is what is sent. null for a body written as HTML.`,
})
export type Design = Record<string, unknown>

/**
 * The design to store: null when absent or null; a 422 on field `design` when it is not a JSON object
 * (code `invalid_type`) or its JSON is over the limit (code `too_large`).
 */
export function checkDesign(design: unknown): Design | null {
  if (design == null) return null
  if (typeof design !== 'object' || Array.isArray(design)) {
    throw invalidField('design', 'design must be a JSON object, or null', 'invalid_type', design)
  }
  const chars = JSON.stringify(design).length
  if (chars > MAX_DESIGN_CHARS) {
    throw invalidField('design', `design: ${chars} characters of JSON, more than ${MAX_DESIGN_CHARS}`, 'too_large')
  }
  return design as Design
}
