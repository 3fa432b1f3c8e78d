/**
 * Local-time sends: one local date and time, reached in each recipient's own time zone. Pure
 * functions over IANA zone names (the runtime's Intl data); no database.
 */
import type { LocalSendAt } from '../../db/schema/campaigns'

const known = new Map<string, boolean>()
const formats = new Map<string, Intl.DateTimeFormat>()

function formatOf(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    })
    if (formats.size > 1000) formats.clear()
    formats.set(zone, f)
  }
  return f
}

/** Whether `name` is an IANA time zone the runtime knows ("UTC" included; offsets such as "+02:00" are not names). */
export function isTimeZone(name: unknown): name is string {
  if (typeof name !== 'string' || name === '' || name.length > 100 || !/^[A-Za-z]/.test(name)) return false
  const hit = known.get(name)
  if (hit !== undefined) return hit
  let ok = true
  try {
    formatOf(name)
  } catch {
    ok = false
  }
  if (known.size > 10_000) known.clear()
  known.set(name, ok)
  return ok
}

/** The zone a contact receives a local-time send in: its `data.timezone` when that is a known IANA name, else the fallback. */
export function zoneOf(data: Record<string, unknown> | null | undefined, fallback: string): string {
  const tz = data?.timezone
  return isTimeZone(tz) ? tz : fallback
}

/** The zone's offset from UTC at `ms`, in milliseconds (local wall time minus UTC). */
function offsetAt(zone: string, ms: number): number {
  const parts: Record<string, number> = {}
  for (const p of formatOf(zone).formatToParts(new Date(ms))) if (p.type !== 'literal') parts[p.type] = Number(p.value)
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second)
  return wall - Math.floor(ms / 1000) * 1000
}

/**
 * The instant at which the wall clock of `zone` shows `date` `localTime`. A local time skipped by a
 * change to summer time (02:30 on the night clocks go from 02:00 to 03:00) is read with the offset
 * before the change, so it lands just after the gap; a repeated local time (the autumn change) is its
 * first occurrence.
 */
export function instantIn(zone: string, date: string, localTime: string): Date {
  const [y, mo, d] = date.split('-').map(Number)
  const [h, mi] = localTime.split(':').map(Number)
  const wall = Date.UTC(y, mo - 1, d, h, mi)
  // The offsets a day before and a day after: any change of offset near that time is between them.
  const before = wall - offsetAt(zone, wall - 86_400_000)
  const after = wall - offsetAt(zone, wall + 86_400_000)
  const fits = (t: number) => wall - offsetAt(zone, t) === t
  const both = [before, after].filter(fits)
  const t = both.length ? Math.min(...both) : before
  return new Date(t)
}

/** Whether the date exists on the calendar (2026-02-30 does not). */
export function isCalendarDate(date: string): boolean {
  const [y, m, d] = date.split('-').map(Number)
  const t = new Date(Date.UTC(y, m - 1, d))
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d
}

/** The distinct instants of a local-time send for the given zones (invalid names take the fallback), earliest first. */
export function waveInstants(at: LocalSendAt, zones: Iterable<string | null>): Date[] {
  const ms = new Set<number>([instantIn(at.fallbackTimeZone, at.date, at.localTime).getTime()])
  for (const z of zones) ms.add(instantIn(isTimeZone(z) ? z : at.fallbackTimeZone, at.date, at.localTime).getTime())
  return [...ms].sort((a, b) => a - b).map((t) => new Date(t))
}

/** A contact's instant in a local-time send, with a cache by zone (the fan-out asks once per contact). */
export function instantCache(at: LocalSendAt): (data: Record<string, unknown> | null | undefined) => number {
  const byZone = new Map<string, number>()
  return (data) => {
    const zone = zoneOf(data, at.fallbackTimeZone)
    let t = byZone.get(zone)
    if (t === undefined) {
      t = instantIn(zone, at.date, at.localTime).getTime()
      byZone.set(zone, t)
    }
    return t
  }
}
