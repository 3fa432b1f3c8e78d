import { hostname } from 'node:os'
import { dirname, join, relative, resolve, isAbsolute } from 'node:path'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { parseAllowList } from './net/address-guard'

/** Every setting of README.md (Configuration), read once from the environment and an optional config file. */
export interface Config {
  dataDir: string
  databaseUrl: string
  redisUrl: string | null
  httpPort: number
  httpHost: string
  /** Share the HTTP port with other processes that ask for the same (SO_REUSEPORT); off: a busy port stops serve. */
  httpReusePort: boolean
  publicUrl: string
  hostname: string
  smtpInboundPort: number
  smtpRelayPort: number
  /** Implicit-TLS submission (465 by default), opened with the relay when a TLS certificate is set; 0 disables. */
  smtpSecurePort: number
  smtpTlsCert: string | null
  smtpTlsKey: string | null
  outbound: string
  mxPort: number
  dnsServers: string[]
  jwtSecret: string | null
  /** The one secret every node shares; the JWT/link secret and the DKIM master key derive from it (src/secrets.ts). */
  secret: string | null
  /** The DKIM master key itself (base64 of 32 bytes), e.g. the data dir's dkim.key of a single-node install. */
  dkimKey: string | null
  signupDisabled: boolean
  rateLimitPerMinute: number
  /** The public key's own budget per project (requests per minute); null: the same number as rateLimitPerMinute. */
  publicRateLimitPerMinute: number | null
  idempotencyTtlHours: number
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent'
  /** SQLite `synchronous` pragma: FULL (fsync every commit) or NORMAL (fsync at checkpoints; survives kill -9). */
  sqliteSynchronous: 'FULL' | 'NORMAL'
  /** Largest request body accepted, in bytes (the 40 MB whole-message limit of /v1/send plus envelope). */
  maxBodyBytes: number
  /** Default sending rate of a project's campaign mail, messages per second (null: no cap); a project may set its own. */
  sendRatePerSecond: number | null
  /** Days the rendered content of sent mail (email_contents) is kept; campaign mail is rendered from the campaign. */
  contentRetentionDays: number
  /** How long a stopping node waits for in-flight deliveries before it closes their connections. */
  shutdownGraceSeconds: number
  /** MB a thread's JS heap may grow between the heap keeper's collections (src/heap.ts); 0: no keeper. */
  heapGrowthMb: number
  /** Hosts that workflow WEBHOOK steps and customer webhooks may reach on refused addresses (src/net/address-guard.ts). */
  webhookAllowHosts: string[]
  /** MX hosts (names, addresses, CIDR ranges) direct delivery may reach on refused addresses (src/mail/outbound/guard.ts). */
  deliveryAllowHosts: string[]
  /** MAILCTL_SYSTEM_FROM: the sender of verification, password-reset and invitation mail (src/mail/system.ts); null: captured only. */
  systemFrom: string | null
  /** MAILCTL_MTA_STS_CA: extra CA certificates (a PEM file path or the PEM itself) trusted for MTA-STS policy hosts and enforced MX hosts. */
  mtaStsCa: string | null
  /** MAILCTL_TLS_REPORTS: count TLS results of direct delivery and send daily TLS reports (RFC 8460; src/mail/tlsrpt/). */
  tlsReports: boolean
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken: string | null
  /** A separate listener for GET /metrics (0: none); without a token, the only place metrics are served. */
  metricsPort: number
  metricsHost: string
  /** Largest image accepted by POST /uploads/image, in bytes (default 5 MB). */
  uploadMaxBytes: number
  /** Project security (src/modules/security): 7-day bounce and complaint rates (fractions) that warn and suspend, after minimumSent emails. */
  securityThresholds: SecurityThresholds
  /** MAILCTL_S3_URL: the S3-compatible bucket that keeps uploads instead of the data dir (parseS3Url); null: the data dir. */
  s3Url: string | null
  /** Payment-provider billing (src/modules/billing/provider.ts): on when MAILCTL_BILLING_SECRET_KEY is set. */
  billingProviderUrl: string
  billingSecretKey: string | null
  billingWebhookSecret: string | null
  billingPriceId: string | null
  /** OAuth sign-in (src/modules/auth/oauth.ts): a provider is on when its client id and secret are both set. */
  oauthGithubId: string | null
  oauthGithubSecret: string | null
  oauthGoogleId: string | null
  oauthGoogleSecret: string | null
  /** Base URL standing in for every GitHub endpoint (authorize, token, API), e.g. a fake provider in tests; null: GitHub's own. */
  oauthGithubUrl: string | null
  /** Base URL standing in for every Google endpoint (authorize, token, userinfo); null: Google's own. */
  oauthGoogleUrl: string | null
  /** Scheduled backups (src/ops/schedule.ts): the directory of the archives; null: none are taken. */
  backupDir: string | null
  /** How many scheduled archives are kept (the oldest beyond are deleted). */
  backupKeep: number
  /** Hours between scheduled backups. */
  backupIntervalHours: number
}

export interface SecurityThresholds { bounceWarning: number; bounceSuspend: number; complaintWarning: number; complaintSuspend: number; minimumSent: number }

/**
 * MAILCTL_SECURITY_THRESHOLDS: `bounceWarning=5,bounceSuspend=10,complaintWarning=0.1,complaintSuspend=0.3,minimumSent=100`
 * (rates in percent; keys left out keep these defaults).
 */
function securityThresholds(v: string | undefined): SecurityThresholds {
  const out: SecurityThresholds = { bounceWarning: 0.05, bounceSuspend: 0.1, complaintWarning: 0.001, complaintSuspend: 0.003, minimumSent: 100 }
  for (const part of (v ?? '').split(',').map((x) => x.trim()).filter(Boolean)) {
    const [k, val] = part.split('=').map((x) => x.trim())
    const n = Number(val)
    if (!(k in out) || !Number.isFinite(n) || n < 0 || (k !== 'minimumSent' && n > 100)) {
      throw new ConfigError(`MAILCTL_SECURITY_THRESHOLDS: "${part}" is not one of bounceWarning, bounceSuspend, complaintWarning, complaintSuspend (percent, 0-100) or minimumSent (emails)`)
    }
    out[k as keyof SecurityThresholds] = k === 'minimumSent' ? Math.trunc(n) : n / 100
  }
  return out
}

/** An http(s) base URL without its trailing slash, or null when unset. */
function baseUrl(name: string, v: string | undefined): string | null {
  if (!v) return null
  let u: URL
  try { u = new URL(v) } catch { throw new ConfigError(`${name} is not a URL: "${v}"`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(`${name} must be an http:// or https:// URL, got "${v}"`)
  return v.replace(/\/+$/, '')
}

/** The implicit-TLS submission port when MAILCTL_SMTP_SECURE_PORT is unset (RFC 8314 "submissions"). */
export const DEFAULT_SMTP_SECURE_PORT = 465

const KEYS: Record<string, keyof Config> = {
  MAILCTL_DATA_DIR: 'dataDir',
  DATABASE_URL: 'databaseUrl',
  REDIS_URL: 'redisUrl',
  MAILCTL_HTTP_PORT: 'httpPort',
  MAILCTL_HTTP_HOST: 'httpHost',
  MAILCTL_HTTP_REUSE_PORT: 'httpReusePort',
  MAILCTL_PUBLIC_URL: 'publicUrl',
  MAILCTL_HOSTNAME: 'hostname',
  MAILCTL_SMTP_INBOUND_PORT: 'smtpInboundPort',
  MAILCTL_SMTP_RELAY_PORT: 'smtpRelayPort',
  MAILCTL_SMTP_SECURE_PORT: 'smtpSecurePort',
  MAILCTL_SMTP_TLS_CERT: 'smtpTlsCert',
  MAILCTL_SMTP_TLS_KEY: 'smtpTlsKey',
  MAILCTL_OUTBOUND: 'outbound',
  MAILCTL_MX_PORT: 'mxPort',
  MAILCTL_DNS_SERVERS: 'dnsServers',
  MAILCTL_JWT_SECRET: 'jwtSecret',
  MAILCTL_SECRET: 'secret',
  MAILCTL_DKIM_KEY: 'dkimKey',
  MAILCTL_SIGNUP_DISABLED: 'signupDisabled',
  MAILCTL_RATE_LIMIT_PER_MINUTE: 'rateLimitPerMinute',
  MAILCTL_PUBLIC_RATE_LIMIT_PER_MINUTE: 'publicRateLimitPerMinute',
  MAILCTL_IDEMPOTENCY_TTL_HOURS: 'idempotencyTtlHours',
  MAILCTL_LOG_LEVEL: 'logLevel',
  MAILCTL_SQLITE_SYNCHRONOUS: 'sqliteSynchronous',
  MAILCTL_MAX_BODY_BYTES: 'maxBodyBytes',
  MAILCTL_SEND_RATE_PER_SECOND: 'sendRatePerSecond',
  MAILCTL_CONTENT_RETENTION_DAYS: 'contentRetentionDays',
  MAILCTL_SHUTDOWN_GRACE_SECONDS: 'shutdownGraceSeconds',
  MAILCTL_HEAP_GROWTH_MB: 'heapGrowthMb',
  MAILCTL_WEBHOOK_ALLOW_HOSTS: 'webhookAllowHosts',
  MAILCTL_DELIVERY_ALLOW_HOSTS: 'deliveryAllowHosts',
  MAILCTL_SYSTEM_FROM: 'systemFrom',
  MAILCTL_MTA_STS_CA: 'mtaStsCa',
  MAILCTL_TLS_REPORTS: 'tlsReports',
  MAILCTL_METRICS_TOKEN: 'metricsToken',
  MAILCTL_METRICS_PORT: 'metricsPort',
  MAILCTL_METRICS_HOST: 'metricsHost',
  MAILCTL_UPLOAD_MAX_BYTES: 'uploadMaxBytes',
  MAILCTL_SECURITY_THRESHOLDS: 'securityThresholds',
  MAILCTL_S3_URL: 's3Url',
  MAILCTL_BILLING_PROVIDER_URL: 'billingProviderUrl',
  MAILCTL_BILLING_SECRET_KEY: 'billingSecretKey',
  MAILCTL_BILLING_WEBHOOK_SECRET: 'billingWebhookSecret',
  MAILCTL_BILLING_PRICE_ID: 'billingPriceId',
  MAILCTL_OAUTH_GITHUB_ID: 'oauthGithubId',
  MAILCTL_OAUTH_GITHUB_SECRET: 'oauthGithubSecret',
  MAILCTL_OAUTH_GOOGLE_ID: 'oauthGoogleId',
  MAILCTL_OAUTH_GOOGLE_SECRET: 'oauthGoogleSecret',
  MAILCTL_OAUTH_GITHUB_URL: 'oauthGithubUrl',
  MAILCTL_OAUTH_GOOGLE_URL: 'oauthGoogleUrl',
  MAILCTL_BACKUP_DIR: 'backupDir',
  MAILCTL_BACKUP_KEEP: 'backupKeep',
  MAILCTL_BACKUP_INTERVAL_HOURS: 'backupIntervalHours',
}

export class ConfigError extends Error {}

/** The shortest MAILCTL_SECRET accepted: keys derive from it, so it must be hard to guess. */
export const MIN_SECRET_LENGTH = 32

function parseFile(path: string): Record<string, unknown> {
  const text = readFileSync(path, 'utf8')
  if (path.endsWith('.toml')) return Bun.TOML.parse(text) as Record<string, unknown>
  return JSON.parse(text) as Record<string, unknown>
}

function int(name: string, v: string, min: number, max: number): number {
  const n = Number(v)
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${v}"`)
  return n
}

function bool(name: string, v: string): boolean {
  if (/^(1|true|yes|on)$/i.test(v)) return true
  if (/^(0|false|no|off|)$/i.test(v)) return false
  throw new ConfigError(`${name} must be true or false, got "${v}"`)
}

/** MAILCTL_SYSTEM_FROM: one plain address (`noreply@example.com`), lower-cased; no name, no angle brackets. */
function systemFrom(value: string | undefined): string | null {
  const v = value?.trim().toLowerCase()
  if (!v) return null
  if (!/^[a-z0-9!#$%&'*+/=?^_`{|}~.-]+@[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(v)) throw new ConfigError(`MAILCTL_SYSTEM_FROM must be a plain email address on a verified domain (e.g. noreply@example.com), not "${value}"`)
  return v
}

/** A comma-separated allow-list (src/net/address-guard.ts parseAllowList), its entries checked. */
function allowList(name: string, value: string | undefined): string[] {
  const entries = (value ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  try {
    parseAllowList(entries)
  } catch (err) {
    throw new ConfigError(`${name}: ${err instanceof Error ? err.message : String(err)}`)
  }
  return entries
}

/**
 * Builds the configuration. `env` wins over the file; both use the variable names of README.md (Configuration).
 * `overrides` is for tests and the CLI (already typed values).
 */
export function loadConfig(opts: { env?: Record<string, string | undefined>; file?: string; overrides?: Partial<Config> } = {}): Config {
  const env = opts.env ?? process.env
  const raw: Record<string, string> = {}
  const file = opts.file ?? env.MAILCTL_CONFIG
  if (file) {
    for (const [k, v] of Object.entries(parseFile(file))) {
      if (v !== undefined && v !== null) raw[k] = Array.isArray(v) ? v.join(',') : String(v)
    }
  }
  for (const k of Object.keys(KEYS)) {
    const v = env[k]
    if (v !== undefined && v !== '') raw[k] = v
  }
  const dataDir = resolve(raw.MAILCTL_DATA_DIR ?? './data')
  const logLevel = (raw.MAILCTL_LOG_LEVEL ?? 'info').toLowerCase()
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel)) throw new ConfigError(`MAILCTL_LOG_LEVEL must be debug, info, warn, error or silent`)
  const sync = (raw.MAILCTL_SQLITE_SYNCHRONOUS ?? 'FULL').toUpperCase()
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new ConfigError('MAILCTL_SQLITE_SYNCHRONOUS must be FULL or NORMAL')
  const databaseUrl = raw.DATABASE_URL ?? `sqlite://${join(dataDir, 'mailctl.db')}`
  const outbound = raw.MAILCTL_OUTBOUND ?? 'direct'
  if (!/^(direct|capture|smtps?:\/\/.+)$/.test(outbound)) throw new ConfigError('MAILCTL_OUTBOUND must be direct, capture or smtp://user:pass@host:port')
  const publicUrl = (raw.MAILCTL_PUBLIC_URL ?? 'http://localhost:3000').replace(/\/+$/, '')
  try { new URL(publicUrl) } catch { throw new ConfigError(`MAILCTL_PUBLIC_URL is not a URL: "${publicUrl}"`) }
  const cfg: Config = {
    dataDir,
    databaseUrl,
    redisUrl: raw.REDIS_URL ?? null,
    httpPort: int('MAILCTL_HTTP_PORT', raw.MAILCTL_HTTP_PORT ?? '3000', 0, 65535),
    httpHost: raw.MAILCTL_HTTP_HOST ?? '0.0.0.0',
    httpReusePort: bool('MAILCTL_HTTP_REUSE_PORT', raw.MAILCTL_HTTP_REUSE_PORT ?? 'false'),
    publicUrl,
    hostname: raw.MAILCTL_HOSTNAME ?? hostname(),
    smtpInboundPort: int('MAILCTL_SMTP_INBOUND_PORT', raw.MAILCTL_SMTP_INBOUND_PORT ?? '2525', 0, 65535),
    smtpRelayPort: int('MAILCTL_SMTP_RELAY_PORT', raw.MAILCTL_SMTP_RELAY_PORT ?? '2587', 0, 65535),
    smtpSecurePort: int('MAILCTL_SMTP_SECURE_PORT', raw.MAILCTL_SMTP_SECURE_PORT ?? String(DEFAULT_SMTP_SECURE_PORT), 0, 65535),
    smtpTlsCert: raw.MAILCTL_SMTP_TLS_CERT ?? null,
    smtpTlsKey: raw.MAILCTL_SMTP_TLS_KEY ?? null,
    outbound,
    mxPort: int('MAILCTL_MX_PORT', raw.MAILCTL_MX_PORT ?? '25', 1, 65535),
    dnsServers: (raw.MAILCTL_DNS_SERVERS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    jwtSecret: raw.MAILCTL_JWT_SECRET ?? null,
    secret: raw.MAILCTL_SECRET ?? null,
    dkimKey: raw.MAILCTL_DKIM_KEY?.trim() ?? null,
    signupDisabled: bool('MAILCTL_SIGNUP_DISABLED', raw.MAILCTL_SIGNUP_DISABLED ?? 'false'),
    rateLimitPerMinute: int('MAILCTL_RATE_LIMIT_PER_MINUTE', raw.MAILCTL_RATE_LIMIT_PER_MINUTE ?? '1000', 1, 100_000_000),
    publicRateLimitPerMinute: raw.MAILCTL_PUBLIC_RATE_LIMIT_PER_MINUTE ? int('MAILCTL_PUBLIC_RATE_LIMIT_PER_MINUTE', raw.MAILCTL_PUBLIC_RATE_LIMIT_PER_MINUTE, 1, 100_000_000) : null,
    idempotencyTtlHours: int('MAILCTL_IDEMPOTENCY_TTL_HOURS', raw.MAILCTL_IDEMPOTENCY_TTL_HOURS ?? '24', 1, 24 * 365),
    logLevel: logLevel as Config['logLevel'],
    sqliteSynchronous: sync,
    maxBodyBytes: int('MAILCTL_MAX_BODY_BYTES', raw.MAILCTL_MAX_BODY_BYTES ?? String(60 * 1024 * 1024), 1024, 1024 * 1024 * 1024),
    sendRatePerSecond: raw.MAILCTL_SEND_RATE_PER_SECOND ? int('MAILCTL_SEND_RATE_PER_SECOND', raw.MAILCTL_SEND_RATE_PER_SECOND, 1, 1_000_000) : null,
    contentRetentionDays: int('MAILCTL_CONTENT_RETENTION_DAYS', raw.MAILCTL_CONTENT_RETENTION_DAYS ?? '30', 1, 36_500),
    shutdownGraceSeconds: int('MAILCTL_SHUTDOWN_GRACE_SECONDS', raw.MAILCTL_SHUTDOWN_GRACE_SECONDS ?? '10', 0, 3600),
    heapGrowthMb: int('MAILCTL_HEAP_GROWTH_MB', raw.MAILCTL_HEAP_GROWTH_MB ?? '4', 0, 4096),
    webhookAllowHosts: allowList('MAILCTL_WEBHOOK_ALLOW_HOSTS', raw.MAILCTL_WEBHOOK_ALLOW_HOSTS),
    deliveryAllowHosts: allowList('MAILCTL_DELIVERY_ALLOW_HOSTS', raw.MAILCTL_DELIVERY_ALLOW_HOSTS),
    systemFrom: systemFrom(raw.MAILCTL_SYSTEM_FROM),
    mtaStsCa: raw.MAILCTL_MTA_STS_CA?.trim() || null,
    tlsReports: bool('MAILCTL_TLS_REPORTS', raw.MAILCTL_TLS_REPORTS ?? 'true'),
    metricsToken: raw.MAILCTL_METRICS_TOKEN || null,
    metricsPort: int('MAILCTL_METRICS_PORT', raw.MAILCTL_METRICS_PORT ?? '0', 0, 65535),
    metricsHost: raw.MAILCTL_METRICS_HOST ?? '127.0.0.1',
    uploadMaxBytes: int('MAILCTL_UPLOAD_MAX_BYTES', raw.MAILCTL_UPLOAD_MAX_BYTES ?? String(5 * 1024 * 1024), 1024, 100 * 1024 * 1024),
    securityThresholds: securityThresholds(raw.MAILCTL_SECURITY_THRESHOLDS),
    s3Url: raw.MAILCTL_S3_URL ?? null,
    billingProviderUrl: (raw.MAILCTL_BILLING_PROVIDER_URL ?? 'https://api.stripe.com').replace(/\/+$/, ''),
    billingSecretKey: raw.MAILCTL_BILLING_SECRET_KEY ?? null,
    billingWebhookSecret: raw.MAILCTL_BILLING_WEBHOOK_SECRET ?? null,
    billingPriceId: raw.MAILCTL_BILLING_PRICE_ID ?? null,
    oauthGithubId: raw.MAILCTL_OAUTH_GITHUB_ID || null,
    oauthGithubSecret: raw.MAILCTL_OAUTH_GITHUB_SECRET || null,
    oauthGoogleId: raw.MAILCTL_OAUTH_GOOGLE_ID || null,
    oauthGoogleSecret: raw.MAILCTL_OAUTH_GOOGLE_SECRET || null,
    oauthGithubUrl: baseUrl('MAILCTL_OAUTH_GITHUB_URL', raw.MAILCTL_OAUTH_GITHUB_URL),
    oauthGoogleUrl: baseUrl('MAILCTL_OAUTH_GOOGLE_URL', raw.MAILCTL_OAUTH_GOOGLE_URL),
    backupDir: raw.MAILCTL_BACKUP_DIR ? resolve(raw.MAILCTL_BACKUP_DIR) : null,
    backupKeep: int('MAILCTL_BACKUP_KEEP', raw.MAILCTL_BACKUP_KEEP ?? '7', 1, 10_000),
    backupIntervalHours: int('MAILCTL_BACKUP_INTERVAL_HOURS', raw.MAILCTL_BACKUP_INTERVAL_HOURS ?? '24', 1, 24 * 365),
  }
  const merged = { ...cfg, ...opts.overrides }
  if (merged.secret !== null && merged.secret.length < MIN_SECRET_LENGTH) throw new ConfigError(`MAILCTL_SECRET must be at least ${MIN_SECRET_LENGTH} characters (e.g. the output of \`openssl rand -base64 32\`)`)
  if (merged.dkimKey !== null && !/^[A-Za-z0-9+/]{43}=$/.test(merged.dkimKey)) throw new ConfigError('MAILCTL_DKIM_KEY must be the base64 of 32 bytes (the content of a data dir\'s dkim.key)')
  const problem = databaseUrlProblem(merged.databaseUrl, { dataDir: merged.dataDir })
  if (problem) throw new ConfigError(problem)
  if (merged.s3Url !== null) parseS3Url(merged.s3Url)
  billingProblem(merged)
  return merged
}

/** Where MAILCTL_S3_URL points: `s3://key:secret@host[:port]/bucket[/prefix][?region=R&tls=false]`. */
export interface S3Location { accessKeyId: string; secretAccessKey: string; endpoint: string; bucket: string; prefix: string; region: string }

/**
 * Parses MAILCTL_S3_URL. The endpoint is https://host[:port] unless `tls=false` asks for http (a MinIO on the
 * same network, tests); the key and secret are URL-encoded (`/` in a secret is `%2F`); a path after the
 * bucket is a key prefix; `region` defaults to `auto`. Throws a ConfigError naming the setting.
 */
export function parseS3Url(url: string): S3Location {
  const bad = (why: string) => new ConfigError(`MAILCTL_S3_URL "${redactUrl(url)}": ${why} (expected s3://key:secret@host/bucket, optionally ?region=R&tls=false)`)
  let u: URL
  try { u = new URL(url) } catch { throw bad('not a URL') }
  if (u.protocol !== 's3:') throw bad('the scheme must be s3://')
  if (!u.username || !u.password) throw bad('the access key and secret are missing')
  if (!u.hostname) throw bad('the host is missing')
  const [bucket, ...rest] = u.pathname.replace(/^\/+/, '').split('/').filter(Boolean)
  if (!bucket) throw bad('the bucket is missing')
  const tls = u.searchParams.get('tls') ?? 'true'
  if (!/^(true|false)$/.test(tls)) throw bad('tls must be true or false')
  let accessKeyId: string
  let secretAccessKey: string
  try { accessKeyId = decodeURIComponent(u.username); secretAccessKey = decodeURIComponent(u.password) } catch { throw bad('the key or secret is not URL-encoded') }
  return {
    accessKeyId, secretAccessKey, bucket,
    endpoint: `${tls === 'false' ? 'http' : 'https'}://${u.host}`,
    prefix: rest.length ? `${rest.join('/')}/` : '',
    region: u.searchParams.get('region') || 'auto',
  }
}

/** Payment-provider billing is all or nothing: with a secret key, the webhook secret and the price are required. */
function billingProblem(c: Config): void {
  try { new URL(c.billingProviderUrl) } catch { throw new ConfigError(`MAILCTL_BILLING_PROVIDER_URL is not a URL: "${c.billingProviderUrl}"`) }
  if (c.billingSecretKey === null) {
    if (c.billingWebhookSecret !== null || c.billingPriceId !== null) throw new ConfigError('MAILCTL_BILLING_WEBHOOK_SECRET and MAILCTL_BILLING_PRICE_ID need MAILCTL_BILLING_SECRET_KEY (billing is off without it)')
    return
  }
  for (const [name, v] of [['MAILCTL_BILLING_WEBHOOK_SECRET', c.billingWebhookSecret], ['MAILCTL_BILLING_PRICE_ID', c.billingPriceId]] as const) {
    if (!v) throw new ConfigError(`${name} is required when MAILCTL_BILLING_SECRET_KEY is set (payment-provider billing)`)
  }
}

/**
 * Whether a host name is fully qualified, as MAILCTL_HOSTNAME must be (it is the EHLO name and the MX and
 * SPF target printed for each sending domain): at least two labels, not a local-only name, not an address.
 */
export function isFullyQualified(name: string): boolean {
  const n = name.replace(/\.$/, '').toLowerCase()
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/.test(n)) return false
  if (/\.(local|localdomain|localhost|internal|lan|home)$/.test(n)) return false
  return !/^\d+$/.test(n.slice(n.lastIndexOf('.') + 1))
}

/** A URL with its password replaced by `***`, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/i, '$1:***@').replace(/([?&]password=)[^&#]*/gi, '$1***')
}

/** The file path of a `sqlite:` URL (`sqlite:///abs/x.db`, `sqlite://./rel/x.db`, `sqlite:x.db`). */
export function sqliteFile(url: string): string {
  return url.replace(/^sqlite:(\/\/)?/, '')
}

/**
 * What is wrong with a DATABASE_URL, as a message naming the setting, or null when it can be used. Checks
 * the shape (scheme, a SQLite file path, a PostgreSQL database name). With `dataDir`, a SQLite file's
 * directory must also exist already, unless it is the data dir or lies inside it (mailctl creates those):
 * a mistyped path is refused instead of being created.
 */
export function databaseUrlProblem(url: string, opts: { dataDir?: string } = {}): string | null {
  const shown = redactUrl(url)
  if (url.startsWith('sqlite:')) {
    const file = sqliteFile(url)
    if (!file) return `DATABASE_URL "${shown}" names no database file: use sqlite:///absolute/path/mailctl.db, or leave DATABASE_URL unset for $MAILCTL_DATA_DIR/mailctl.db`
    if (opts.dataDir === undefined) return null
    if (file === ':memory:' || file.startsWith('file::memory:')) return `DATABASE_URL "${shown}": an in-memory SQLite database is not supported (the server reads it through a second connection, which would see an empty database); name a file`
    if (file.endsWith('/')) return `DATABASE_URL "${shown}" names a directory; name the database file inside it, such as ${file}mailctl.db`
    const path = resolve(file)
    if (existsSync(path) && statSync(path).isDirectory()) return `DATABASE_URL "${shown}" names a directory; name the database file inside it, such as ${join(path, 'mailctl.db')}`
    const parent = dirname(path)
    if (existsSync(parent)) {
      return statSync(parent).isDirectory() ? null : `DATABASE_URL "${shown}": ${parent} is not a directory`
    }
    const dataDir = resolve(opts.dataDir)
    const inside = relative(dataDir, parent)
    if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) return null
    return `DATABASE_URL "${shown}": the directory ${parent} does not exist; create it first, or leave DATABASE_URL unset to keep the database in MAILCTL_DATA_DIR (${dataDir}), which mailctl creates`
  }
  if (/^postgres(ql)?:/.test(url)) {
    let u: URL
    try { u = new URL(url) } catch { return `DATABASE_URL "${shown}" is not a valid URL (postgres://user:password@host:5432/database)` }
    let name: string
    try { name = decodeURIComponent(u.pathname.replace(/^\//, '')) } catch { name = '' }
    if (!name) return `DATABASE_URL "${shown}" names no database: add one, as in postgres://user@host:5432/mailctl (without it PostgreSQL would use the user's default database, often the shared "postgres")`
    return null
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]
  return `DATABASE_URL must start with sqlite:// or postgres://${scheme ? `, got "${scheme}:"` : url ? '' : ' (it is empty)'}`
}
