/**
 * GET /metrics: the process's metrics in Prometheus text format (src/metrics.ts). On the API port it is
 * served only when MAILCTL_METRICS_TOKEN is set, to a scraper sending `Authorization: Bearer <token>`;
 * without a token it is not there (404). MAILCTL_METRICS_PORT opens a separate listener (on
 * MAILCTL_METRICS_HOST, loopback by default) that serves it, asking for the token too when one is set.
 * No label carries tenant data (src/metrics.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import pkg from '../../package.json'
import type { Deps } from '../deps'
import { AppError, unauthorized } from '../errors'
import { errorFields } from '../log'
import { jobDepth } from '../jobs/queue'
import { queueStats } from '../mail/outbound/queue-repo'
import { exposition, gauge, onScrape } from '../metrics'

const digest = (s: string) => createHash('sha256').update(s).digest()

/** Whether the Authorization header carries the token (compared in constant time). */
export function metricsAuthorized(header: string | null, token: string | null): boolean {
  if (token === null) return true
  const m = /^Bearer\s+(.+)$/i.exec(header ?? '')
  return m !== null && timingSafeEqual(digest(m[1].trim()), digest(token))
}

let builtIn: (() => void) | null = null

/** The gauges every node reports, read at scrape time: queue depths and ages, the node and its peers. */
function registerBuiltIn() {
  if (builtIn) return
  const depth = gauge('mailctl_queue_depth', 'Items not yet finished, per queue (outbound: messages; jobs: queued or running)', ['queue'])
  const oldest = gauge('mailctl_queue_oldest_age_seconds', 'Age of the oldest unfinished item, per queue (0 when empty)', ['queue'])
  const info = gauge('mailctl_node_info', 'This process: its node id (the nodes table, lease holders and log lines), host name and version', ['node', 'hostname', 'version'])
  const live = gauge('mailctl_nodes_live', 'Nodes with a fresh heartbeat at this node\'s last beat (1 on a node without workers)')
  const commits = gauge('mailctl_group_commit', 'Group commit on this process\'s main thread since it started (src/db/group-commit.ts; on a file-backed SQLite store tracks are committed by the track writer thread instead, and on PostgreSQL a write of its own, GroupCommit.run, is not counted), by count: batches committed, writes in them (writes over batches is the mean batch size), batches run again with savepoints, writes or batches run again after a deadlock or serialization failure', ['count'])
  builtIn = onScrape(async (deps) => {
    const now = deps.clock.date()
    const [out, jobs] = await Promise.all([queueStats(deps.store, now), jobDepth(deps.store)])
    depth.set({ queue: 'outbound' }, out.depth)
    oldest.set({ queue: 'outbound' }, out.oldestQueuedAt ? Math.max(0, (now.getTime() - out.oldestQueuedAt.getTime()) / 1000) : 0)
    depth.set({ queue: 'jobs' }, jobs.depth)
    oldest.set({ queue: 'jobs' }, jobs.oldestAt ? Math.max(0, (now.getTime() - jobs.oldestAt.getTime()) / 1000) : 0)
    const node = deps.runtime.node
    info.reset()
    info.set({ node: node.id, hostname: node.hostname, version: pkg.version }, 1)
    live.set(node.liveNodes())
    const stats = deps.runtime.commits.stats
    commits.set({ count: 'batches' }, stats.batches)
    commits.set({ count: 'writes' }, stats.writes)
    commits.set({ count: 'retries' }, stats.retries)
    commits.set({ count: 'conflicts' }, stats.conflicts)
  })
}

export function metricsRoutes(deps: Deps) {
  registerBuiltIn()
  return new Elysia({ tags: ['system'] } as never)
    .get('/metrics', async ({ request }) => {
      if (deps.config.metricsToken === null) throw new AppError('NOT_FOUND', 'No route for GET /metrics: set MAILCTL_METRICS_TOKEN to serve it here, or scrape the MAILCTL_METRICS_PORT listener')
      if (!metricsAuthorized(request.headers.get('authorization'), deps.config.metricsToken)) throw unauthorized('GET /metrics needs Authorization: Bearer <MAILCTL_METRICS_TOKEN>')
      const { contentType, body } = await exposition(deps)
      return new Response(body, { headers: { 'content-type': contentType } })
    }, { detail: { summary: 'Prometheus metrics (only with MAILCTL_METRICS_TOKEN set: Bearer <token>)' } })
}

/**
 * The separate metrics listener of MAILCTL_METRICS_PORT (serve opens it when the setting is not 0; `port`
 * 0 here is any free port): GET /metrics and nothing else (404), the token asked for when it is set.
 */
export function startMetricsListener(deps: Deps, port = deps.config.metricsPort): { port: number; stop(): Promise<void> } {
  const { metricsHost, metricsToken } = deps.config
  registerBuiltIn()
  const server = Bun.serve({
    port,
    hostname: metricsHost,
    fetch: async (request) => {
      const path = new URL(request.url).pathname
      if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) return new Response('Not found\n', { status: 404 })
      if (!metricsAuthorized(request.headers.get('authorization'), metricsToken)) return new Response('GET /metrics needs Authorization: Bearer <MAILCTL_METRICS_TOKEN>\n', { status: 401 })
      try {
        const { contentType, body } = await exposition(deps)
        return new Response(body, { headers: { 'content-type': contentType } })
      } catch (err) {
        deps.log.error('metrics exposition failed', errorFields(err))
        return new Response('metrics unavailable\n', { status: 500 })
      }
    },
  })
  return { port: server.port ?? port, stop: async () => { await server.stop(true) } }
}
