import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as service from './service'

const tags = ['analytics']

/** GET /analytics/timeseries, /top-campaigns, /campaign-stats, /top-events (secret key). */
export function analyticsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/analytics' })
    .use(authPlugin(deps))
    .get('/timeseries', ({ ctx, query }) => service.timeseries(ctx, query), {
      apiKey: 'secret', query: m.TimeseriesQuery, response: { 200: m.Timeseries },
      detail: { tags, summary: 'Sent, delivered, opened, clicked, bounced, complained and unsubscribed per hour or day', description: 'Buckets of the caller\'s time zone (`timezone`, IANA), zero-filled, over [from, to) widened to whole hours. Default: the last 30 days by day, or the last 24 hours by hour.' },
    })
    .get('/top-campaigns', ({ ctx, query }) => service.topCampaigns(ctx, query), {
      apiKey: 'secret', query: m.TopCampaignsQuery, response: { 200: m.TopCampaigns },
      detail: { tags, summary: 'Campaigns ranked by one metric over a range (default the last 30 days)' },
    })
    .get('/campaign-stats', ({ ctx, query }) => service.campaignStats(ctx, query), {
      apiKey: 'secret', query: m.CampaignStatsQuery, response: { 200: m.CampaignStats },
      detail: { tags, summary: 'Per-campaign counts and rates (one campaign, or a page of campaigns newest first)' },
    })
    .get('/top-events', ({ ctx, query }) => service.topEvents(ctx, query), {
      apiKey: 'secret', query: m.TopEventsQuery, response: { 200: m.TopEvents },
      detail: { tags, summary: 'The most frequent event names (tracked events, contact.* and segment.*) over a range' },
    })
}
