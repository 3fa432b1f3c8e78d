/**
 * The shapes of the analytics, activity, security and usage answers the dashboard reads (JSON: dates are
 * strings), and the query helpers of those pages. Kept here, next to the pages, rather than in web/api.ts.
 */
import { get } from '../../api'
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

export type Counts = Record<Metric | 'uniqueOpened' | 'uniqueClicked' | 'hardBounced' | 'unsubscribed', number>
export interface Timeseries {
  interval: 'hour' | 'day'; timezone: string; from: string; to: string
  data: Array<{ start: string; label: string } & Counts>
  totals: Counts
}
export interface TopCampaigns { metric: string; from: string; to: string; data: Array<{ campaignId: string; name: string | null; status: string | null; value: number }> }
export interface TopEvents { from: string; to: string; data: Array<{ name: string; count: number }> }

export interface SecurityState {
  windowDays: number; windowStart: string; sent: number; bounced: number; complained: number; bounceRate: number; complaintRate: number
  thresholds: { bounceWarning: number; bounceSuspend: number; complaintWarning: number; complaintSuspend: number; minimumSent: number }
  status: 'ok' | 'warning' | 'suspended'; overSuspensionThreshold: boolean; warnings: string[]
  suspensions: Array<{ at: string; reason: string; liftedAt: string | null }>
}

export const CATEGORIES = ['transactional', 'campaigns', 'workflows', 'inbound'] as const
export type Category = (typeof CATEGORIES)[number]
/** A category's name and what it counts, in the language in effect. */
export const categoryLabel = (c: Category) => ({ title: t(`category.${c}`), hint: t(`category.${c}.hint`) })
export type Limits = Record<Category, number | null>
export interface Consumption extends Record<Category, number> { periodStart: string; periodEnd: string; limits: Limits }

export interface UpcomingItem { kind: string; id: string; at: string; title: string; detail: Record<string, unknown> }
export interface Upcoming { data: UpcomingItem[]; total: number }
export type ActivityItem =
  | { kind: 'email'; id: string; to: string; subject: string; status: string; createdAt: string; sourceType: string }
  | { kind: 'event'; id: string; type: string; contact: { id: string; email: string } | null; data: Record<string, unknown>; createdAt: string }
export interface ActivityPage { data: ActivityItem[]; cursor: string | null; hasMore: boolean; total: number }

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
