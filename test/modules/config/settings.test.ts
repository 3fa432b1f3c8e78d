import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, databaseUrlProblem, DEFAULT_SMTP_SECURE_PORT, isFullyQualified, loadConfig, redactUrl } from '../../../src/config'
import { checkReachable, describeStoreError, openStore, StoreMissingError, StoreUnreachableError } from '../../../src/db/client'
import { PG_ADMIN_URL, pgReachableSync } from '../../helpers/env'

/** src/config.ts: the settings of README.md (Configuration), validated once; and the store checks behind them. */

const dir = mkdtempSync(join(tmpdir(), 'mailctl-settings-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const load = (env: Record<string, string>) => loadConfig({ env: { MAILCTL_DATA_DIR: join(dir, 'data'), ...env } })
const refusal = (env: Record<string, string>): string => {
  try {
    load(env)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error(`accepted ${JSON.stringify(env)}`)
}

describe('DATABASE_URL', () => {
  test('the default is the data dir\'s mailctl.db, whose directory need not exist yet', () => {
    const c = load({})
    expect(c.databaseUrl).toBe(`sqlite://${join(dir, 'data', 'mailctl.db')}`)
    expect(existsSync(join(dir, 'data'))).toBe(false)
  })

  test('postgres:// without a database name is refused, naming DATABASE_URL', () => {
    for (const url of ['postgres://postgres@127.0.0.1:5432', 'postgres://postgres@127.0.0.1:5432/', 'postgresql://u:pw@db.example']) {
      const msg = refusal({ DATABASE_URL: url })
      expect(msg).toStartWith('DATABASE_URL')
      expect(msg).toContain('names no database')
    }
    expect(load({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/mailctl' }).databaseUrl).toBe('postgres://postgres@127.0.0.1:5432/mailctl')
  })

  test('a SQLite file in a directory that does not exist is refused (nothing is created), unless it is inside the data dir', () => {
    const msg = refusal({ DATABASE_URL: 'sqlite:///nonexistent/dir/x.db' })
    expect(msg).toStartWith('DATABASE_URL')
    expect(msg).toContain('/nonexistent/dir does not exist')
    expect(existsSync('/nonexistent')).toBe(false)
    // inside the configured data dir: mailctl creates the data dir and what is below it
    expect(load({ DATABASE_URL: `sqlite://${join(dir, 'data', 'db', 'x.db')}` }).databaseUrl).toBe(`sqlite://${join(dir, 'data', 'db', 'x.db')}`)
    // an existing directory anywhere is fine
    mkdirSync(join(dir, 'elsewhere'))
    expect(load({ DATABASE_URL: `sqlite://${join(dir, 'elsewhere', 'x.db')}` }).databaseUrl).toContain('elsewhere')
  })

  test('sqlite:// with no path, a directory or an in-memory database is refused', () => {
    expect(refusal({ DATABASE_URL: 'sqlite://' })).toContain('names no database file')
    expect(refusal({ DATABASE_URL: 'sqlite:' })).toContain('names no database file')
    expect(refusal({ DATABASE_URL: `sqlite://${dir}` })).toContain('names a directory')
    expect(refusal({ DATABASE_URL: 'sqlite://:memory:' })).toContain('in-memory')
  })

  test('other schemes are refused, naming DATABASE_URL, without echoing a password', () => {
    const msg = refusal({ DATABASE_URL: 'mysql://root:hunter2@db/mailctl' })
    expect(msg).toBe('DATABASE_URL must start with sqlite:// or postgres://, got "mysql:"')
    expect(refusal({ DATABASE_URL: '/var/lib/mailctl.db' })).toStartWith('DATABASE_URL must start with')
  })

  test('the same check applies to a value given as an override (tests, the CLI)', () => {
    expect(() => loadConfig({ env: {}, overrides: { databaseUrl: 'postgres://h:5432' } })).toThrow(ConfigError)
  })

  test('databaseUrlProblem without a data dir checks the shape only', () => {
    expect(databaseUrlProblem('sqlite:///nonexistent/dir/x.db')).toBeNull()
    expect(databaseUrlProblem('sqlite://')).toContain('DATABASE_URL')
    expect(databaseUrlProblem('postgres://a:b@h:1')).toContain('names no database')
  })

  test('redactUrl hides the password only', () => {
    expect(redactUrl('postgres://u:secret@h:5432/db')).toBe('postgres://u:***@h:5432/db')
    expect(redactUrl('postgres://u@h/db?sslmode=require&password=s3cret&x=1')).toBe('postgres://u@h/db?sslmode=require&password=***&x=1')
    expect(redactUrl('postgres://u@h/db?PASSWORD=s3cret')).toBe('postgres://u@h/db?PASSWORD=***')
    expect(redactUrl('redis://:secret@h:6379')).toBe('redis://:***@h:6379')
    expect(redactUrl('postgres://u@h/db')).toBe('postgres://u@h/db')
  })
})

describe('openStore', () => {
  test('refuses malformed URLs with a ConfigError naming DATABASE_URL', () => {
    for (const url of ['sqlite://', 'postgres://h:5432', 'mysql://h/db']) {
      expect(() => openStore(url)).toThrow(ConfigError)
      expect(() => openStore(url)).toThrow(/DATABASE_URL/)
    }
  })

  test('create: false opens only an existing SQLite file and creates nothing', async () => {
    const path = join(dir, 'absent', 'sub', 'x.db')
    expect(() => openStore(`sqlite://${path}`, { create: false })).toThrow(StoreMissingError)
    expect(existsSync(join(dir, 'absent'))).toBe(false)
    const made = openStore(`sqlite://${path}`)
    await made.close()
    const again = openStore(`sqlite://${path}`, { create: false })
    await again.close()
  })

  test.skipIf(!pgReachableSync())('a PostgreSQL connection error names DATABASE_URL and the driver\'s cause, not "Failed query"', async () => {
    const u = new URL(PG_ADMIN_URL)
    const closed = openStore(`postgres://${u.username}:pw@127.0.0.1:1/none`)
    try {
      const err = await checkReachable(closed).then(() => null, (e: unknown) => e)
      expect(err).toBeInstanceOf(StoreUnreachableError)
      expect((err as Error).message).toBe(`cannot use the database of DATABASE_URL (postgres://${u.username}:***@127.0.0.1:1/none): connect ECONNREFUSED 127.0.0.1:1`)
    } finally {
      await closed.close()
    }
    const missing = openStore(`postgres://${u.username}@${u.host}/mailctl_no_such_db`)
    try {
      const err = await checkReachable(missing).then(() => null, (e: unknown) => e)
      expect((err as Error).message).toContain('database "mailctl_no_such_db" does not exist')
      expect((err as Error).message).not.toContain('Failed query')
    } finally {
      await missing.close()
    }
  })

  test('describeStoreError unwraps drizzle\'s "Failed query" to its cause', () => {
    const wrapped = new Error('Failed query: SELECT 1\nparams: ', { cause: new Error('connect ECONNREFUSED 127.0.0.1:5432') })
    expect(describeStoreError(wrapped)).toBe('connect ECONNREFUSED 127.0.0.1:5432')
    expect(describeStoreError(new Error('plain'))).toBe('plain')
  })
})

describe('ports', () => {
  test('MAILCTL_SMTP_SECURE_PORT: 465 by default, movable, 0 disables, validated', () => {
    expect(load({}).smtpSecurePort).toBe(465)
    expect(DEFAULT_SMTP_SECURE_PORT).toBe(465)
    expect(load({ MAILCTL_SMTP_SECURE_PORT: '2465' }).smtpSecurePort).toBe(2465)
    expect(load({ MAILCTL_SMTP_SECURE_PORT: '0' }).smtpSecurePort).toBe(0)
    expect(refusal({ MAILCTL_SMTP_SECURE_PORT: '70000' })).toStartWith('MAILCTL_SMTP_SECURE_PORT must be an integer')
  })

  test('MAILCTL_SHUTDOWN_GRACE_SECONDS: 10 by default, 0 allowed, validated', () => {
    expect(load({}).shutdownGraceSeconds).toBe(10)
    expect(load({ MAILCTL_SHUTDOWN_GRACE_SECONDS: '0' }).shutdownGraceSeconds).toBe(0)
    expect(refusal({ MAILCTL_SHUTDOWN_GRACE_SECONDS: '-1' })).toStartWith('MAILCTL_SHUTDOWN_GRACE_SECONDS must be an integer')
  })

  test('MAILCTL_HTTP_REUSE_PORT: off by default', () => {
    expect(load({}).httpReusePort).toBe(false)
    expect(load({ MAILCTL_HTTP_REUSE_PORT: 'true' }).httpReusePort).toBe(true)
    expect(refusal({ MAILCTL_HTTP_REUSE_PORT: 'maybe' })).toStartWith('MAILCTL_HTTP_REUSE_PORT')
  })
})

test('isFullyQualified: what MAILCTL_HOSTNAME must be', () => {
  for (const ok of ['mail.example.com', 'mx.mailctl.test', 'MAIL.Example.COM.']) expect(isFullyQualified(ok)).toBe(true)
  for (const bad of ['localhost', 'box1', 'box1.local', 'ip-10-0-0-1.internal', '10.0.0.1', '', 'a..b', '-x.example.com']) expect(isFullyQualified(bad)).toBe(false)
})
