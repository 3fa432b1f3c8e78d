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

/** Composition root: config -> store -> services. Transports are started by `serve`. */
export async function createDeps(config: Config, opts: { migrate?: boolean; log?: Logger } = {}): Promise<Deps> {
  const log = opts.log ?? createLogger(config.logLevel)
  const store = openStore(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous })
  if (opts.migrate !== false) {
    const applied = await migrate(store)
    if (applied.length) log.info('migrations applied', { applied })
  }
  const redis = config.redisUrl ? new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }) : null
  return {
    config,
    store,
    log,
    limiter: redis ? redisLimiter(redis) : memoryLimiter(),
    mail: captureMailOut(store, `mailctl@${config.hostname}`),
    redis,
    secret: loadSecret(config),
  }
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
