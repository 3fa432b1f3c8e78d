import { accessSync, constants, existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Command } from 'commander'
import { ConfigError, isFullyQualified, redactUrl, type Config } from '../../src/config'
import type { Store } from '../../src/db/client'
import { emit, settings } from '../shared'

export interface Check { name: string; status: 'ok' | 'warn' | 'fail'; detail: string }

const ok = (name: string, detail: string): Check => ({ name, status: 'ok', detail })
const warn = (name: string, detail: string): Check => ({ name, status: 'warn', detail })
const fail = (name: string, detail: string): Check => ({ name, status: 'fail', detail })
const msg = (err: unknown) => (err instanceof Error ? err.message : String(err))

/** The data dir must be writable; a missing one is created by `serve` (doctor creates nothing). */
function checkDataDir(config: Config): Check {
  try {
    if (!existsSync(config.dataDir)) {
      accessSync(nearestExisting(config.dataDir), constants.W_OK)
      return warn('data dir', `${config.dataDir} does not exist yet; \`mailctl serve\` or \`mailctl migrate\` creates it`)
    }
    accessSync(config.dataDir, constants.W_OK)
    const secret = config.jwtSecret ? 'MAILCTL_JWT_SECRET set' : config.secret ? 'MAILCTL_SECRET set' : existsSync(join(config.dataDir, 'secret.key')) ? 'secret.key present' : 'secret.key generated on first serve'
    return ok('data dir', `${config.dataDir} writable; ${secret}`)
  } catch (err) {
    return fail('data dir', `${config.dataDir}: ${msg(err)}`)
  }
}

function nearestExisting(path: string): string {
  let p = path
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p)
  return p
}

/** Can the port be bound now? In use is a warning (mailctl itself may be running). */
async function checkPort(name: string, host: string, port: number): Promise<Check> {
  if (port === 0) return ok(name, 'disabled (port 0)')
  try {
    const s = Bun.listen({ hostname: host, port, socket: { data() {} } })
    s.stop(true)
    return ok(name, `${host}:${port} is free`)
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'EADDRINUSE') return warn(name, `${host}:${port} is in use (by a running mailctl?)`)
    if (code === 'EACCES') return fail(name, `${host}:${port}: permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)`)
    return fail(name, `${host}:${port}: ${msg(err)}`)
  }
}

/**
 * Free space for SQLite: its write-ahead log grows to about 80 MB before it is folded back, so a volume
 * with less than about 100 MB free fills under load (writes then fail with 503 STORAGE_FULL). Nothing on
 * PostgreSQL (its disk is the database server's).
 */
async function checkDiskSpace(config: Config): Promise<Check | null> {
  if (!config.databaseUrl.startsWith('sqlite:')) return null
  const [{ sqlitePath }, { formatBytes, freeBytesFor, MIN_FREE_BYTES, WAL_HEADROOM_BYTES }] = await Promise.all([import('../../src/db/client'), import('../../src/db/failures')])
  const path = sqlitePath(config.databaseUrl)
  if (path === ':memory:') return null
  const free = freeBytesFor(join(nearestExisting(dirname(path)), 'x'))
  if (free === null) return warn('disk space', `cannot read the free space of the volume of ${path}`)
  const where = `${formatBytes(free)} free on the volume of ${path}`
  if (free < MIN_FREE_BYTES) return fail('disk space', `${where}: the disk is full; writes fail. Free space (keep about 100 MB for the write-ahead log)`)
  if (free < WAL_HEADROOM_BYTES) return warn('disk space', `${where}: below the ~100 MB the write-ahead log may need (it grows to about 80 MB before it is folded back); free space or move the data dir`)
  return ok('disk space', where)
}

/** Reachability and migrations; the cause of a failure is the driver's (not drizzle's "Failed query"). */
async function checkDatabase(config: Config): Promise<Check[]> {
  const [{ sql }, { describeStoreError, openStore, sqlitePath, StoreMissingError }, { appliedMigrations, knownMigrations }] =
    await Promise.all([import('drizzle-orm'), import('../../src/db/client'), import('../../src/db/migrate')])
  const kind = config.databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres'
  const shown = kind === 'sqlite' ? sqlitePath(config.databaseUrl) : redactUrl(config.databaseUrl)
  let store: Store | undefined
  try {
    store = openStore(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous, create: false })
    await store.rows(sql`SELECT 1 AS one`)
  } catch (err) {
    await store?.close().catch(() => {})
    if (err instanceof StoreMissingError) return [warn('database', `sqlite: no database at ${shown} yet; \`mailctl serve\` or \`mailctl migrate\` creates it (or point MAILCTL_DATA_DIR / DATABASE_URL at the existing one)`)]
    return [fail('database', `${kind} (DATABASE_URL ${shown}): ${describeStoreError(err)}`)]
  }
  try {
    const applied = new Set(await appliedMigrations(store))
    const missing = knownMigrations(store).filter((n) => !applied.has(n))
    return [
      ok('database', `${kind} reachable`),
      !missing.length ? ok('migrations', `all ${applied.size} applied`) : warn('migrations', `pending: ${missing.join(', ')} (run \`mailctl migrate\` or start \`mailctl serve\`)`),
      await checkKeys(config, store, applied.has('0015_secret_check')),
      ...(missing.length ? [] : [await checkSystemMail(config, store)]),
    ]
  } finally {
    await store.close()
  }
}

/**
 * The keys: on PostgreSQL they must come from the settings (MAILCTL_SECRET); they must match the
 * fingerprints the database recorded when it was first served (src/secrets.ts). Doctor creates no key.
 */
async function checkKeys(config: Config, store: Store, recorded: boolean): Promise<Check> {
  const [{ mismatchMessage, presentKeyFingerprints, requireConfiguredKeys }, { recordedFingerprints }] =
    await Promise.all([import('../../src/secrets'), import('../../src/db/secret-check')])
  try {
    requireConfiguredKeys(config, store.dialect)
  } catch (err) {
    return fail('keys', msg(err))
  }
  const source = config.secret ? 'MAILCTL_SECRET' : store.dialect === 'pg' ? 'MAILCTL_JWT_SECRET and MAILCTL_DKIM_KEY' : 'settings or the data dir'
  if (!recorded) return ok('keys', `from ${source}; the database records their fingerprints when \`mailctl serve\` first starts`)
  const problem = mismatchMessage(config, presentKeyFingerprints(config), await recordedFingerprints(store))
  return problem ? fail('keys', problem) : ok('keys', `from ${source}; they match those the database was first served with`)
}

/** System mail (src/modules/emails/system.ts): MAILCTL_SYSTEM_FROM set, on a domain some project has verified. */
async function checkSystemMail(config: Config, store: Store | null): Promise<Check> {
  const { systemSenderCheck } = await import('../../src/modules/emails/system')
  try {
    const r = await systemSenderCheck(config, store)
    if (!r) return warn('system mail', 'the database could not be read: MAILCTL_SYSTEM_FROM not checked')
    return r.status === 'ok' ? ok('system mail', r.detail) : warn('system mail', r.detail)
  } catch (err) {
    return warn('system mail', `MAILCTL_SYSTEM_FROM could not be checked: ${msg(err)}`)
  }
}

async function checkRedis(config: Config): Promise<Check> {
  if (!config.redisUrl) return ok('redis', 'not configured (rate limits and locks are kept in this process)')
  const { Redis } = await import('ioredis')
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null })
  redis.on('error', () => {})
  try {
    await redis.connect()
    const pong = await redis.ping()
    return pong === 'PONG' ? ok('redis', 'reachable') : fail('redis', `REDIS_URL ${redactUrl(config.redisUrl)}: unexpected answer to PING: ${pong}`)
  } catch (err) {
    return fail('redis', `REDIS_URL ${redactUrl(config.redisUrl)}: ${msg(err)}`)
  } finally {
    redis.disconnect()
  }
}

/** The server's own host name must resolve (it is the EHLO name, bounce domain and MX target) and should have matching reverse DNS. */
async function checkHostname(config: Config): Promise<Check[]> {
  const name = config.hostname
  if (!isFullyQualified(name)) return [warn('hostname', `"${name}" is not a fully qualified name: set MAILCTL_HOSTNAME (e.g. mail.example.com)`)]
  const [{ Resolver }, { resolverFor }] = await Promise.all([import('node:dns/promises'), import('../../src/dns')])
  const resolver = resolverFor(config, { timeoutMs: 2000, attempts: 1 })
  let addresses: string[] = []
  try {
    addresses = [...(await resolver.resolveA(name).catch(() => [])), ...(await resolver.resolveAAAA(name).catch(() => []))]
  } catch (err) {
    return [fail('hostname', `${name}: ${msg(err)}`)]
  }
  if (!addresses.length) return [fail('hostname', `${name} has no A or AAAA record: publish one pointing at this server`)]
  const checks = [ok('hostname', `${name} -> ${addresses.join(', ')}`)]
  try {
    const r = new Resolver({ timeout: 2000, tries: 1 })
    if (config.dnsServers.length) r.setServers(config.dnsServers)
    const ptr = await r.reverse(addresses[0])
    checks.push(ptr.map((p) => p.toLowerCase()).includes(name.toLowerCase())
      ? ok('reverse dns', `${addresses[0]} -> ${ptr.join(', ')}`)
      : warn('reverse dns', `${addresses[0]} -> ${ptr.join(', ') || '(none)'}; receivers trust mail more when it points back to ${name}`))
  } catch (err) {
    checks.push(warn('reverse dns', `${addresses[0]}: no PTR record (${msg(err)})`))
  }
  return checks
}

function checkPublicUrl(config: Config): Check {
  const u = new URL(config.publicUrl)
  if (/^(localhost|127\.|\[::1\])/.test(u.hostname)) return warn('public url', `${config.publicUrl}: links in mail (tracking, unsubscribe) will not work for recipients; set MAILCTL_PUBLIC_URL`)
  return ok('public url', config.publicUrl)
}

function checkOutbound(config: Config): Check {
  if (config.outbound === 'capture') return warn('outbound', 'capture: mail is stored, never delivered (development setting)')
  if (config.outbound === 'direct') return ok('outbound', `direct delivery to MX hosts on port ${config.mxPort}`)
  return ok('outbound', `smart host ${new URL(config.outbound).host}`)
}

export async function runDoctor(config: Config): Promise<{ ok: boolean; checks: Check[] }> {
  const checks: Check[] = [ok('config', 'settings parsed')]
  checks.push(checkDataDir(config))
  // Imported here, not at the top: building the CLI program loads no library beyond commander (test/cli/startup.test.ts).
  const { uploadsCheck } = await import('../../src/modules/uploads/service')
  checks.push(await uploadsCheck(config))
  const database = await checkDatabase(config)
  checks.push(...database)
  // Without a readable, migrated database, what does not need it is still said (MAILCTL_SYSTEM_FROM unset).
  if (!database.some((c) => c.name === 'system mail')) checks.push(await checkSystemMail(config, null))
  const disk = await checkDiskSpace(config)
  if (disk) checks.push(disk)
  checks.push(await (await import('../../src/ops/schedule')).backupCheck(config))
  checks.push(await checkRedis(config))
  checks.push(await checkPort('http port', config.httpHost, config.httpPort))
  checks.push(await checkPort('smtp inbound port', '0.0.0.0', config.smtpInboundPort))
  checks.push(await checkPort('smtp relay port', '0.0.0.0', config.smtpRelayPort))
  checks.push(checkPublicUrl(config))
  checks.push((await import('../../src/modules/auth/oauth-providers')).oauthCheck(config))
  checks.push(checkOutbound(config))
  checks.push(...(await checkHostname(config)))
  return { ok: checks.every((c) => c.status !== 'fail'), checks }
}

/** `mailctl doctor`: configuration, ports, own host name DNS, database and Redis; exit 1 when a check fails. */
export function register(program: Command): void {
  program.command('doctor')
    .description('check configuration, ports, DNS of the server host name, database and Redis')
    .action(async (_opts: unknown, cmd: Command) => {
      let config: Config
      try {
        config = settings(cmd)
      } catch (err) {
        // A setting that cannot be used is the first thing doctor reports (as a check, with --json too).
        if (!(err instanceof ConfigError)) throw err
        const report = { ok: false, checks: [fail('config', err.message)] }
        emit(cmd, report, () => `FAIL  ${'config'.padEnd(18)} ${err.message}`)
        process.exitCode = 1
        return
      }
      const report = await runDoctor(config)
      const mark = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' }
      emit(cmd, report, () => report.checks.map((c) => `${mark[c.status]}  ${c.name.padEnd(18)} ${c.detail}`).join('\n'))
      if (!report.ok) process.exitCode = 1
    })
}
