/**
 * The one place the dashboard turns dates and numbers into text ("dates and numbers follow
 * the viewer's locale, one format everywhere"). Every page formats through these functions, never through
 * toLocaleString or an Intl object of its own. The locale is set once at start (web/i18n): the browser's
 * own locale when its language is the dashboard's language (so en-GB keeps day/month order), else the
 * dashboard's language; a change of language reloads the page.
 */

let locale = 'en'
const cache = new Map<string, Intl.DateTimeFormat | Intl.NumberFormat>()

export function setFormatLocale(l: string): void {
  // An unknown tag falls back to the dashboard's language rather than throwing on every date.
  try { locale = Intl.getCanonicalLocales(l)[0] ?? 'en' } catch { locale = 'en' }
  cache.clear()
}

function dates(key: string, opts: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  let f = cache.get(`d${key}`)
  if (!f) { f = new Intl.DateTimeFormat(locale, opts); cache.set(`d${key}`, f) }
  return f as Intl.DateTimeFormat
}
function numbers(key: string, opts: Intl.NumberFormatOptions): Intl.NumberFormat {
  let f = cache.get(`n${key}`)
  if (!f) { f = new Intl.NumberFormat(locale, opts); cache.set(`n${key}`, f) }
  return f as Intl.NumberFormat
}

const toDate = (v: string | number | Date | null | undefined): Date | null => {
  if (v === null || v === undefined || v === '') return null
  const d = v instanceof Date ? v : new Date(v)
  return Number.isNaN(d.getTime()) ? null : d
}

/** A moment: "27 Nov 2026, 23:41" / "Nov 27, 2026, 11:41 PM"; "—" for none; an unparseable string as it is. */
export function formatDate(v: string | number | Date | null | undefined): string {
  const d = toDate(v)
  if (!d) return v ? String(v) : '—'
  return dates('dt', { dateStyle: 'medium', timeStyle: 'short' }).format(d)
}

/** A moment in full, for confirming a chosen time: "Saturday, 28 November 2026 at 09:00". */
export function formatDateLong(v: string | number | Date): string {
  const d = toDate(v)
  return d ? dates('long', { dateStyle: 'full', timeStyle: 'short' }).format(d) : String(v)
}

/** A day: "27 Nov 2026"; `timeZone` for days that are UTC days (billing months, report ranges). */
export function formatDay(v: string | number | Date | null | undefined, timeZone?: string): string {
  const d = toDate(v)
  if (!d) return '—'
  return dates(`day${timeZone ?? ''}`, { dateStyle: 'medium', ...(timeZone ? { timeZone } : {}) }).format(d)
}

/** A month and year: "November 2026" (UTC: billing periods start at a UTC month). */
export function formatMonth(v: string | number | Date): string {
  const d = toDate(v)
  return d ? dates('month', { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(d) : String(v)
}


/** A count or amount: "1,234,567" / "1.234.567"; at most `digits` decimals (0 unless given). */
export function formatNumber(n: number | null | undefined, digits = 0): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—'
  return numbers(`n${digits}`, { maximumFractionDigits: digits }).format(n)
}

/** A ratio as a percentage: 0.256 → "25.6%" / "25,6 %". */
export function formatPercent(ratio: number | null | undefined, digits = 1): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '—'
  return numbers(`p${digits}`, { style: 'percent', maximumFractionDigits: digits }).format(ratio)
}

/** A ratio as a percentage with exactly `digits` decimals: 0.05 → "5.0%" (thresholds, rates beside them). */
export function formatPercentFixed(ratio: number, digits: number): string {
  if (!Number.isFinite(ratio)) return '—'
  return numbers(`pf${digits}`, { style: 'percent', minimumFractionDigits: digits, maximumFractionDigits: digits }).format(ratio)
}

/** `part` of `whole` as a percentage, "—" when the whole is 0. */
export const formatShare = (part: number, whole: number, digits = 1) => (whole > 0 ? formatPercent(part / whole, digits) : '—')

