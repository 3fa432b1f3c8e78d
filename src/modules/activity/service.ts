import type { Ctx } from '../../deps'
import { decodeTimeCursor, encodeTimeCursor } from '../cursor'
import { parseMoment } from '../moment'
import { clampTime } from '../../storable'
import { badRequest } from '../../errors'
import { clampLimit } from '../contacts/service'
import { toEmailRecord } from '../emails/service'
import { EVENT_TYPES, ACTIVITY_TYPES, type ListActivityQuery } from './model'
import * as repo from './repo'
import { upcomingSources } from './upcoming'
import { metricTotals } from '../analytics/service'

const KNOWN: ReadonlySet<string> = new Set(ACTIVITY_TYPES)

/** Which kinds a query asks for: emails and/or these event names. */
function selection(q: ListActivityQuery): { emails: boolean; events: readonly string[] } {
  const param = q.type?.trim()
  if (!param) return q.status ? { emails: true, events: [] } : { emails: true, events: EVENT_TYPES }
  const asked = [...new Set(param.split(',').map((s) => s.trim()).filter(Boolean))]
  const unknown = asked.filter((x) => !KNOWN.has(x))
  if (unknown.length) throw badRequest(`Unknown activity type ${unknown.map((u) => `"${u.slice(0, 50)}"`).join(', ')}; known types: ${ACTIVITY_TYPES.join(', ')}`)
  return { emails: asked.includes('email'), events: q.status ? [] : asked.filter((x) => x !== 'email') }
}


type Item =
  | { at: number; id: string; out: ReturnType<typeof emailItem> }
  | { at: number; id: string; out: ReturnType<typeof eventItem> }

function emailItem(r: repo.EmailItemRow) {
  return { kind: 'email' as const, ...toEmailRecord(r), opens: Number(r.opens ?? 0), clicks: Number(r.clicks ?? 0) }
}

function eventItem(r: repo.EventItemRow) {
  return {
    kind: 'event' as const,
    id: r.id,
    type: r.name,
    contact: r.contactId && r.contactEmail ? { id: r.contactId, email: r.contactEmail } : null,
    emailId: r.emailId,
    data: r.data ?? {},
    createdAt: r.createdAt.toISOString(),
  }
}

/**
 * GET /activity: emails (the sends, with their state) and events (opens, clicks, bounces, complaints,
 * inbound, subscription changes) merged newest first. Each source is read by keyset after the cursor;
 * the merge keeps the first `limit`, so pages never skip or repeat an item.
 */
export async function listActivity(ctx: Ctx, q: ListActivityQuery) {
  const limit = clampLimit(q.limit, 20)
  const sel = selection(q)
  const after = q.cursor ? decodeTimeCursor(q.cursor) : null
  const since = parseMoment('from', q.from)
  const until = parseMoment('to', q.to)
  let contactId = q.contactId || undefined
  if (q.contact?.trim()) {
    const found = await repo.contactIdByRef(ctx.store, ctx.projectId, q.contact.trim())
    // An unknown contact (or one that is not the same as contactId) matches nothing.
    if (!found || (contactId && contactId !== found)) return { data: [], cursor: null, hasMore: false, total: 0 }
    contactId = found
  }
  const common = { contactId, emailId: q.emailId || undefined, campaignId: q.campaignId || undefined, since, until }
  const emailF: repo.EmailFilter = { ...common, status: q.status || undefined }
  const eventF: repo.EventFilter = { ...common, types: sel.events }
  const [emails, events, total] = await Promise.all([
    sel.emails ? repo.emailPage(ctx.store, ctx.projectId, emailF, limit + 1, after) : Promise.resolve([]),
    sel.events.length ? repo.eventPage(ctx.store, ctx.projectId, eventF, limit + 1, after) : Promise.resolve([]),
    after ? Promise.resolve(0) : feedTotal(ctx, sel, emailF, eventF),
  ])
  const items: Item[] = [
    ...emails.map((r) => ({ at: r.createdAt.getTime(), id: r.id, out: emailItem(r) })),
    ...events.map((r) => ({ at: r.createdAt.getTime(), id: r.id, out: eventItem(r) })),
  ]
  items.sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
  const hasMore = items.length > limit
  const page = items.slice(0, limit)
  const last = page[page.length - 1]
  return { data: page.map((i) => i.out), cursor: hasMore && last ? encodeTimeCursor({ at: last.at, id: last.id }) : null, hasMore, total }
}

/** Totals of a filter by contact, campaign, email or status are counted from the rows, up to this many. */
export const TOTAL_CAP = 10_000

/**
 * The first page's total. By type and date range only: exact, from the counters (windowCounts). By
 * contact, campaign, email or status (which the counters do not split): counted from the rows along the
 * filter's index, at most TOTAL_CAP per kind of item, so a larger set answers a lower bound
 * (docs/decisions.md, Activity totals).
 */
async function feedTotal(ctx: Ctx, sel: { emails: boolean; events: readonly string[] }, emailF: repo.EmailFilter, eventF: repo.EventFilter): Promise<number> {
  if (emailF.contactId || emailF.campaignId || emailF.emailId || emailF.status) {
    const [a, b] = await Promise.all([
      sel.emails ? repo.countEmailsUpTo(ctx.store, ctx.projectId, emailF, TOTAL_CAP) : 0,
      sel.events.length ? repo.countEventsUpTo(ctx.store, ctx.projectId, eventF, TOTAL_CAP) : 0,
    ])
    return a + b
  }
  const counts = await windowCounts(ctx, [...(sel.emails ? ['email'] : []), ...sel.events], emailF.since, emailF.until)
  let n = 0
  for (const v of counts.values()) n += v
  return n
}

const HOUR_MS = 3_600_000
const floorHour = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS
const ceilHour = (ms: number) => Math.ceil(ms / HOUR_MS) * HOUR_MS

/**
 * Exact counts of feed items per kind ('email' or an event type) created in [since, until) (either
 * open): the counters of the whole hours inside, plus the rows of the partial hours at either edge
 * (less than an hour each, counted along the (project, created_at) and (project, type, created_at)
 * indexes).
 */
export async function windowCounts(ctx: Ctx, kinds: readonly string[], since?: Date, until?: Date): Promise<Map<string, number>> {
  const out = new Map<string, number>(kinds.map((k) => [k, 0]))
  if (!kinds.length || (since && until && since >= until)) return out
  const types = kinds.filter((k) => k !== 'email')
  const withEmails = kinds.includes('email')
  const add = (m: Map<string, number>) => { for (const [k, v] of m) out.set(k, (out.get(k) ?? 0) + v) }
  const live = async (a: Date, b: Date) => {
    const [emails, events] = await Promise.all([
      withEmails ? repo.countEmailsIn(ctx.store, ctx.projectId, a, b) : 0,
      repo.countEventsIn(ctx.store, ctx.projectId, types, a, b),
    ])
    if (withEmails) events.set('email', emails)
    return events
  }
  // Within the years the stores hold: a `since` late in 9999-12-31 would round up into the year 10000.
  const inFrom = since ? clampTime(ceilHour(since.getTime())) : undefined
  const inTo = until ? floorHour(until.getTime()) : undefined
  if (since && until && inFrom !== undefined && inTo !== undefined && inFrom >= inTo) {
    add(await live(since, until))
    return out
  }
  const parts = await Promise.all([
    repo.countedKinds(ctx.store, ctx.projectId, kinds, inFrom, inTo),
    since && inFrom !== undefined && since.getTime() < inFrom ? live(since, new Date(inFrom)) : new Map<string, number>(),
    until && inTo !== undefined && inTo < until.getTime() ? live(new Date(inTo), until) : new Map<string, number>(),
  ])
  for (const m of parts) add(m)
  return out
}

const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 10_000) / 10_000 : 0)
const STAT_METRICS = ['sent', 'delivered', 'opened', 'unique_opened', 'clicked', 'unique_clicked', 'bounced', 'hard_bounced', 'complained', 'received', 'failed', 'unsubscribed', 'event:contact.subscribed']

/**
 * GET /activity/stats: counts over the last `days` days and the usual rates, from the analytics counters
 * (src/modules/analytics: rolled-up hours plus the events past the rollup), so the period's events are not
 * scanned; the period is widened to whole hours.
 */
export async function activityStats(ctx: Ctx, q: { days?: number }) {
  const days = Math.max(1, Math.min(365, Math.trunc(Number(q.days ?? 30)) || 30))
  const since = new Date(ctx.now.getTime() - days * 86_400_000)
  const [c, emails] = await Promise.all([
    metricTotals(ctx, since, ctx.now, STAT_METRICS),
    windowCounts(ctx, ['email'], since).then((m) => m.get('email') ?? 0),
  ])
  const sent = c.sent
  const hard = c.hard_bounced
  return {
    periodDays: days, since: since.toISOString(), emails,
    sent, delivered: c.delivered, opens: c.opened, uniqueOpens: c.unique_opened, clicks: c.clicked, uniqueClicks: c.unique_clicked,
    bounces: c.bounced, hardBounces: hard, softBounces: c.bounced - hard, complaints: c.complained,
    received: c.received, failed: c.failed, subscribed: c['event:contact.subscribed'], unsubscribed: c.unsubscribed,
    rates: {
      delivery: ratio(c.delivered, sent), open: ratio(c.unique_opened, sent), click: ratio(c.unique_clicked, sent),
      bounce: ratio(hard, sent), complaint: ratio(c.complained, sent),
    },
  }
}

/**
 * GET /activity/types: the activity types present in the project, most frequent first: counts from the
 * counters, the last time of each from the top of its index.
 */
export async function activityTypes(ctx: Ctx) {
  const counts = await repo.countedKinds(ctx.store, ctx.projectId, ACTIVITY_TYPES)
  const present = ACTIVITY_TYPES.filter((k) => (counts.get(k) ?? 0) > 0)
  const last = await repo.lastSeen(ctx.store, ctx.projectId, present)
  const rows = present.flatMap((type) => {
    const at = last.get(type)
    return at ? [{ type, count: counts.get(type) ?? 0, last: at }] : []
  })
  rows.sort((a, b) => b.count - a.count || a.type.localeCompare(b.type))
  return { data: rows.map((r) => ({ type: r.type, count: r.count, lastSeenAt: r.last.toISOString() })) }
}

/** GET /activity/recent-count: feed items (emails queued and events) in the last `minutes` minutes. */
export async function recentCount(ctx: Ctx, q: { minutes?: number }) {
  const minutes = Math.max(1, Math.min(10_080, Math.trunc(Number(q.minutes ?? 60)) || 60))
  const since = new Date(ctx.now.getTime() - minutes * 60_000)
  let n = 0
  for (const v of (await windowCounts(ctx, ACTIVITY_TYPES, since)).values()) n += v
  return { count: n, minutes, since: since.toISOString() }
}

/**
 * GET /activity/upcoming: SCHEDULED campaigns, mail waiting for its next delivery attempt, and the entries
 * of registered sources (waiting workflow executions, src/modules/activity/upcoming.ts), soonest first.
 */
export async function upcoming(ctx: Ctx, q: { limit?: number }) {
  const limit = clampLimit(q.limit, 20)
  const extra = upcomingSources()
  const [campaigns, deferred, more, counts] = await Promise.all([
    repo.scheduledCampaigns(ctx.store, ctx.projectId, limit),
    repo.deferredEmails(ctx.store, ctx.projectId, limit),
    Promise.all(extra.map(async (s) => (await s.list(ctx, limit)).map((e): repo.UpcomingRow => ({ kind: s.kind, ...e })))),
    Promise.all([
      repo.countScheduledCampaigns(ctx.store, ctx.projectId),
      repo.countDeferredEmails(ctx.store, ctx.projectId),
      ...extra.map((s) => s.count(ctx)),
    ]),
  ])
  const rows = [...campaigns, ...deferred, ...more.flat()]
  rows.sort((a, b) => a.at.getTime() - b.at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return {
    data: rows.slice(0, limit).map((r) => ({ kind: r.kind, id: r.id, at: r.at.toISOString(), title: r.title, detail: r.detail })),
    total: counts.reduce((a, b) => a + b, 0),
  }
}
