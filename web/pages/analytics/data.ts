/**
 * The shapes of the analytics, activity, security and usage answers the dashboard reads (JSON: dates are
 * strings), and the query helpers of those pages. Kept here, next to the pages, rather than in web/api.ts.
 */
import { type Answer, get, type Narrowed } from '../../api'
import { formatNumber, formatPercentFixed } from '../../format'
import { t } from '../../i18n'

export const METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'] as const
export type Metric = (typeof METRICS)[number]
/** A metric's name in the language in effect. */
export const metricLabel = (m: Metric) => t(`metric.${m}`)
/** Colours of the chart lines (distinguishable, and each readable on white). */
export const METRIC_COLOR: Record<Metric, string> = {
  sent: '#2952cc', delivered: '#067647', opened: '#7839ee', clicked: '#c4320a', bounced: '#b42318', complained: '#93370d',
}

/** The document says `interval` is text; the page asks for hours or days only. */
export type Timeseries = Narrowed<Answer<'/analytics/timeseries'>, { interval: 'hour' | 'day' }>
export type Counts = Timeseries['totals']
export type TopCampaigns = Answer<'/analytics/top-campaigns'>
export type TopEvents = Answer<'/analytics/top-events'>

export type SecurityState = Answer<'/projects/{id}/security'>

export const CATEGORIES = ['transactional', 'campaigns', 'workflows', 'inbound'] as const
export type Category = (typeof CATEGORIES)[number]
/** A category's name and what it counts, in the language in effect. */
export const categoryLabel = (c: Category) => ({ title: t(`category.${c}`), hint: t(`category.${c}.hint`) })
export type Limits = Answer<'/users/@me/projects/{id}/billing-limits'>
export type Consumption = Answer<'/users/@me/projects/{id}/billing-consumption'>

export type Upcoming = Answer<'/activity/upcoming'>
export type ActivityPage = Answer<'/activity'>
export type ActivityItem = ActivityPage['data'][number]

/** The browser's IANA time zone (the API buckets days in it). */
export function browserZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
  } catch {
    return 'UTC'
  }
}

export function timeseriesQuery(projectId: string, p: { interval: 'hour' | 'day'; from?: string; to?: string; timezone: string }) {
  const q = new URLSearchParams({ interval: p.interval, timezone: p.timezone })
  if (p.from) q.set('from', p.from)
  if (p.to) q.set('to', p.to)
  return {
    queryKey: ['analytics', projectId, 'timeseries', p.interval, p.from ?? '', p.to ?? '', p.timezone] as const,
    queryFn: () => get<Timeseries>(`/analytics/timeseries?${q}`, projectId),
  }
}

export function securityQuery(projectId: string) {
  return { queryKey: ['security', projectId] as const, queryFn: () => get<SecurityState>(`/projects/${projectId}/security`) }
}

/** A fraction as a percentage: 0.075 -> "7.5%", small ones with two decimals (0.001 -> "0.10%"). */
export function pct(x: number): string {
  if (!Number.isFinite(x)) return '—'
  const p = x * 100
  return p === 0 ? formatPercentFixed(0, 0) : formatPercentFixed(x, p < 1 ? 2 : 1)
}

export const num = (n: number) => formatNumber(n)
