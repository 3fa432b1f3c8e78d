import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as service from './service'

const tags = ['activity']

/** GET /activity, /activity/stats, /activity/types, /activity/recent-count, /activity/upcoming (secret key). */
export function activityRoutes(deps: Deps) {
  return new Elysia({ prefix: '/activity' })
    .use(authPlugin(deps))
    .get('', ({ ctx, query }) => service.listActivity(ctx, query), {
      apiKey: 'secret', query: m.ListActivityQuery, response: { 200: m.ActivityList },
      detail: { tags, summary: 'Activity feed, newest first (cursor list)', description: `Sends, deliveries, opens, clicks, bounces, complaints, failures, inbound mail (email.received) and subscription changes. Types: ${m.ACTIVITY_TYPES.join(', ')}.` },
    })
    .get('/stats', ({ ctx, query }) => service.activityStats(ctx, query), {
      apiKey: 'secret', query: m.StatsQuery, response: { 200: m.ActivityStats },
      detail: { tags, summary: 'Aggregated counts and rates over a period' },
    })
    .get('/types', ({ ctx }) => service.activityTypes(ctx), {
      apiKey: 'secret', response: { 200: m.ActivityTypes },
      detail: { tags, summary: 'Distinct activity types present, with counts' },
    })
    .get('/recent-count', ({ ctx, query }) => service.recentCount(ctx, query), {
      apiKey: 'secret', query: m.RecentCountQuery, response: { 200: m.RecentCount },
      detail: { tags, summary: 'Number of activity entries in the last minutes' },
    })
    .get('/upcoming', ({ ctx, query }) => service.upcoming(ctx, query), {
      apiKey: 'secret', query: m.UpcomingQuery, response: { 200: m.UpcomingList },
      detail: { tags, summary: 'What is about to happen, soonest first', description: 'SCHEDULED campaigns, emails waiting for their next delivery attempt (deferred), and waiting workflow executions.' },
    })
}
