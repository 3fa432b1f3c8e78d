import { afterAll, describe, expect, test } from 'bun:test'
import { createPublicKey } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { runDoctor } from '../cli/commands/doctor'
import { ConfigError, loadConfig, type Config } from '../src/config'
import { ctxFor, type Deps } from '../src/deps'
import { closeDeps, createDeps } from '../src/main'
import { createDomain, signingKeyFor } from '../src/modules/domains/service'
import { createProject } from '../src/modules/projects/service'
import { deriveKey, dkimKey, fingerprint, jwtSecret, LABELS } from '../src/secrets'
import { freshPgDatabase, pgReachableSync, type StoreKind } from './helpers/env'

const SECRET_A = 'the-secret-of-the-cluster-aaaaaaaaaa'
const SECRET_B = 'another-secret-entirely-bbbbbbbbbbbb'

const dirs: string[] = []
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'mailctl-secrets-'))
  dirs.push(d)
  return d
}

/** A node's configuration: its own data dir (nodes share nothing but the database and the settings). */
function nodeConfig(databaseUrl: string, overrides: Partial<Config> = {}): Config {
  return loadConfig({
    env: {},
    overrides: { dataDir: tempDir(), databaseUrl, logLevel: 'silent', hostname: 'mx.secrets.test', sqliteSynchronous: 'NORMAL', httpPort: 0, smtpInboundPort: 0, smtpRelayPort: 0, ...overrides },
  })
}

/** A fresh database of the given kind, dropped when the file's tests end. */
async function freshDatabase(kind: StoreKind): Promise<string> {
  if (kind === 'sqlite') return `sqlite://${join(tempDir(), 'shared.db')}`
  const db = await freshPgDatabase()
  drops.push(db.drop)
  return db.url
}
const drops: Array<() => Promise<void>> = []
afterAll(async () => { for (const d of drops) await d() }, 60_000)

async function refusal(config: Config): Promise<string> {
  const err = await createDeps(config).then(async (d) => { await closeDeps(d); return null }, (e: unknown) => e)
  expect(err).toBeInstanceOf(ConfigError)
  return (err as ConfigError).message
}

test('derivation: stable, 32 bytes, one key per label, one per secret', () => {
  const jwt = deriveKey(SECRET_A, LABELS.jwt)
  expect(jwt).toHaveLength(32)
  expect(deriveKey(SECRET_A, LABELS.jwt)).toEqual(jwt)
  expect(deriveKey(SECRET_A, LABELS.dkim)).not.toEqual(jwt)
  expect(deriveKey(SECRET_B, LABELS.jwt)).not.toEqual(jwt)
  // Pinned: a change of algorithm or label would make every stored DKIM key undecryptable.
  // (Values of HKDF-SHA256, empty salt, computed independently with node:crypto.)
  expect(deriveKey('x'.repeat(32), LABELS.dkim).toString('hex')).toBe('1cde174881a57b2088aa6d9cb8e6b0f13a676a36bdb4e52e87d50a3db84b7091')
  expect(deriveKey('x'.repeat(32), LABELS.jwt).toString('hex')).toBe('b08b335f26fe3621ba40b0b3b0967f043cc4931f6d4ad6868c4e103ad310f23d')
  const config = nodeConfig('sqlite:///tmp/unused.db', { secret: SECRET_A })
  expect(jwtSecret(config)).toBe(jwt.toString('hex'))
  expect(dkimKey(config)).toEqual(deriveKey(SECRET_A, LABELS.dkim))
  // Explicit settings win for their own key.
  const explicit = nodeConfig('sqlite:///tmp/unused.db', { secret: SECRET_A, jwtSecret: 'j'.repeat(40), dkimKey: Buffer.alloc(32, 7).toString('base64') })
  expect(jwtSecret(explicit)).toBe('j'.repeat(40))
  expect(dkimKey(explicit)).toEqual(Buffer.alloc(32, 7))
  expect(fingerprint(jwt)).toMatch(/^[0-9a-f]{64}$/)
  expect(fingerprint(jwt)).not.toBe(fingerprint(deriveKey(SECRET_A, LABELS.dkim)))
})

test('settings: MAILCTL_SECRET too short and a MAILCTL_DKIM_KEY that is not 32 bytes are refused', () => {
  expect(() => loadConfig({ env: { MAILCTL_SECRET: 'short' } })).toThrow(/MAILCTL_SECRET must be at least 32 characters/)
  expect(() => loadConfig({ env: { MAILCTL_DKIM_KEY: Buffer.alloc(16).toString('base64') } })).toThrow(/MAILCTL_DKIM_KEY must be the base64 of 32 bytes/)
  expect(loadConfig({ env: { MAILCTL_SECRET: SECRET_A, MAILCTL_DKIM_KEY: Buffer.alloc(32, 1).toString('base64') } })).toMatchObject({ secret: SECRET_A, dkimKey: Buffer.alloc(32, 1).toString('base64') })
})

test('SQLite without MAILCTL_SECRET: keys generated into the data dir, as before, and kept across starts', async () => {
  const config = nodeConfig(await freshDatabase('sqlite'))
  const first = await createDeps(config)
  await closeDeps(first)
  const file = readFileSync(join(config.dataDir, 'secret.key'), 'utf8').trim()
  expect(first.secret).toBe(file)
  expect(existsSync(join(config.dataDir, 'dkim.key'))).toBe(true)
  const again = await createDeps({ ...config })
  await closeDeps(again)
  expect(again.secret).toBe(file)
})

test('the data dir files given as MAILCTL_DKIM_KEY and MAILCTL_JWT_SECRET (the README step to leave SQLite) keep the keys', async () => {
  const url = await freshDatabase('sqlite')
  const single = await createDeps(nodeConfig(url))
  const p = await createProject(single.store, { name: 'moving' })
  const made = await createDomain(ctxFor(single, p.id, { kind: 'cli' }), { projectId: p.id, domain: 'moving.example' })
  const { domains } = single.store.t
  await single.store.tx((db) => db.update(domains).set({ verified: true }).where(eq(domains.id, made.id)))
  await closeDeps(single)
  const dir = single.config.dataDir
  // `MAILCTL_DKIM_KEY=$(cat dkim.key) MAILCTL_JWT_SECRET=$(cat secret.key)`, on a node with another data dir.
  const moved = await createDeps(loadConfig({
    env: { MAILCTL_DKIM_KEY: readFileSync(join(dir, 'dkim.key'), 'utf8'), MAILCTL_JWT_SECRET: readFileSync(join(dir, 'secret.key'), 'utf8').trim() },
    overrides: { dataDir: tempDir(), databaseUrl: url, logLevel: 'silent', hostname: 'mx.secrets.test' },
  }))
  try {
    expect(moved.secret).toBe(single.secret)
    const signing = await signingKeyFor(ctxFor(moved, p.id, { kind: 'cli' }), 'moving.example')
    expect(signing?.domainId).toBe(made.id)
  } finally {
    await closeDeps(moved)
  }
})

test('PostgreSQL without MAILCTL_SECRET (or the explicit keys) is refused, naming MAILCTL_SECRET', async () => {
  if (!pgReachableSync()) return
  const url = await freshDatabase('pg')
  expect(await refusal(nodeConfig(url))).toContain('set MAILCTL_SECRET')
  expect(await refusal(nodeConfig(url, { jwtSecret: 'j'.repeat(40) }))).toContain('set MAILCTL_SECRET (e.g. the output of `openssl rand -base64 32`), or MAILCTL_DKIM_KEY')
  // Both explicit keys are enough.
  const deps = await createDeps(nodeConfig(url, { jwtSecret: 'j'.repeat(40), dkimKey: Buffer.alloc(32, 3).toString('base64') }))
  await closeDeps(deps)
})

for (const kind of ['sqlite', 'pg'] as const) {
  const run = kind === 'sqlite' || pgReachableSync()
  ;(run ? describe : describe.skip)(`two nodes on one database [${kind}]`, () => {
    test('the same MAILCTL_SECRET: a DKIM key created by one node is decrypted by the other', async () => {
      const url = await freshDatabase(kind)
      const a = await createDeps(nodeConfig(url, { secret: SECRET_A }))
      const b = await createDeps(nodeConfig(url, { secret: SECRET_A }))
      try {
        expect(b.secret).toBe(a.secret)
        const p = await createProject(a.store, { name: 'shared' })
        const made = await createDomain(ctxFor(a, p.id, { kind: 'cli' }), { projectId: p.id, domain: 'shared.example' })
        const { domains } = a.store.t
        await a.store.tx((db) => db.update(domains).set({ verified: true }).where(eq(domains.id, made.id)))
        // Node B decrypts first (no key of this domain is cached in the process yet).
        const signing = await signingKeyFor(ctxFor(b, p.id, { kind: 'cli' }), 'shared.example')
        const [row] = await b.store.db.select().from(domains).where(eq(domains.id, made.id))
        const pub = createPublicKey(signing?.privateKeyPem ?? '').export({ type: 'spki', format: 'der' }).toString('base64')
        expect(pub).toBe(row.dkimPublicKey)
      } finally {
        await closeDeps(a)
        await closeDeps(b)
      }
    })

    test('another MAILCTL_SECRET is refused at start with a message; doctor reports it', async () => {
      const url = await freshDatabase(kind)
      const first: Deps = await createDeps(nodeConfig(url, { secret: SECRET_A }))
      await closeDeps(first)
      const other = nodeConfig(url, { secret: SECRET_B })
      expect(await refusal(other)).toBe(
        'the JWT/link secret (from MAILCTL_SECRET) and the DKIM master key (from MAILCTL_SECRET) differ from the one this database was first served with: ' +
        'every node must use the same MAILCTL_SECRET (or the same MAILCTL_JWT_SECRET and MAILCTL_DKIM_KEY); ' +
        'with another key the stored DKIM keys cannot be decrypted and signed links and sessions are refused',
      )
      // Only the DKIM key differs: the message names that one and where it comes from.
      const half = nodeConfig(url, { secret: SECRET_A, dkimKey: Buffer.alloc(32, 9).toString('base64') })
      expect(await refusal(half)).toStartWith('the DKIM master key (from MAILCTL_DKIM_KEY) differs from the one this database was first served with')

      const bad = (await runDoctor(other)).checks.find((c) => c.name === 'keys')
      expect(bad).toMatchObject({ status: 'fail' })
      expect(bad?.detail).toContain('differ from the one this database was first served with')
      const good = (await runDoctor(nodeConfig(url, { secret: SECRET_A }))).checks.find((c) => c.name === 'keys')
      expect(good).toEqual({ name: 'keys', status: 'ok', detail: 'from MAILCTL_SECRET; they match those the database was first served with' })
      // The same secret still starts.
      const again = await createDeps(nodeConfig(url, { secret: SECRET_A }))
      await closeDeps(again)
    })
  })
}

test('doctor: on PostgreSQL without MAILCTL_SECRET the keys check fails naming it', async () => {
  if (!pgReachableSync()) return
  const url = await freshDatabase('pg')
  const deps = await createDeps(nodeConfig(url, { secret: SECRET_A }))
  await closeDeps(deps)
  const check = (await runDoctor(nodeConfig(url))).checks.find((c) => c.name === 'keys')
  expect(check?.status).toBe('fail')
  expect(check?.detail).toContain('set MAILCTL_SECRET')
})
