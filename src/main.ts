import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import Redis from 'ioredis'
import type { Config } from './config'
import { openStore } from './db/client'
import { migrate } from './db/migrate'
import type { Deps } from './deps'
import { createLogger, type Logger } from './log'
import { memoryLimiter, redisLimiter } from './http/ratelimit'
import { captureMailOut } from './mail/system'
import { buildApp } from './http/app'
import { Worker } from './jobs/queue'
import { allJobs } from './jobs/registry'
import { startOutbound } from './mail/outbound'
import { startInbound } from './mail/inbound/receiver'
import { startRelay } from './mail/relay'
import { trackWriter } from './modules/events/writer'
import { registerUsageProvider } from './modules/contacts/usage'
import { onEvents } from './modules/events/stream'
import { segmentHintListener } from './modules/segments/jobs'
import { segmentFieldAndEventUsage, segmentsReferringToSegment } from './modules/segments/service'
import { registerSegmentUser } from './modules/segments/usage'

/** The JWT/link signing secret: from config, else generated once into the data dir. */
export function loadSecret(config: Config): string {
  if (config.jwtSecret) return config.jwtSecret
  mkdirSync(config.dataDir, { recursive: true })
  const file = join(config.dataDir, 'secret.key')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const secret = randomBytes(32).toString('hex')
  writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' })
  return secret
}

/** The removers of what `wireConsumers` registered; null while nothing is wired. */
let wired: Array<() => void> | null = null

/**
 * Every consumer of the process-wide registries, in one place. A module never registers itself when it is
 * imported: the consumers below are plugged in here, once per process (a second call does nothing), before
 * any deps are handed out.
 *
 * - the event stream (`onEvents`, src/modules/events/stream.ts): segment recompute hints;
 * - who uses a segment (src/modules/segments/usage.ts, DELETE /segments/:id answers 409): other segments;
 * - where a contact field or an event is referenced (src/modules/contacts/usage.ts): segments;
 * - where a template is referenced (src/modules/templates/usage.ts): no source yet. Campaigns and workflows
 *   will register theirs here (`registerTemplateUsageSource`), as they will their segment users, field
 *   and event usage, and the workflow trigger listener.
 */
export function wireConsumers(): void {
  if (wired) return
  wired = [
    onEvents(segmentHintListener),
    registerSegmentUser(segmentsReferringToSegment),
    registerUsageProvider(segmentFieldAndEventUsage),
  ]
}

/** Removes what `wireConsumers` registered, so that the next call registers it again (tests). */
export function unwireConsumers(): void {
  for (const off of wired ?? []) off()
  wired = null
}

/**
 * The one way deps come into being: every builder of `Deps` (`createDeps`, the test environment) passes
 * them through here, so no entry point (serve, the CLI, the relay, the jobs, the tests) runs unwired.
 */
export function composeDeps(deps: Deps): Deps {
  wireConsumers()
  return deps
}

/** Composition root: config -> store -> services. Transports are started by `serve`. */
export async function createDeps(config: Config, opts: { migrate?: boolean; log?: Logger } = {}): Promise<Deps> {
  const log = opts.log ?? createLogger(config.logLevel)
  const store = openStore(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous })
  if (opts.migrate !== false) {
    const applied = await migrate(store)
    if (applied.length) log.info('migrations applied', { applied })
  }
  const redis = config.redisUrl ? new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }) : null
  return composeDeps({
    config,
    store,
    log,
    limiter: redis ? redisLimiter(redis) : memoryLimiter(),
    mail: captureMailOut(store, `mailctl@${config.hostname}`),
    redis,
    secret: loadSecret(config),
  })
}

export async function closeDeps(deps: Deps): Promise<void> {
  // The track writer's threads (SQLite) stop now rather than after their idle delay.
  trackWriter(deps.store, deps.config.sqliteSynchronous)?.stop()
  deps.redis?.disconnect()
  await deps.store.close()
}

export interface Running { stop(): Promise<void>; httpPort: number; deps: Deps }

export type Role = 'api' | 'worker' | 'smtp'

/** `mailctl serve`: migrations first, then HTTP, workers and SMTP for the roles asked. */
export async function serve(config: Config, roles: Role[] = ['api', 'worker', 'smtp']): Promise<Running> {
  const deps = await createDeps(config)
  const stops: Array<() => Promise<void> | void> = []
  let httpPort = 0
  if (roles.includes('api')) {
    const app = buildApp(deps).listen({ port: config.httpPort, hostname: config.httpHost, maxRequestBodySize: config.maxBodyBytes + 1024 * 1024 })
    httpPort = app.server?.port ?? config.httpPort
    deps.log.info('http listening', { host: config.httpHost, port: httpPort })
    stops.push(async () => { await app.stop() })
  }
  if (roles.includes('worker')) {
    const worker = new Worker(deps, allJobs, { concurrency: 8 })
    await worker.start()
    stops.push(() => worker.stop())
    const outbound = await startOutbound(deps)
    stops.push(() => outbound.stop())
  }
  if (roles.includes('smtp')) {
    const inbound = await startInbound(deps)
    if (inbound) stops.push(() => inbound.close())
    const relay = await startRelay(deps)
    if (relay) stops.push(() => relay.close())
  }
  return {
    deps,
    httpPort,
    async stop() {
      for (const s of stops.reverse()) await s()
      await closeDeps(deps)
    },
  }
}
