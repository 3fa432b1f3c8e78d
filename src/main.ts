import { join } from 'node:path'
import type Redis from 'ioredis'
import { systemClock } from './clock'
import { ConfigError, redactUrl, type Config } from './config'
import { checkReachable, openStore, sqlitePath, StoreMissingError, type Store } from './db/client'
import { GroupCommit } from './db/group-commit'
import { appliedMigrations, migrate } from './db/migrate'
import { diskFullAtStart } from './db/failures'
import { checkKeys, jwtSecret, requireConfiguredKeys } from './secrets'
import { NodeRegistry } from './jobs/nodes'
import type { Deps, StoreRuntime } from './deps'
import { createLogger, errorFields, type Logger } from './log'
import { memoryLimiter, redisLimiter } from './http/ratelimit'
import { captureMailOut } from './mail/system'
import { pipelineMailOut } from './modules/emails/system'
import { closeRenderThreads } from './mail/render/threads'
import { openTrackWriter } from './modules/events/writer'
import { OutboxLocal } from './modules/events/outbox'
import { registerUsageProvider } from './modules/contacts/usage'
import { keepHeapSmall } from './heap'
import { registerEventConsumer } from './modules/events/consumers'
import { segmentHintConsumer } from './modules/segments/jobs'
import { segmentFieldAndEventUsage, segmentsReferringToSegment } from './modules/segments/service'
import { registerSegmentUser } from './modules/segments/usage'
import { campaignFieldAndEventUsage, campaignsUsingSegment } from './modules/campaigns/usage'
import { webhookDeliveriesConsumer } from './modules/hooks/consumer'
import { registerTemplateUsageSource } from './modules/templates/usage'
import { workflowTriggerConsumer, workflowWaitConsumer } from './modules/workflows/consumer'
import { workflowFieldAndEventUsage, workflowStepsUsingTemplate, workflowUpcomingSource } from './modules/workflows/usage'
import { registerUpcomingSource } from './modules/activity/upcoming'
import { refuseUnfinishedRestore } from './ops/restore-marker'

/*
 * Start-up time (bench/startup.ts): this module holds only what every command needs (the store and the
 * services' dependencies). The transports, with their libraries (Elysia and the routes, the job
 * handlers, nodemailer, smtp-server, mailparser) and ioredis, are imported when `serve` starts them, so
 * a one-shot CLI command does not load them.
 */

/** The removers of what `wireConsumers` registered; null while nothing is wired. */
let wired: Array<() => void> | null = null

/**
 * Every consumer of the process-wide registries, in one place. A module never registers itself when it is
 * imported: the consumers below are plugged in here, once per process (a second call does nothing), before
 * any deps are handed out.
 *
 * - the event consumers (`registerEventConsumer`, src/modules/events/consumers.ts), fed by the outbox:
 *   segment recompute hints, customer webhook deliveries (src/modules/hooks), workflow triggers and waits;
 * - who uses a segment (src/modules/segments/usage.ts, DELETE /segments/:id answers 409): other segments and
 *   SCHEDULED or SENDING campaigns;
 * - where a contact field or an event is referenced (src/modules/contacts/usage.ts): segments, campaigns and
 *   workflows;
 * - where a template is referenced (src/modules/templates/usage.ts): workflow SEND_EMAIL steps (a campaign
 *   keeps its own subject and body, so it is no user of a template);
 * - what is due next in /activity/upcoming (src/modules/activity/upcoming.ts): workflow waits.
 */
export function wireConsumers(): void {
  if (wired) return
  wired = [
    registerEventConsumer(segmentHintConsumer),
    registerEventConsumer(webhookDeliveriesConsumer),
    registerSegmentUser(segmentsReferringToSegment),
    registerSegmentUser(campaignsUsingSegment),
    registerUsageProvider(segmentFieldAndEventUsage),
    registerUsageProvider(campaignFieldAndEventUsage),
    // Workflows: triggers and waits on the event stream, template and field/event usage, waits in /activity/upcoming.
    registerEventConsumer(workflowTriggerConsumer),
    registerEventConsumer(workflowWaitConsumer),
    registerUsageProvider(workflowFieldAndEventUsage),
    registerUpcomingSource(workflowUpcomingSource),
    () => registerTemplateUsageSource('workflowSteps', null),
  ]
  registerTemplateUsageSource('workflowSteps', workflowStepsUsingTemplate)
}

/** Removes what `wireConsumers` registered, so that the next call registers it again (tests). */
export function unwireConsumers(): void {
  for (const off of wired ?? []) off()
  wired = null
}

/**
 * Everything this process runs on `store`, made here once, so that this file shows it (Deps.runtime,
 * src/deps.ts). Nothing starts now: the node's heartbeat begins when its first worker joins, the track
 * writer's threads at the first track, a group commit at the first write.
 */
export function storeRuntime(store: Store, config: Pick<Config, 'sqliteSynchronous'>, log?: Logger): StoreRuntime {
  // This process's row in `nodes` (src/jobs/nodes.ts): heartbeats, lease holders, its lock file.
  const node = new NodeRegistry(store, { log })
  // File-backed SQLite: POST /v1/track's writes on a thread of their own (src/modules/events/writer.ts).
  const trackWriter = openTrackWriter(store, config.sqliteSynchronous)
  return {
    store,
    node,
    // Group commit of the main thread's writes: sends, workflow steps, tracks without the writer thread.
    commits: new GroupCommit(store),
    trackWriter,
    // The outbox drainer's recent events; its claims ride on the track writer's commits while it runs.
    outbox: new OutboxLocal(trackWriter ? (claim) => trackWriter.claimOutbox(claim) : null),
  }
}

/**
 * The one way deps come into being: every builder of `Deps` (`createDeps`, the test environment) passes
 * them through here, so no entry point (serve, the CLI, the relay, the jobs, the tests) runs unwired.
 * Refuses deps whose runtime belongs to another store (a copy of deps for a second store needs its own).
 */
export function composeDeps(deps: Deps): Deps {
  if (deps.runtime.store !== deps.store) throw new Error('composeDeps: deps.runtime was made for another store')
  wireConsumers()
  return deps
}

/**
 * Why a command that does not create a store stops: which store it looked for, and the two settings that
 * point at another one.
 */
function noStoreMessage(config: Config, dialect: 'sqlite' | 'pg', empty = false): string {
  const create = 'or create it with `mailctl migrate` (`mailctl serve` also creates it)'
  // dialect: the message names the store the settings point at
  if (dialect === 'pg') return `the PostgreSQL database of DATABASE_URL (${redactUrl(config.databaseUrl)}) has no mailctl tables: check DATABASE_URL, ${create}`
  const byDefault = config.databaseUrl === `sqlite://${join(config.dataDir, 'mailctl.db')}`
  const where = byDefault ? `MAILCTL_DATA_DIR=${config.dataDir}, DATABASE_URL unset` : `DATABASE_URL=${redactUrl(config.databaseUrl)}`
  const what = empty ? `the SQLite database ${sqlitePath(config.databaseUrl)} has no mailctl tables` : `no mailctl database at ${sqlitePath(config.databaseUrl)}`
  return `${what} (${where}): point MAILCTL_DATA_DIR or DATABASE_URL at the existing store, ${create}`
}

/** A start that failed on a full disk says so: SQLite calls it "disk I/O error" while it opens its log. */
function namedStartError(config: Config, err: unknown): unknown {
  if (!config.databaseUrl.startsWith('sqlite:')) return err
  const path = sqlitePath(config.databaseUrl)
  return path === ':memory:' ? err : diskFullAtStart(path, err) ?? err
}

/** Opens the store, proves it answers (errors name DATABASE_URL) and, unless `create`, that it has a schema. */
async function openChecked(config: Config, create: boolean): Promise<Store> {
  let store: Store
  try {
    store = openStore(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous, create })
  } catch (err) {
    if (err instanceof StoreMissingError) throw new ConfigError(noStoreMessage(config, 'sqlite'))
    throw namedStartError(config, err)
  }
  try {
    await checkReachable(store)
    if (!create && !(await appliedMigrations(store)).length) throw new ConfigError(noStoreMessage(config, store.dialect, true))
    return store
  } catch (err) {
    await store.close().catch(() => {})
    throw namedStartError(config, err)
  }
}

/**
 * Connects to REDIS_URL before anything relies on it: a wrong URL stops start-up with a message naming
 * the setting. Later disconnections are retried by ioredis and logged (JSON) once per outage.
 */
export async function connectRedis(url: string, log: Logger): Promise<Redis> {
  const { Redis: Client } = await import('ioredis')
  const redis = new Client(url, { lazyConnect: true, maxRetriesPerRequest: 2 })
  let first: Error | null = null
  const onConnectError = (err: Error) => { first ??= err }
  redis.on('error', onConnectError)
  try {
    await redis.connect()
  } catch (err) {
    redis.disconnect()
    throw new Error(`cannot reach Redis at REDIS_URL (${redactUrl(url)}): ${(first ?? (err as Error)).message}`)
  }
  redis.off('error', onConnectError)
  let down = false
  redis.on('error', (err) => {
    if (!down) log.error('redis connection lost (REDIS_URL); retrying', { url: redactUrl(url), ...errorFields(err) })
    down = true
  })
  redis.on('ready', () => { down = false })
  return redis
}

/** The migration that creates `secret_checks`: a store not migrated that far has no fingerprints to compare. */
const SECRET_CHECK_MIGRATION = '0015_secret_check'

/**
 * Composition root: config -> store -> services. Transports are started by `serve`. `create: false` (the
 * CLI's commands other than serve and migrate) refuses to create a store that does not exist yet.
 */
export async function createDeps(config: Config, opts: { migrate?: boolean; log?: Logger; create?: boolean } = {}): Promise<Deps> {
  // A data dir a restore did not finish writing is refused (src/ops/restore-marker.ts).
  refuseUnfinishedRestore(config)
  const store = await openChecked(config, opts.create ?? true)
  const runtime = storeRuntime(store, config)
  // Every log line of this process names its node (the id of its row in `nodes`, its lease holders and
  // mailctl_node_info), so the lines of several nodes can be told apart once gathered.
  const log = (opts.log ?? createLogger(config.logLevel)).child({ node: runtime.node.id })
  runtime.node.logTo(log)
  let redis: Redis | null = null
  try {
    // Every connection is proven before the first write (a wrong REDIS_URL leaves the schema untouched).
    redis = config.redisUrl ? await connectRedis(config.redisUrl, log) : null
    // On PostgreSQL the keys come from the configuration (MAILCTL_SECRET), and every node's must match
    // those the database was first served with (src/secrets.ts).
    requireConfiguredKeys(config, store.dialect)
    if (opts.migrate !== false) {
      const applied = await migrate(store)
      if (applied.length) log.info('migrations applied', { applied })
    }
    if ((await appliedMigrations(store)).includes(SECRET_CHECK_MIGRATION)) await checkKeys(store, config)
    // Every decision that depends on the time reads this one clock (src/clock.ts).
    const clock = systemClock
    // System mail goes out through the pipeline from MAILCTL_SYSTEM_FROM; captured with MAILCTL_OUTBOUND=capture.
    const capture = captureMailOut(store, config.systemFrom ?? `mailctl@${config.hostname}`, clock)
    const deps: Deps = composeDeps({
      config,
      store,
      log,
      limiter: redis ? redisLimiter(redis, { log }) : memoryLimiter(clock),
      mail: config.outbound === 'capture' ? capture : pipelineMailOut(() => deps, capture),
      redis,
      secret: jwtSecret(config),
      clock,
      runtime,
    })
    return deps
  } catch (err) {
    redis?.disconnect()
    await store.close().catch(() => {})
    throw namedStartError(config, err)
  }
}

export async function closeDeps(deps: Deps): Promise<void> {
  // The track writer's threads (SQLite) stop now rather than after their idle delay.
  deps.runtime.trackWriter?.stop()
  // The render threads (src/mail/render/pool.ts) likewise.
  closeRenderThreads()
  deps.redis?.disconnect()
  await deps.store.close()
}

export interface Running {
  stop(): Promise<void>
  httpPort: number
  /** The SMTP ports listening (null: that part is off or not in this node's roles). */
  smtp: { inbound: number | null; relay: number | null; secure: number | null }
  deps: Deps
}

export type Role = 'api' | 'worker' | 'smtp'

/** A port `serve` could not open, with the setting that names it and what to do. */
export class PortError extends Error {}

function portError(setting: string, host: string, port: number, err: unknown, hint = ''): Error {
  const code = (err as { code?: string }).code
  const text = err instanceof Error ? err.message : String(err)
  if (code === 'EADDRINUSE' || /in use/i.test(text)) return new PortError(`${setting}: ${host}:${port} is already in use (another mailctl serve?): stop that process or choose another port${hint}`)
  if (code === 'EACCES') return new PortError(`${setting}: ${host}:${port}: permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE): choose a port above 1023 and forward to it`)
  return new PortError(`${setting}: cannot listen on ${host}:${port}: ${text}`)
}

/**
 * Lets the event loop run once: connections that arrived meanwhile are accepted and their requests
 * answered. (A dynamic import and a query on bun:sqlite resolve in microtasks, which never let it run.)
 */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * `mailctl serve`: migrations first, then the outbound pipeline (its threads start in the background),
 * HTTP, the other workers and SMTP for the roles asked. The event loop runs between the later steps, so
 * /health and the API answer while the workers and the SMTP servers start; `serve` resolves (or fails, naming the busy port) once all have.
 */
export async function serve(config: Config, roles: Role[] = ['api', 'worker', 'smtp']): Promise<Running> {
  const deps = await createDeps(config)
  const stops: Array<() => Promise<void> | void> = []
  /*
   * Shutdown (SIGTERM, SIGINT), everything at once and bounded by MAILCTL_SHUTDOWN_GRACE_SECONDS:
   * - HTTP and SMTP stop accepting; requests and SMTP transactions in progress finish (SMTP sessions
   *   still open at the end of the grace get a 421, HTTP connections are closed);
   * - the outbound pipeline starts nothing more, lets the messages on the wire finish and hands back
   *   every claimed message not started; the job worker waits for its jobs up to the grace;
   * - every lease is released (due now, so another node takes the work at once) and the node row deleted.
   */
  const stopAll = async () => {
    const results = await Promise.allSettled(stops.map(async (s) => s()))
    for (const r of results) if (r.status === 'rejected') deps.log.error('a part failed to stop', errorFields(r.reason))
    await closeDeps(deps)
  }
  const graceMs = config.shutdownGraceSeconds * 1000
  // The JS heap as on a small machine, whatever the RAM here (src/heap.ts).
  const heap = keepHeapSmall({ growthBytes: config.heapGrowthMb * 1024 * 1024 })
  stops.push(() => heap.stop())
  let httpPort = 0
  const smtp: Running['smtp'] = { inbound: null, relay: null, secure: null }
  // The outbound pipeline first: its signer threads load their modules on the other cores while this
  // thread builds the HTTP app, so queued mail (after a restart, the backlog) goes out as soon as a
  // thread is ready instead of after everything else started (bench/recovery.ts, docs/decisions.md).
  try {
    if (roles.includes('worker')) {
      // The pipeline reads and records through the emails module's DeliveryStore (src/mail/outbound/store.ts).
      const [{ startOutbound }, { deliveryStore }] = await Promise.all([import('./mail/outbound'), import('./modules/emails/delivery')])
      const outbound = await startOutbound(deps, deliveryStore)
      stops.push(() => outbound.stop())
      await yieldToLoop()
    }
    if (roles.includes('api')) {
      const { buildApp } = await import('./http/app')
      const app = buildApp(deps)
      try {
        // Elysia asks Bun for SO_REUSEPORT by default, which lets a second server share a busy port.
        app.listen({ port: config.httpPort, hostname: config.httpHost, reusePort: config.httpReusePort, maxRequestBodySize: config.maxBodyBytes + 1024 * 1024 })
      } catch (err) {
        throw portError('MAILCTL_HTTP_PORT', config.httpHost, config.httpPort, err, ', or set MAILCTL_HTTP_REUSE_PORT=true to share it on purpose')
      }
      httpPort = app.server?.port ?? config.httpPort
      deps.log.info('http listening', { host: config.httpHost, port: httpPort })
      stops.push(async () => {
        // Stops listening at once; requests in progress get the grace, then their connections are closed.
        let timer: Timer | null = null
        const graceful = app.stop().then(() => true)
        const done = await Promise.race([graceful, new Promise<false>((r) => { timer = setTimeout(() => r(false), graceMs) })])
        if (timer) clearTimeout(timer)
        if (!done) await app.stop(true)
      })
      await yieldToLoop()
    }
    if (config.metricsPort !== 0) {
      // GET /metrics on a listener of its own (README, Metrics), whatever this node's roles.
      const { startMetricsListener } = await import('./http/metrics')
      let metrics: ReturnType<typeof startMetricsListener>
      try {
        metrics = startMetricsListener(deps)
      } catch (err) {
        throw portError('MAILCTL_METRICS_PORT', config.metricsHost, config.metricsPort, err)
      }
      deps.log.info('metrics listening', { host: config.metricsHost, port: metrics.port })
      stops.push(() => metrics.stop())
    }
    if (roles.includes('worker')) {
      const [{ Worker }, { allJobs }] = await Promise.all([import('./jobs/queue'), import('./jobs/registry')])
      const worker = new Worker(deps, allJobs, { concurrency: 8 })
      await worker.start()
      stops.push(() => worker.stop(graceMs))
      await yieldToLoop()
      const { startOutbox } = await import('./modules/events/outbox')
      const outbox = await startOutbox(deps)
      stops.push(() => outbox.stop())
      await yieldToLoop()
      const { startHookDispatcher } = await import('./modules/hooks/dispatcher')
      const hooks = await startHookDispatcher(deps)
      stops.push(() => hooks.stop())
      await yieldToLoop()
    }
    if (roles.includes('smtp')) {
      const { startInbound } = await import('./smtp/receiver')
      const inbound = await startInbound(deps).catch((err) => { throw portError('MAILCTL_SMTP_INBOUND_PORT', '0.0.0.0', config.smtpInboundPort, err) })
      if (inbound) {
        stops.push(() => inbound.close())
        smtp.inbound = inbound.port
      }
      await yieldToLoop()
      const { startRelay } = await import('./smtp/relay')
      const relay = await startRelay(deps).catch((err) => { throw portError('MAILCTL_SMTP_RELAY_PORT', '0.0.0.0', config.smtpRelayPort, err) })
      if (relay) {
        stops.push(() => relay.close())
        smtp.relay = relay.port
        smtp.secure = relay.securePort
      }
    }
  } catch (err) {
    await stopAll().catch(() => {})
    throw err
  }
  return { deps, httpPort, smtp, stop: stopAll }
}

/** The one human line `serve` prints at start: where the API, its docs and the SMTP ports are. */
export function startLine(config: Config, running: Pick<Running, 'httpPort' | 'smtp'>, version: string): string {
  const parts: string[] = []
  if (running.httpPort) {
    const host = config.httpHost === '0.0.0.0' || config.httpHost === '::' ? 'localhost' : config.httpHost.includes(':') ? `[${config.httpHost}]` : config.httpHost
    const base = `http://${host}:${running.httpPort}`
    parts.push(`API ${base}/v1/`, `docs ${base}/docs`)
    if (config.publicUrl !== base) parts.push(`public URL ${config.publicUrl}`)
  }
  const smtp = [
    running.smtp.inbound !== null ? `inbound ${running.smtp.inbound}` : null,
    running.smtp.relay !== null ? `submission ${running.smtp.relay}` : null,
    running.smtp.secure !== null ? `implicit TLS ${running.smtp.secure}` : null,
  ].filter(Boolean)
  if (smtp.length) parts.push(`SMTP ${smtp.join(', ')}`)
  return `mailctl ${version} is running: ${parts.length ? parts.join('; ') : 'workers only'} (Ctrl-C stops)`
}
