import { t } from 'elysia'

/**
 * A whole number >= 1 in a query string (limit, page, pageSize, days, minutes). Checked as text, so that a
 * bad value is reported under its own name: Elysia's `t.Numeric` range check loses the parameter's name
 * (its error names only "root"). Zero, negatives, fractions, exponents and non-numbers are refused with
 * 400; upper bounds are the endpoint's business (most clamp, as docs/decisions.md, Lists and pages, says of `limit`).
 */
export function positiveIntQuery(rule: string) {
  return t.Optional(
    t.Transform(t.String({ pattern: '^[1-9][0-9]{0,8}$', error: `must be a whole number from ${rule}`, description: `Whole number, ${rule}` }))
      .Decode((v) => Number(v))
      .Encode((v) => String(v)),
  )
}
