import type { Ctx, Deps } from '../../deps'
import { parseMoment } from '../moment'
import { clampTime } from '../../storable'
import { badRequest, notFound } from '../../errors'
import { clampLimit } from '../contacts/service'
import { RANK_METRICS, SERIES_METRICS, type CampaignStatsQuery, type SeriesMetric, type TimeseriesQuery, type TopCampaignsQuery } from './model'
import * as repo from './repo'
import { HOUR_MS, type Count } from './repo'

/**
 * Analytics verbs. Counts come from two places that never overlap (repo.ts): the rolled-up hours
 * (`analytics_hourly`, before the rollup's watermark) and, after the watermark, the events themselves. So
 * an answer is exact and current, and reads a few thousand counter rows plus at most an hour or two of
 * events, however many emails the project has.
 */

const DAY_MS = 24 * HOUR_MS
/** API metric name to the rollup's. */
const ROLLUP: Record<SeriesMetric, string> = {
  sent: 'sent', delivered: 'delivered', opened: 'opened', uniqueOpened: 'unique_opened', clicked: 'clicked', uniqueClicked: 'unique_clicked',
  bounced: 'bounced', hardBounced: 'hard_bounced', complained: 'complained', unsubscribed: 'unsubscribed',
}
const FROM_ROLLUP = new Map(Object.entries(ROLLUP).map(([api, r]) => [r, api as SeriesMetric]))
const SERIES_ROLLUP = SERIES_METRICS.map((m) => ROLLUP[m])

export const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS
const ceilHour = (ms: number) => Math.ceil(ms / HOUR_MS) * HOUR_MS

/**
 * The range of a query, widened to whole hours: [from, to), `to` defaulting to now and `from` to
 * `defaultSpan` before it. Widened within the years the stores hold (a `to` late in 9999-12-31 would end
 * in the year 10000).
 */
function hourRange(ctx: Ctx, q: { from?: string; to?: string }, defaultSpan: number, maxSpan: number): { from: number; to: number } {
  const to = clampTime(ceilHour((parseMoment('to', q.to) ?? ctx.now).getTime()))
  const given = parseMoment('from', q.from)
  const from = clampTime(floorHour(given ? given.getTime() : to - defaultSpan))
  if (from >= to) throw badRequest('Invalid range: from must be before to')
  if (to - from > maxSpan) throw badRequest(`Invalid range: at most ${Math.round(maxSpan / DAY_MS)} days`)
  return { from, to }
}

/**
 * The counters of the project's totals (campaign '') or of one campaign, hours in [from, to): rolled-up
 * rows before the watermark, events after it.
 */
async function countsOf(ctx: Ctx, campaignId: string, from: number, to: number, metrics?: readonly string[]): Promise<Count[]> {
  const mark = (await repo.rolledUntil(ctx.store))?.getTime() ?? from
  const rolledEnd = Math.min(to, mark)
  const liveFrom = Math.max(from, mark)
  const [rolled, live] = await Promise.all([
    rolledEnd > from ? repo.hourly(ctx.store, ctx.projectId, campaignId, new Date(from), new Date(rolledEnd), metrics) : [],
    liveFrom < to ? repo.countEvents(ctx.store, ctx.projectId, new Date(liveFrom), new Date(to)) : [],
  ])
  const keep = metrics ? new Set(metrics) : null
  return [...rolled, ...live.filter((c) => c.campaignId === campaignId && (!keep || keep.has(c.metric)))]
}

/** Sums of rollup metrics (sent, bounced, complained...) of the project over [from, to) (hours), for other modules (security). */
export async function metricTotals(ctx: Ctx, from: Date, to: Date, metrics: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = Object.fromEntries(metrics.map((m) => [m, 0]))
  const a = floorHour(from.getTime())
  const b = ceilHour(to.getTime())
  if (a >= b) return out
  // Summed in SQL: a year of hours is tens of thousands of counter rows, too many to carry over one by one.
  const mark = (await repo.rolledUntil(ctx.store))?.getTime() ?? a
  const rolledEnd = Math.min(b, mark)
  const liveFrom = Math.max(a, mark)
  const [rolled, live] = await Promise.all([
    rolledEnd > a ? repo.hourlySums(ctx.store, ctx.projectId, '', new Date(a), new Date(rolledEnd), metrics) : [],
    liveFrom < b ? repo.countEvents(ctx.store, ctx.projectId, new Date(liveFrom), new Date(b)) : [],
  ])
  for (const c of rolled) out[c.metric] += c.value
  for (const c of live) if (c.campaignId === '' && c.metric in out) out[c.metric] += c.value
  return out
}

function zeroCounts(): Record<SeriesMetric, number> {
  return Object.fromEntries(SERIES_METRICS.map((m) => [m, 0])) as Record<SeriesMetric, number>
}

function timeZone(name: string | undefined): string {
  const tz = name?.trim() || 'UTC'
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone
  } catch {
    throw badRequest(`Unknown time zone "${tz.slice(0, 64)}": use an IANA name such as Europe/Paris`)
  }
}

/**
 * GET /analytics/timeseries: counts per hour or per day of the caller's time zone. Counters are kept per
 * UTC hour, so a day is the UTC hours that start on that local date (exact for every zone whose offset is
 * whole hours; in a zone offset by :30 or :45 a day's edges are off by that part of an hour).
 */
export async function timeseries(ctx: Ctx, q: TimeseriesQuery) {
  const interval = q.interval?.trim() || 'day'
  if (interval !== 'hour' && interval !== 'day') throw badRequest('Invalid interval: hour or day')
  const tz = timeZone(q.timezone)
  const fmt = new Intl.DateTimeFormat('sv-SE', interval === 'day'
    ? { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }
    : { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
  const label = (ms: number) => fmt.format(new Date(ms))
  let { from, to } = hourRange(ctx, q, interval === 'day' ? 30 * DAY_MS : DAY_MS, interval === 'day' ? 400 * DAY_MS : 31 * DAY_MS + HOUR_MS)
  if (interval === 'day' && !q.from) {
    // Default: the last 30 local days, starting at the first hour of the first of them.
    const first = label(to - 30 * DAY_MS)
    from = floorHour(to - 31 * DAY_MS)
    while (label(from) !== first) from += HOUR_MS
  }
  const buckets: Array<{ start: number; label: string; counts: Record<SeriesMetric, number> }> = []
  const bucketOfHour: number[] = []
  for (let h = from; h < to; h += HOUR_MS) {
    const l = label(h)
    if (!buckets.length || buckets[buckets.length - 1].label !== l) buckets.push({ start: h, label: l, counts: zeroCounts() })
    bucketOfHour.push(buckets.length - 1)
  }
  const totals = zeroCounts()
  for (const c of await countsOf(ctx, q.campaignId?.trim() || '', from, to, SERIES_ROLLUP)) {
    const m = FROM_ROLLUP.get(c.metric)
    const b = bucketOfHour[(c.hour - from) / HOUR_MS]
    if (!m || b === undefined) continue
    buckets[b].counts[m] += c.value
    totals[m] += c.value
  }
  return {
    interval, timezone: tz, from: new Date(from).toISOString(), to: new Date(to).toISOString(),
    data: buckets.map((b) => ({ start: new Date(b.start).toISOString(), label: b.label, ...b.counts })),
    totals,
  }
}

function rankMetric(name: string | undefined): SeriesMetric {
  const m = name?.trim() || 'sent'
  if (!(RANK_METRICS as readonly string[]).includes(m)) throw badRequest(`Invalid metric "${m.slice(0, 50)}": one of ${RANK_METRICS.join(', ')}`)
  return m as SeriesMetric
}

/** GET /analytics/top-campaigns: campaigns ranked by one metric over a range (default the last 30 days). */
export async function topCampaigns(ctx: Ctx, q: TopCampaignsQuery) {
  const metric = rankMetric(q.metric)
  const limit = clampLimit(q.limit, 10)
  const { from, to } = hourRange(ctx, q, 30 * DAY_MS, 400 * DAY_MS)
  const r = ROLLUP[metric]
  const mark = (await repo.rolledUntil(ctx.store))?.getTime() ?? from
  const rolledEnd = Math.min(to, mark)
  const liveFrom = Math.max(from, mark)
  const live = new Map<string, number>()
  if (liveFrom < to) {
    for (const c of await repo.countEvents(ctx.store, ctx.projectId, new Date(liveFrom), new Date(to))) {
      if (c.campaignId && c.metric === r) live.set(c.campaignId, (live.get(c.campaignId) ?? 0) + c.value)
    }
  }
  const values = new Map<string, number>()
  if (rolledEnd > from) {
    // The top of the rolled-up hours, widened by the campaigns that also have live counts, and those
    // campaigns' own rolled-up values: enough to rank exactly.
    const [top, ofLive] = await Promise.all([
      repo.topCampaigns(ctx.store, ctx.projectId, r, new Date(from), new Date(rolledEnd), limit + live.size),
      repo.campaignTotals(ctx.store, ctx.projectId, [...live.keys()], new Date(from), new Date(rolledEnd)),
    ])
    for (const t of top) values.set(t.campaignId, t.value)
    for (const c of ofLive) if (c.metric === r) values.set(c.campaignId, c.value)
  }
  for (const [id, n] of live) values.set(id, (values.get(id) ?? 0) + n)
  const ranked = [...values].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, limit)
  const info = new Map((await repo.campaignsByIds(ctx.store, ctx.projectId, ranked.map(([id]) => id))).map((c) => [c.id, c]))
  return {
    metric, from: new Date(from).toISOString(), to: new Date(to).toISOString(),
    data: ranked.map(([id, value]) => ({ campaignId: id, name: info.get(id)?.name ?? null, status: info.get(id)?.status ?? null, value })),
  }
}

const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 10_000) / 10_000 : 0)

/**
 * GET /analytics/campaign-stats: per campaign, every metric and the usual rates, over a range (default: all
 * time). One campaign with `campaignId` (404 when the project has no such campaign), else a page of the
 * project's campaigns, newest first.
 */
export async function campaignStats(ctx: Ctx, q: CampaignStatsQuery) {
  const toAt = parseMoment('to', q.to) ?? ctx.now
  const to = clampTime(ceilHour(toAt.getTime()))
  const fromAt = parseMoment('from', q.from)
  const from = fromAt ? clampTime(floorHour(fromAt.getTime())) : 0
  if (from >= to) throw badRequest('Invalid range: from must be before to')
  const pageSize = clampLimit(q.pageSize, 20)
  const page = Math.max(1, Math.trunc(Number(q.page ?? 1)) || 1)
  let list: repo.CampaignInfo[]
  let total: number
  if (q.campaignId?.trim()) {
    list = await repo.campaignsByIds(ctx.store, ctx.projectId, [q.campaignId.trim()])
    if (!list.length) throw notFound('campaign')
    total = 1
  } else {
    ;[list, total] = await Promise.all([repo.campaignPage(ctx.store, ctx.projectId, pageSize, (page - 1) * pageSize), repo.countCampaigns(ctx.store, ctx.projectId)])
  }
  const ids = list.map((c) => c.id)
  const mark = (await repo.rolledUntil(ctx.store))?.getTime() ?? from
  const rolledEnd = Math.min(to, mark)
  const liveFrom = Math.max(from, mark)
  const [rolled, live] = await Promise.all([
    rolledEnd > from ? repo.campaignTotals(ctx.store, ctx.projectId, ids, new Date(from), new Date(rolledEnd)) : [],
    liveFrom < to ? repo.countEvents(ctx.store, ctx.projectId, new Date(liveFrom), new Date(to)) : [],
  ])
  const byCampaign = new Map(ids.map((id) => [id, zeroCounts()]))
  for (const c of [...rolled, ...live]) {
    const m = FROM_ROLLUP.get(c.metric)
    const counts = byCampaign.get(c.campaignId)
    if (m && counts) counts[m] += c.value
  }
  return {
    from: fromAt ? new Date(from).toISOString() : null, to: new Date(to).toISOString(), page, pageSize: q.campaignId ? 1 : pageSize, total,
    data: list.map((c) => {
      const n = byCampaign.get(c.id) ?? zeroCounts()
      return {
        campaignId: c.id, name: c.name, status: c.status, totalRecipients: c.totalRecipients, sentAt: c.sentAt?.toISOString() ?? null, ...n,
        rates: {
          delivery: ratio(n.delivered, n.sent), open: ratio(n.uniqueOpened, n.delivered), click: ratio(n.uniqueClicked, n.delivered),
          bounce: ratio(n.bounced, n.sent), complaint: ratio(n.complained, n.delivered), unsubscribe: ratio(n.unsubscribed, n.delivered),
        },
      }
    }),
  }
}

/** GET /analytics/top-events: the most frequent event names (tracked events, contact.* and segment.*) over a range. */
export async function topEvents(ctx: Ctx, q: { from?: string; to?: string; limit?: number }) {
  const limit = clampLimit(q.limit, 10)
  const { from, to } = hourRange(ctx, q, 30 * DAY_MS, 400 * DAY_MS)
  const mark = (await repo.rolledUntil(ctx.store))?.getTime() ?? from
  const rolledEnd = Math.min(to, mark)
  const liveFrom = Math.max(from, mark)
  const [rolled, live] = await Promise.all([
    rolledEnd > from ? repo.eventTotals(ctx.store, ctx.projectId, new Date(from), new Date(rolledEnd)) : [],
    liveFrom < to ? repo.countEvents(ctx.store, ctx.projectId, new Date(liveFrom), new Date(to)) : [],
  ])
  const sums = new Map<string, number>()
  for (const c of rolled) sums.set(c.metric, (sums.get(c.metric) ?? 0) + c.value)
  for (const c of live) if (c.campaignId === '' && c.metric.startsWith('event:')) sums.set(c.metric, (sums.get(c.metric) ?? 0) + c.value)
  const data = [...sums].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, limit)
    .map(([metric, count]) => ({ name: metric.slice('event:'.length), count }))
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), data }
}

/** Events committed this long after their own time may be missed by the hour they belong to: the rollup waits this long after an hour ends, and counts the last hour it rolled once more. */
export const ROLLUP_SETTLE_MS = 5 * 60_000
/** Hours counted per step (one step: every project, then the watermark moves): 3, or a day while catching up a backlog. */
const STEP_HOURS = 3
const BACKLOG_STEP_HOURS = 24

export interface RollupResult { from: string | null; to: string | null; hours: number; projects: number; rows: number }

/**
 * The `analytics.rollup` job: counts the events of every hour that ended at least ROLLUP_SETTLE_MS ago into
 * analytics_hourly, project by project, a few hours per step, moving the watermark after each step.
 * Each step replaces its hours' counters (so a repeated run changes nothing) and starts one hour before
 * the watermark, so an event committed late into the previous hour is still counted. `budgetMs` bounds a
 * run; a backlog is finished by the next runs (the endpoints count the events past the watermark meanwhile).
 */
export async function rollup(deps: Deps, now: Date, opts: { budgetMs?: number; onStep?: (to: Date) => Promise<void> } = {}): Promise<RollupResult> {
  const started = Date.now()
  const { store } = deps
  const closed = floorHour(now.getTime() - ROLLUP_SETTLE_MS)
  const projects = await repo.projectIds(store)
  let mark = (await repo.rolledUntil(store))?.getTime() ?? null
  if (mark === null) {
    const first = await repo.firstEventAt(store, projects)
    mark = first ? floorHour(first.getTime()) : closed
    if (!first) {
      await store.tx((db) => repo.setRolledUntil(store, db, new Date(mark ?? closed), now))
      return { from: null, to: null, hours: 0, projects: projects.length, rows: 0 }
    }
  }
  let start = Math.max(0, mark - HOUR_MS)
  const first = start
  let rows = 0
  while (start < closed && mark < closed) {
    const stepHours = closed - mark > BACKLOG_STEP_HOURS * HOUR_MS ? BACKLOG_STEP_HOURS : STEP_HOURS
    const end = Math.min(closed, Math.max(mark, start) + stepHours * HOUR_MS)
    // Listed again each step: a project created during the run has its hours counted before the watermark passes them.
    for (const projectId of await repo.projectIds(store)) {
      const counts = await repo.countEvents(store, projectId, new Date(start), new Date(end))
      await store.tx((db) => repo.replaceHours(store, db, projectId, new Date(start), new Date(end), counts))
      rows += counts.length
    }
    await store.tx((db) => repo.setRolledUntil(store, db, new Date(end), now))
    mark = end
    start = end
    await opts.onStep?.(new Date(end))
    if (opts.budgetMs !== undefined && Date.now() - started > opts.budgetMs) break
  }
  return { from: new Date(first).toISOString(), to: new Date(mark).toISOString(), hours: Math.max(0, (mark - first) / HOUR_MS), projects: projects.length, rows }
}
