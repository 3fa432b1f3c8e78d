import { badRequest } from '../errors'
import { isStorableTime } from '../storable'

/**
 * An optional date-time parameter (a query's from/to, a replay's since): unparseable, or outside the
 * years 0001-9999 that both stores hold (src/storable.ts), is 400 naming it, before any query.
 */
export function parseMoment(name: string, value: string | undefined): Date | undefined {
  if (!value?.trim()) return undefined
  const at = new Date(value.trim())
  if (Number.isNaN(at.getTime())) throw badRequest(`Invalid ${name}: expected a date-time such as 2026-01-31T00:00:00Z`)
  if (!isStorableTime(at.getTime())) throw badRequest(`Invalid ${name}: expected a date-time in the years 0001 to 9999`)
  return at
}
