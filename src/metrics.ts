/**
 * The process's metrics (GET /metrics, Prometheus text format, through prom-client). One registry per
 * process; modules add their own metrics with `counter`, `gauge` and `histogram` (get-or-create by name,
 * so a module imported twice or a test that builds two apps registers each metric once), and values that
 * are read from the store at scrape time with `onScrape`.
 *
 * What is measured here today:
 * - HTTP requests by method, route (the route's pattern, never the raw path) and status, with a latency
 *   histogram (src/http/app.ts);
 * - queue depth and the age of the oldest item, per queue (outbound mail and jobs), read at scrape;
 * - delivery attempts by outcome and destination domain (mail/outbound/recorder.ts), the domain label
 *   a public mailbox provider or `other` (`domainLabel`: never a tenant's recipient domain);
 * - bounces and complaints (modules/tracking/feedback.ts and the recorder);
 * - job runs by kind and outcome, with their duration (jobs/queue.ts);
 * - the node: `mailctl_node_info{node, hostname, version}`, and the live nodes seen at the last heartbeat.
 *
 * Campaign progress, workflow executions and the event outbox backlog belong to their modules: they
 * register their gauges with `onScrape` (or counters with `counter`) when they are built.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client'
import type { Deps } from './deps'

export const registry = new Registry()
let defaults = false

const PREFIX = 'mailctl_'

/**
 * prom-client's per-space heap gauges, left out. On Bun `v8.getHeapSpaceStatistics` walks the whole
 * JavaScript heap with the event loop blocked, at every scrape: 30 ms on a 24 MB heap alone; 1.4 s over
 * the 21 scrapes of a profiled 30,000-recipient campaign (bench/campaign.ts scrapes every 2 s). And its
 * figures say little here: every space but "old" is 0, and "old" is what `nodejs_heap_size_used_bytes`
 * and `nodejs_heap_size_total_bytes` give (process.memoryUsage, well under a millisecond).
 */
const DROPPED_DEFAULTS = ['total', 'used', 'available'].map((n) => `${PREFIX}nodejs_heap_space_size_${n}_bytes`)

/** Process metrics of prom-client (CPU, memory, event loop), added once, at the first exposition. */
function ensureDefaults() {
  if (defaults) return
  defaults = true
  collectDefaultMetrics({ register: registry, prefix: PREFIX })
  for (const name of DROPPED_DEFAULTS) registry.removeSingleMetric(name)
}

function existing<T extends Metric>(name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined
}

/** A counter in the process registry (the same object for every call with this name). */
export function counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
  return existing<Counter<L>>(name) ?? new Counter({ name, help, labelNames, registers: [registry] })
}

/** A gauge in the process registry (the same object for every call with this name). */
export function gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
  return existing<Gauge<L>>(name) ?? new Gauge({ name, help, labelNames, registers: [registry] })
}

/** A histogram in the process registry (the same object for every call with this name). */
export function histogram<L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets?: number[]): Histogram<L> {
  return existing<Histogram<L>>(name) ?? new Histogram({ name, help, labelNames, registers: [registry], ...(buckets ? { buckets } : {}) })
}

export type ScrapeCollector = (deps: Deps) => Promise<void> | void

const collectors = new Set<ScrapeCollector>()

/**
 * Runs `fn` before each exposition (it sets gauges from the store: queue depths, campaign progress).
 * Returns the function that removes it. A collector that fails is skipped for that scrape (logged).
 */
export function onScrape(fn: ScrapeCollector): () => void {
  collectors.add(fn)
  return () => { collectors.delete(fn) }
}

/** The exposition: collectors first, then every metric in the text format. */
export async function exposition(deps: Deps): Promise<{ contentType: string; body: string }> {
  ensureDefaults()
  await Promise.all([...collectors].map(async (fn) => {
    try { await fn(deps) } catch (err) { deps.log.warn('a metrics collector failed', { error: err instanceof Error ? err.message : String(err) }) }
  }))
  return { contentType: registry.contentType, body: await registry.metrics() }
}

/**
 * The `domain` label: a public mailbox provider by its name, every other recipient domain `other`. A
 * recipient domain outside this list says who a tenant mails (its customers' companies), so no label ever
 * carries one: the label set is fixed and holds no tenant data.
 */
const PROVIDERS = new Set([
  'gmail.com', 'googlemail.com', 'outlook.com', 'hotmail.com', 'live.com', 'msn.com', 'yahoo.com', 'ymail.com',
  'icloud.com', 'me.com', 'mac.com', 'aol.com', 'gmx.com', 'gmx.de', 'gmx.net', 'web.de', 'yandex.ru', 'mail.ru',
  'proton.me', 'protonmail.com', 'zoho.com', 'fastmail.com', 'comcast.net', 'orange.fr', 't-online.de',
])

export function domainLabel(domain: string): string {
  const d = domain.toLowerCase()
  return PROVIDERS.has(d) ? d : 'other'
}

/** Delivery attempts by outcome (accepted, captured, deferred, bounced, failed) and destination domain. */
export const deliveries = () => counter('mailctl_delivery_attempts_total', 'Delivery attempts by outcome and recipient domain', ['outcome', 'domain'])
/** Bounces: at delivery (smtp) or reported later (report: DSN, SES). */
export const bounces = () => counter('mailctl_bounces_total', 'Bounces by type (hard, soft) and how they were learnt (smtp, report)', ['type', 'source'])
export const complaints = () => counter('mailctl_complaints_total', 'Complaints (feedback reports, SES)')
