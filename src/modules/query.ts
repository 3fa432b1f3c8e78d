import { t } from 'elysia'

/** The schema keyword that names a query parameter in its own schema (see positiveIntQuery). */
export const QUERY_PARAM = 'x-query-param'

/**
 * A whole number >= 1 in a query string (limit, page, pageSize, days, minutes). Zero, negatives,
 * fractions, non-numbers and values above `maximum` (by default the largest exact integer) are refused
 * with 400 naming the parameter; below that, upper bounds are the endpoint's business (most clamp, as the
 * contract says of `limit`).
 *
 * Elysia's `t.Numeric` is kept because it is the fast path (a TypeBox Transform made every list request
 * decode its query through TypeBox, about 13 µs more each). Its range check loses the parameter's name
 * (the error names only "root"), so the schema carries the name itself, for http/errors.ts.
 */
export function positiveIntQuery(name: string, rule: string, maximum = Number.MAX_SAFE_INTEGER) {
  return t.Optional(t.Numeric({
    minimum: 1, maximum, multipleOf: 1, [QUERY_PARAM]: name,
    error: `must be a whole number from ${rule}`, description: `Whole number, ${rule}`,
  }))
}
