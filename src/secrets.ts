import { createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, type Config } from './config'
import type { Dialect, Store } from './db/client'
import { recordFingerprints } from './db/secret-check'
import { masterKey } from './modules/domains/keys'

/**
 * The process's keys: the JWT/link signing secret and the DKIM master key (which encrypts the DKIM private
 * keys stored in the database). For each, in order:
 * 1. its explicit setting (MAILCTL_JWT_SECRET, MAILCTL_DKIM_KEY);
 * 2. derived from MAILCTL_SECRET with HKDF-SHA256, one info label per key;
 * 3. SQLite only: a file generated into the data dir on first use (secret.key, dkim.key).
 * On PostgreSQL the third is refused: several nodes share the database, so they must share the keys, and
 * those can only come from the configuration.
 */

export const LABELS = { jwt: 'mailctl jwt v1', dkim: 'mailctl dkim master key v1' } as const
export type KeyName = keyof typeof LABELS

/** A 32-byte key derived from MAILCTL_SECRET for one purpose (HKDF-SHA256, empty salt, the label as info). */
export function deriveKey(secret: string, label: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), Buffer.from(label, 'utf8'), 32))
}

/** The setting a key comes from, for messages. */
export function keySource(config: Config, name: KeyName): string {
  const explicit = name === 'jwt' ? config.jwtSecret : config.dkimKey
  if (explicit) return name === 'jwt' ? 'MAILCTL_JWT_SECRET' : 'MAILCTL_DKIM_KEY'
  if (config.secret) return 'MAILCTL_SECRET'
  return `${join(config.dataDir, name === 'jwt' ? 'secret.key' : 'dkim.key')}`
}

/** Whether a key would come from a data-dir file (neither its setting nor MAILCTL_SECRET is set). */
function fromFile(config: Config, name: KeyName): boolean {
  return !(name === 'jwt' ? config.jwtSecret : config.dkimKey) && !config.secret
}

/**
 * On PostgreSQL every key must come from the configuration: a ConfigError naming MAILCTL_SECRET when one
 * would be generated into this node's data dir.
 */
export function requireConfiguredKeys(config: Config, dialect: Dialect): void {
  // dialect: every PostgreSQL node must share its keys through settings; SQLite keeps them in its data dir
  if (dialect !== 'pg') return
  const missing = (['jwt', 'dkim'] as const).filter((n) => fromFile(config, n))
  if (!missing.length) return
  throw new ConfigError(
    'on PostgreSQL the keys must come from the configuration, the same on every node: set MAILCTL_SECRET ' +
    '(e.g. the output of `openssl rand -base64 32`)' +
    (missing.length === 1 ? `, or ${missing[0] === 'jwt' ? 'MAILCTL_JWT_SECRET' : 'MAILCTL_DKIM_KEY'}` : ', or both MAILCTL_JWT_SECRET and MAILCTL_DKIM_KEY'),
  )
}

/** The JWT/link signing secret (see the order above; the data-dir file is created on first use). */
export function jwtSecret(config: Config): string {
  if (config.jwtSecret) return config.jwtSecret
  if (config.secret) return deriveKey(config.secret, LABELS.jwt).toString('hex')
  mkdirSync(config.dataDir, { recursive: true })
  const file = join(config.dataDir, 'secret.key')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const secret = randomBytes(32).toString('hex')
  try {
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' })
    return secret
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return readFileSync(file, 'utf8').trim()
  }
}

// A cache, not state: the key read or derived from the settings once (the data-dir file is made at first use).
const dkimKeys = new WeakMap<Config, Buffer>()

/** The DKIM master key (see the order above; the data-dir file is created on first use). */
export function dkimKey(config: Config): Buffer {
  const cached = dkimKeys.get(config)
  if (cached) return cached
  let key: Buffer
  if (config.dkimKey) key = Buffer.from(config.dkimKey, 'base64')
  else if (config.secret) key = deriveKey(config.secret, LABELS.dkim)
  else key = masterKey(config.dataDir)
  dkimKeys.set(config, key)
  return key
}

/**
 * What the database keeps to tell whether a node holds the same key as the first: HMAC-SHA256 keyed with
 * the key over a fixed text (hex). It reveals nothing of the key.
 */
export function fingerprint(key: Buffer | string): string {
  return createHmac('sha256', typeof key === 'string' ? Buffer.from(key, 'utf8') : key).update('mailctl key check').digest('hex')
}

/** The fingerprints of this configuration's keys (creating the data-dir files on SQLite when absent). */
export function keyFingerprints(config: Config): Record<KeyName, string> {
  return { jwt: fingerprint(jwtSecret(config)), dkim: fingerprint(dkimKey(config)) }
}

/**
 * The fingerprints of the keys this configuration has now, creating nothing (`mailctl doctor`): a key
 * that would be generated into the data dir on first use is left out.
 */
export function presentKeyFingerprints(config: Config): Partial<Record<KeyName, string>> {
  const out: Partial<Record<KeyName, string>> = {}
  if (!fromFile(config, 'jwt') || existsSync(join(config.dataDir, 'secret.key'))) out.jwt = fingerprint(jwtSecret(config))
  if (!fromFile(config, 'dkim') || existsSync(join(config.dataDir, 'dkim.key'))) out.dkim = fingerprint(dkimKey(config))
  return out
}

/** Why the keys of this configuration are not those the database was first served with; null when they are. */
export function mismatchMessage(config: Config, ours: Partial<Record<KeyName, string>>, recorded: Partial<Record<KeyName, string>>): string | null {
  const differ = (['jwt', 'dkim'] as const).filter((n) => recorded[n] !== undefined && ours[n] !== undefined && recorded[n] !== ours[n])
  if (!differ.length) return null
  const what = differ.map((n) => `the ${n === 'jwt' ? 'JWT/link secret' : 'DKIM master key'} (from ${keySource(config, n)})`).join(' and ')
  return `${what} ${differ.length > 1 ? 'differ' : 'differs'} from the one this database was first served with: ` +
    'every node must use the same MAILCTL_SECRET (or the same MAILCTL_JWT_SECRET and MAILCTL_DKIM_KEY); ' +
    'with another key the stored DKIM keys cannot be decrypted and signed links and sessions are refused'
}

/**
 * At start (createDeps): records this configuration's key fingerprints the first time, and refuses
 * (ConfigError) keys that differ from those recorded.
 */
export async function checkKeys(store: Store, config: Config, now = new Date()): Promise<void> {
  const ours = keyFingerprints(config)
  const recorded = await recordFingerprints(store, ours, now)
  const problem = mismatchMessage(config, ours, recorded)
  if (problem) throw new ConfigError(problem)
}
