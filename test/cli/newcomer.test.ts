import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pkg from '../../package.json'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'
import { ROOT, run, SOURCE } from './run'

/** The newcomer's path (issue 18): commands that fail instead of guessing, --version, `npx mailctl`. */

setDefaultTimeout(60_000)

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'mailctl-newcomer-'))
  dirs.push(d)
  return d
}
process.on('exit', () => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })

const mailctl = (args: string[], env: Record<string, string>) => run(SOURCE, args, env)
const lines = (text: string) => text.trim().split('\n')

test('--version and -V print the package version', async () => {
  for (const flag of ['--version', '-V']) {
    const res = await mailctl([flag], {})
    expect(res.code).toBe(0)
    expect(res.stdout).toBe(`${pkg.version}\n`)
  }
})

test('bin/mailctl (package.json "bin", so `npx mailctl`) runs the CLI with the bun of node_modules, bun not on the PATH', async () => {
  expect(pkg.bin).toEqual({ mailctl: 'bin/mailctl' })
  expect(pkg.engines.node).toBeDefined()
  const data = tempDir()
  const res = await run([join(ROOT, 'bin', 'mailctl')], ['migrate', '--json'], { PATH: '/usr/bin:/bin', MAILCTL_DATA_DIR: data }, tempDir())
  expect(res.stderr).toBe('')
  expect(res.code).toBe(0)
  expect(JSON.parse(res.stdout).applied.length).toBeGreaterThan(0)
  // the exit code is mailctl's own
  const bad = await run([join(ROOT, 'bin', 'mailctl')], ['project', 'create', '--bogus'], { PATH: '/usr/bin:/bin' })
  expect(bad.code).toBe(2)
})

describe('only serve and migrate create a store', () => {
  test('a command run where no SQLite database exists names the store it looked for and creates nothing', async () => {
    const parent = tempDir()
    const data = join(parent, 'data')
    for (const args of [['project', 'list'], ['keys', 'rotate', 'shop'], ['domain', 'list', 'shop'], ['queue'], ['user', 'create', '--email', 'a@example.com', '--password', 'long enough pw']]) {
      const res = await mailctl(args, { MAILCTL_DATA_DIR: data })
      expect(res.code).toBe(2)
      expect(res.stdout).toBe('')
      expect(lines(res.stderr)).toEqual([
        `error: no mailctl database at ${join(data, 'mailctl.db')} (MAILCTL_DATA_DIR=${data}, DATABASE_URL unset): point MAILCTL_DATA_DIR or DATABASE_URL at the existing store, or create it with \`mailctl migrate\` (\`mailctl serve\` also creates it)`,
      ])
    }
    expect(readdirSync(parent)).toEqual([])
    // doctor reports the missing store and data dir as not created yet, and creates neither
    const doctor = await mailctl(['doctor', '--json'], { MAILCTL_DATA_DIR: data, MAILCTL_HTTP_PORT: '0', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_HOSTNAME: 'localhost' })
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks
    expect(checks.find((c) => c.name === 'data dir')).toMatchObject({ status: 'warn', detail: `${data} does not exist yet; \`mailctl serve\` or \`mailctl migrate\` creates it` })
    expect(checks.find((c) => c.name === 'database')?.status).toBe('warn')
    expect(checks.find((c) => c.name === 'database')?.detail).toStartWith(`sqlite: no database at ${join(data, 'mailctl.db')} yet`)
    expect(readdirSync(parent)).toEqual([])
    // an explicit DATABASE_URL is named as such
    const other = await mailctl(['project', 'list'], { MAILCTL_DATA_DIR: data, DATABASE_URL: `sqlite://${join(parent, 'x.db')}` })
    expect(other.stderr).toContain(`no mailctl database at ${join(parent, 'x.db')} (DATABASE_URL=sqlite://${join(parent, 'x.db')})`)
    expect(existsSync(join(parent, 'x.db'))).toBe(false)
    // migrate creates it; then the same command works
    expect((await mailctl(['migrate'], { MAILCTL_DATA_DIR: data })).code).toBe(0)
    const after = await mailctl(['project', 'list', '--json'], { MAILCTL_DATA_DIR: data })
    expect(after.code).toBe(0)
    expect(JSON.parse(after.stdout)).toEqual([])
  })

  test.skipIf(!pgReachableSync())('on PostgreSQL, a database without mailctl tables is refused the same way and left empty', async () => {
    const db = await freshPgDatabase()
    try {
      const env = { MAILCTL_DATA_DIR: tempDir(), DATABASE_URL: db.url, MAILCTL_SECRET: 's'.repeat(32) }
      const res = await mailctl(['project', 'create', '--name', 'x'], env)
      expect(res.code).toBe(2)
      expect(res.stderr).toStartWith('error: the PostgreSQL database of DATABASE_URL (')
      expect(res.stderr).toContain('has no mailctl tables')
      expect((await mailctl(['migrate'], env)).code).toBe(0)
      expect((await mailctl(['project', 'create', '--name', 'x'], env)).code).toBe(0)
    } finally {
      await db.drop()
    }
  })
})

describe('DATABASE_URL and REDIS_URL', () => {
  test('wrong values are refused with a message naming DATABASE_URL (exit 2), before anything is created', async () => {
    const data = join(tempDir(), 'data')
    const cases: Array<[string, string]> = [
      ['postgres://postgres@127.0.0.1:5432', 'error: DATABASE_URL "postgres://postgres@127.0.0.1:5432" names no database'],
      ['sqlite:///nonexistent/dir/x.db', 'error: DATABASE_URL "sqlite:///nonexistent/dir/x.db": the directory /nonexistent/dir does not exist'],
      ['sqlite://', 'error: DATABASE_URL "sqlite://" names no database file'],
      ['mysql://root:pw@127.0.0.1/db', 'error: DATABASE_URL must start with sqlite:// or postgres://, got "mysql:"'],
    ]
    for (const [url, message] of cases) {
      for (const command of ['migrate', 'serve']) {
        const res = await mailctl([command], { MAILCTL_DATA_DIR: data, DATABASE_URL: url, MAILCTL_HTTP_PORT: '0', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0' })
        expect(res.code).toBe(2)
        expect(lines(res.stderr)).toHaveLength(1)
        expect(res.stderr).toStartWith(message)
      }
    }
    expect(existsSync('/nonexistent')).toBe(false)
    expect(existsSync(data)).toBe(false)
  })

  test('a connection error names the setting it belongs to (exit 1)', async () => {
    const data = join(tempDir(), 'data')
    const pg = await mailctl(['migrate'], { MAILCTL_DATA_DIR: data, DATABASE_URL: 'postgres://mailctl:secret@127.0.0.1:1/mailctl' })
    expect(pg.code).toBe(1)
    expect(lines(pg.stderr)).toEqual(['error: cannot use the database of DATABASE_URL (postgres://mailctl:***@127.0.0.1:1/mailctl): connect ECONNREFUSED 127.0.0.1:1'])
    const redis = await mailctl(['migrate', '--json'], { MAILCTL_DATA_DIR: data, REDIS_URL: 'redis://127.0.0.1:1' })
    expect(redis.code).toBe(1)
    expect(lines(redis.stderr)).toEqual(['error: cannot reach Redis at REDIS_URL (redis://127.0.0.1:1): connect ECONNREFUSED 127.0.0.1:1'])
    expect(redis.stdout).toBe('')
  })
})

describe('project names are not unique', () => {
  test('a name that several projects share is refused with their ids; the id always works', async () => {
    const env = { MAILCTL_DATA_DIR: tempDir() }
    expect((await mailctl(['migrate'], env)).code).toBe(0)
    const first = JSON.parse((await mailctl(['project', 'create', '--name', 'twin', '--json'], env)).stdout) as { id: string }
    const second = JSON.parse((await mailctl(['project', 'create', '--name', 'twin', '--json'], env)).stdout) as { id: string }
    expect(second.id).not.toBe(first.id)
    for (const args of [['keys', 'rotate', 'twin'], ['domain', 'list', 'twin'], ['suppression', 'list', 'twin']]) {
      const res = await mailctl(args, env)
      expect(res.code).toBe(1)
      expect(res.stdout).toBe('')
      const [line, ...rest] = lines(res.stderr)
      expect(rest).toEqual([])
      expect(line).toStartWith('error: CONFLICT: 2 projects are named "twin": ')
      expect(line.indexOf(first.id)).toBeGreaterThan(0)
      expect(line.indexOf(second.id)).toBeGreaterThan(line.indexOf(first.id))
      expect(line).toEndWith('Pass the id of the one you mean')
    }
    const byId = await mailctl(['keys', 'rotate', second.id, '--json'], env)
    expect(byId.code).toBe(0)
    expect(JSON.parse(byId.stdout).id).toBe(second.id)
    // a unique name still works
    const solo = JSON.parse((await mailctl(['project', 'create', '--name', 'solo', '--json'], env)).stdout) as { id: string }
    expect(JSON.parse((await mailctl(['keys', 'rotate', 'solo', '--json'], env)).stdout).id).toBe(solo.id)
  })
})

describe('domain add and MAILCTL_HOSTNAME', () => {
  test('warns (stderr) when MAILCTL_HOSTNAME is not fully qualified; stdout stays the JSON document', async () => {
    const data = tempDir()
    expect((await mailctl(['migrate'], { MAILCTL_DATA_DIR: data })).code).toBe(0)
    expect((await mailctl(['project', 'create', '--name', 'shop'], { MAILCTL_DATA_DIR: data })).code).toBe(0)
    const bare = await mailctl(['domain', 'add', 'shop', 'bare.example', '--json'], { MAILCTL_DATA_DIR: data, MAILCTL_HOSTNAME: 'buildbox' })
    expect(bare.code).toBe(0)
    expect(JSON.parse(bare.stdout).domain).toBe('bare.example')
    expect(lines(bare.stderr)).toHaveLength(1)
    expect(bare.stderr).toStartWith('warning: MAILCTL_HOSTNAME is "buildbox", not a fully qualified name: the return-path MX and SPF records below point at it')
    const fqdn = await mailctl(['domain', 'add', 'shop', 'good.example', '--json'], { MAILCTL_DATA_DIR: data, MAILCTL_HOSTNAME: 'mail.example.com' })
    expect(fqdn.code).toBe(0)
    expect(fqdn.stderr).toBe('')
  })
})
