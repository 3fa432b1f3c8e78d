import { t, type Static } from 'elysia'
import { positiveIntQuery } from '../query'

/** The metrics of the time series, in their API names (the rollup's names in parentheses where they differ). */
export const SERIES_METRICS = ['sent', 'delivered', 'opened', 'uniqueOpened', 'clicked', 'uniqueClicked', 'bounced', 'hardBounced', 'complained', 'unsubscribed'] as const
export type SeriesMetric = (typeof SERIES_METRICS)[number]
/** Metrics a campaign can be ranked by (GET /analytics/top-campaigns). */
export const RANK_METRICS = ['sent', 'delivered', 'opened', 'uniqueOpened', 'clicked', 'uniqueClicked', 'bounced', 'complained', 'unsubscribed'] as const

const range = {
  from: t.Optional(t.String({ description: 'Date-time (ISO 8601), start of the range (rounded down to its hour)' })),
  to: t.Optional(t.String({ description: 'Date-time (ISO 8601), end of the range, exclusive (rounded up to its hour); default now' })),
}

const counts = Object.fromEntries(SERIES_METRICS.map((m) => [m, t.Integer()])) as Record<SeriesMetric, ReturnType<typeof t.Integer>>
export const Counts = t.Object(counts)

export const TimeseriesQuery = t.Object({
  ...range,
  interval: t.Optional(t.String({ description: 'hour or day (default day). hour: at most 31 days; day: at most 400 days' })),
  timezone: t.Optional(t.String({ description: 'IANA time zone of the buckets and labels (default UTC), e.g. Europe/Paris' })),
  campaignId: t.Optional(t.String({ description: 'Only this campaign\'s mail' })),
})
export type TimeseriesQuery = Static<typeof TimeseriesQuery>

export const Timeseries = t.Object({
  interval: t.String(),
  timezone: t.String(),
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  data: t.Array(t.Composite([t.Object({
    start: t.String({ format: 'date-time', description: 'The bucket\'s first instant (UTC)' }),
    label: t.String({ description: 'The bucket in the time zone: YYYY-MM-DD (day) or YYYY-MM-DD HH:mm (hour)' }),
  }), Counts])),
  totals: Counts,
})

export const TopCampaignsQuery = t.Object({
  ...range,
  metric: t.Optional(t.String({ description: `One of ${RANK_METRICS.join(', ')} (default sent)` })),
  limit: positiveIntQuery('limit', '1 to 100, default 10; larger values are clamped to 100'),
})
export type TopCampaignsQuery = Static<typeof TopCampaignsQuery>

export const TopCampaigns = t.Object({
  metric: t.String(),
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  data: t.Array(t.Object({
    campaignId: t.String(),
    name: t.Union([t.String(), t.Null()], { description: 'null when the campaign was deleted' }),
    status: t.Union([t.String(), t.Null()]),
    value: t.Integer(),
  })),
})

export const CampaignStatsQuery = t.Object({
  ...range,
  campaignId: t.Optional(t.String({ description: 'One campaign; without it, a page of campaigns, newest first' })),
  page: positiveIntQuery('page', '1 and up, default 1'),
  pageSize: positiveIntQuery('pageSize', '1 to 100, default 20; larger values are clamped to 100'),
})
export type CampaignStatsQuery = Static<typeof CampaignStatsQuery>

export const CampaignStatsItem = t.Composite([t.Object({
  campaignId: t.String(),
  name: t.String(),
  status: t.String(),
  totalRecipients: t.Integer(),
  sentAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
}), Counts, t.Object({
  rates: t.Object({
    delivery: t.Number({ description: 'delivered / sent (0-1)' }),
    open: t.Number({ description: 'uniqueOpened / delivered' }),
    click: t.Number({ description: 'uniqueClicked / delivered' }),
    bounce: t.Number({ description: 'bounced / sent' }),
    complaint: t.Number({ description: 'complained / delivered' }),
    unsubscribe: t.Number({ description: 'unsubscribed / delivered' }),
  }),
})])

export const CampaignStats = t.Object({
  from: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  to: t.String({ format: 'date-time' }),
  data: t.Array(CampaignStatsItem),
  page: t.Integer(),
  pageSize: t.Integer(),
  total: t.Integer(),
})

export const TopEventsQuery = t.Object({
  ...range,
  limit: positiveIntQuery('limit', '1 to 100, default 10; larger values are clamped to 100'),
})

export const TopEvents = t.Object({
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  data: t.Array(t.Object({ name: t.String(), count: t.Integer() })),
})
