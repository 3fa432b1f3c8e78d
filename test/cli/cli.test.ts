import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { openStore } from '../../src/db/client'
import { projectForKey } from '../../src/modules/projects/service'
import { knownMigrations } from '../../src/db/migrate'
import { freshPgDatabase, pgReachableSync } from '../helpers/env'
import { run, SOURCE, startServe } from './run'

setDefaultTimeout(60_000)

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'mailctl-cli-'))
  dirs.push(d)
  return d
}
process.on('exit', () => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })

const mailctl = (args: string[], env: Record<string, string>) => run(SOURCE, args, env)

/** Reads the SQLite store the CLI wrote, to check keys through the same lookup the HTTP guard uses. */
async function lookup(dataDir: string, key: string) {
  const store = openStore(`sqlite://${join(dataDir, 'mailctl.db')}`)
  try {
    return await projectForKey(store, key)
  } finally {
    await store.close()
  }
}

describe('mailctl CLI (source, SQLite)', () => {
  const data = tempDir()
  const env = { MAILCTL_DATA_DIR: data }

  test('migrate --json applies every migration once', async () => {
    const first = await mailctl(['migrate', '--json'], env)
    expect(first.code).toBe(0)
    const store = openStore(`sqlite://${join(data, 'mailctl.db')}`)
    const known = knownMigrations(store)
    await store.close()
    // The SQL migrations first, then the data repairs (src/db/migrate.ts): compared as sets, since a repair
    // (0012) runs after later-numbered migrations.
    const applied = JSON.parse(first.stdout) as { applied: string[] }
    expect([...applied.applied].sort()).toEqual(known)
    expect(Object.keys(applied)).toEqual(['applied'])
    const again = await mailctl(['migrate', '--json'], env)
    expect(JSON.parse(again.stdout)).toEqual({ applied: [] })
    expect((await mailctl(['migrate'], env)).stdout).toBe('database is up to date\n')
  })

  test('user create: a verified user; a duplicate is one stderr line and exit 1', async () => {
    const res = await mailctl(['user', 'create', '--email', 'Ops@Example.com', '--password', 'operator password', '--name', 'Ops', '--json'], env)
    expect(res.code).toBe(0)
    expect(JSON.parse(res.stdout)).toEqual({ id: expect.any(String), email: 'ops@example.com', name: 'Ops', emailVerified: true, createdAt: expect.any(String) })
    const dup = await mailctl(['user', 'create', '--email', 'ops@example.com', '--password', 'operator password'], env)
    expect(dup.code).toBe(1)
    expect(dup.stdout).toBe('')
    expect(dup.stderr.trim().split('\n')).toEqual(['error: CONFLICT: An account with this email already exists'])
  })

  test('user create: invalid input is a validation error (exit 1); a missing password without a terminal exits 2', async () => {
    const bad = await mailctl(['user', 'create', '--email', 'nope', '--password', 'short'], env)
    expect(bad.code).toBe(1)
    expect(bad.stderr).toStartWith('error: VALIDATION_ERROR')
    expect(bad.stderr.trim().split('\n').length).toBe(1)
    const noTty = await mailctl(['user', 'create', '--email', 'someone@example.com'], env)
    expect(noTty.code).toBe(2)
    expect(noTty.stderr.trim()).toBe('error: --password is required (no terminal to prompt on)')
  })

  test('user create: addresses are checked as the API checks them (its email format, not Elysia\'s looser default)', async () => {
    // Elysia's own format accepts a one-letter top-level domain; the API's (src/http/formats.ts) does not.
    const res = await mailctl(['user', 'create', '--email', 'ops@example.c', '--password', 'operator password'], env)
    expect(res.code).toBe(1)
    expect(res.stderr.trim().split('\n')).toEqual(['error: VALIDATION_ERROR: email: Invalid email'])
  })

  test('project create --json prints exactly {id, name, publicKey, secretKey}; the keys work', async () => {
    const res = await mailctl(['project', 'create', '--name', 'demo', '--json'], env)
    expect(res.code).toBe(0)
    const out = JSON.parse(res.stdout)
    expect(Object.keys(out).sort()).toEqual(['id', 'name', 'publicKey', 'secretKey'])
    expect(out.name).toBe('demo')
    expect(out.publicKey).toMatch(/^pk_[0-9a-f]{64}$/)
    expect(out.secretKey).toMatch(/^sk_[0-9a-f]{64}$/)
    expect((await lookup(data, out.secretKey))?.project.id).toBe(out.id)
  })

  test('project create --owner makes an existing user OWNER; an unknown owner fails without creating anything', async () => {
    const res = await mailctl(['project', 'create', '--name', 'owned', '--owner', 'OPS@example.com', '--json'], env)
    expect(res.code).toBe(0)
    const store = openStore(`sqlite://${join(data, 'mailctl.db')}`)
    const { members, users } = store.t
    const rows = await store.db.select({ role: members.role, email: users.email }).from(members).innerJoin(users, eq(users.id, members.userId))
    await store.close()
    expect(rows).toEqual([{ role: 'OWNER', email: 'ops@example.com' }])
    const bad = await mailctl(['project', 'create', '--name', 'orphan', '--owner', 'ghost@example.com'], env)
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim()).toBe('error: NOT_FOUND: User ghost@example.com not found')
    const list = JSON.parse((await mailctl(['project', 'list', '--json'], env)).stdout) as Array<{ name: string }>
    expect(list.map((p) => p.name)).not.toContain('orphan')
  })

  test('project create without --name and without a terminal exits 2; an empty name is a validation error', async () => {
    const res = await mailctl(['project', 'create'], env)
    expect(res.code).toBe(2)
    expect(res.stderr.trim()).toBe('error: --name is required (no terminal to prompt on)')
    const long = await mailctl(['project', 'create', '--name', 'x'.repeat(101)], env)
    expect(long.code).toBe(1)
    expect(long.stderr).toStartWith('error: VALIDATION_ERROR')
  })

  test('project list: JSON without secrets, and a human table', async () => {
    const res = await mailctl(['project', 'list', '--json'], env)
    expect(res.code).toBe(0)
    const list = JSON.parse(res.stdout) as Array<Record<string, unknown>>
    expect(list.map((p) => p.name)).toEqual(['demo', 'owned'])
    expect(Object.keys(list[0]).sort()).toEqual(['createdAt', 'disabled', 'id', 'name', 'publicKey'])
    expect(res.stdout).not.toContain('sk_')
    const human = await mailctl(['project', 'list'], env)
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+PUBLICKEY/)
    expect(human.stdout).toContain('demo')
  })

  test('keys rotate PROJECT (by name or id): new keys printed; the old ones stop working at once', async () => {
    const created = JSON.parse((await mailctl(['project', 'create', '--name', 'rotating', '--json'], env)).stdout)
    const res = await mailctl(['keys', 'rotate', 'rotating', '--json'], env)
    expect(res.code).toBe(0)
    const out = JSON.parse(res.stdout)
    expect(Object.keys(out).sort()).toEqual(['id', 'publicKey', 'secretKey'])
    expect(out.id).toBe(created.id)
    expect(await lookup(data, created.secretKey)).toBeNull()
    expect(await lookup(data, created.publicKey)).toBeNull()
    expect((await lookup(data, out.secretKey))?.project.id).toBe(created.id)
    const byId = await mailctl(['keys', 'rotate', created.id, '--json'], env)
    expect(JSON.parse(byId.stdout).id).toBe(created.id)
    const missing = await mailctl(['keys', 'rotate', 'no-such-project'], env)
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim()).toBe('error: NOT_FOUND: Project not found')
    const noArg = await mailctl(['keys', 'rotate'], env)
    expect(noArg.code).toBe(2)
  })

  test('usage errors exit 2; --help exits 0', async () => {
    const bad = await mailctl(['project', 'create', '--bogus'], env)
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("unknown option '--bogus'")
    const role = await mailctl(['serve', '--role', 'mailman'], env)
    expect(role.code).toBe(2)
    expect(role.stderr).toContain('--role must be one of api, worker, smtp')
    const help = await mailctl(['--help'], env)
    expect(help.code).toBe(0)
    for (const cmd of ['serve', 'migrate', 'user', 'project', 'keys', 'doctor']) expect(help.stdout).toContain(cmd)
  })

  test('a bad setting is one stderr line and exit 2', async () => {
    const res = await mailctl(['project', 'list'], { ...env, MAILCTL_LOG_LEVEL: 'loud' })
    expect(res.code).toBe(2)
    expect(res.stderr.trim()).toBe('error: MAILCTL_LOG_LEVEL must be debug, info, warn, error or silent')
  })

  test('--config FILE (JSON and TOML) supplies settings; environment variables win', async () => {
    const other = tempDir()
    const json = join(tempDir(), 'mailctl.json')
    writeFileSync(json, JSON.stringify({ MAILCTL_DATA_DIR: other }))
    expect((await run(SOURCE, ['--config', json, 'migrate'], {})).code).toBe(0)
    const res = await run(SOURCE, ['--config', json, 'project', 'create', '--name', 'from-config', '--json'], {})
    expect(res.code).toBe(0)
    expect(existsSync(join(other, 'mailctl.db'))).toBe(true)
    const toml = join(tempDir(), 'mailctl.toml')
    writeFileSync(toml, `MAILCTL_DATA_DIR = "${other}"\n`)
    const list = JSON.parse((await run(SOURCE, ['project', 'list', '--json', '--config', toml], {})).stdout) as Array<{ name: string }>
    expect(list.map((p) => p.name)).toEqual(['from-config'])
    const wins = JSON.parse((await run(SOURCE, ['project', 'list', '--json', '--config', toml], { MAILCTL_DATA_DIR: data })).stdout) as Array<{ name: string }>
    expect(wins.map((p) => p.name)).not.toContain('from-config')
    const missing = await run(SOURCE, ['--config', join(other, 'nope.json'), 'project', 'list'], {})
    expect(missing.code).not.toBe(0)
    expect(missing.stderr.trim().split('\n').length).toBe(1)
  })

  test('doctor --json reports every check; a broken database fails it with exit 1', async () => {
    const res = await mailctl(['doctor', '--json'], { ...env, MAILCTL_HTTP_PORT: '0', MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', MAILCTL_HOSTNAME: 'localhost' })
    const report = JSON.parse(res.stdout) as { ok: boolean; checks: Array<{ name: string; status: string }> }
    const byName = Object.fromEntries(report.checks.map((c) => [c.name, c.status]))
    expect(byName).toMatchObject({ config: 'ok', 'data dir': 'ok', database: 'ok', migrations: 'ok', redis: 'ok' })
    for (const name of ['http port', 'smtp inbound port', 'smtp relay port', 'hostname', 'public url', 'outbound']) expect(byName[name]).toBeDefined()
    expect(res.code).toBe(report.ok ? 0 : 1)
    const broken = await mailctl(['doctor', '--json'], { ...env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1' })
    expect(broken.code).toBe(1)
    const b = JSON.parse(broken.stdout) as { ok: boolean; checks: Array<{ name: string; status: string; detail: string }> }
    expect(b.ok).toBe(false)
    expect(b.checks.find((c) => c.name === 'database')?.status).toBe('fail')
    expect(b.checks.find((c) => c.name === 'redis')?.status).toBe('fail')
    // the cause, not drizzle's "Failed query: SELECT 1"; and the setting it belongs to
    const detail = (name: string) => b.checks.find((c) => c.name === name)?.detail
    expect(detail('database')).toBe('postgres (DATABASE_URL postgres://nobody@127.0.0.1:1/none): connect ECONNREFUSED 127.0.0.1:1')
    expect(detail('redis')).toStartWith('REDIS_URL redis://127.0.0.1:1: ')
  })

  test('serve --role api answers HTTP from the data dir and stops cleanly on SIGTERM', async () => {
    const s = await startServe(SOURCE, ['--role', 'api'], { ...env, MAILCTL_HTTP_PORT: '0', MAILCTL_HTTP_HOST: '127.0.0.1' })
    try {
      const res = await fetch(`http://127.0.0.1:${s.port}/config`)
      expect(res.status).toBe(200)
      expect(((await res.json()) as { version: string }).version).toBe('0.1.0')
      expect((await fetch(`http://127.0.0.1:${s.port}/ready`)).status).toBe(200)
    } finally {
      expect(await s.stop()).toBe(0)
    }
    expect(s.lines.some((l) => l.includes('"shutting down"'))).toBe(true)
  })
})

describe('mailctl CLI on a terminal (a pty from script(1))', () => {
  test('user create without --password prompts for it (masked) and uses the answer', async () => {
    // The prompt path is only reachable on a terminal: without script(1) (util-linux) this fails, never skips.
    if (Bun.spawnSync(['sh', '-c', 'command -v script']).exitCode !== 0) {
      throw new Error('script(1) is not installed: this test needs it for a pty (Debian: apt-get install bsdutils)')
    }
    const data = tempDir()
    expect((await mailctl(['migrate'], { MAILCTL_DATA_DIR: data })).code).toBe(0)
    const p = Bun.spawn(['script', '-qec', `${SOURCE.join(' ')} user create --email tty@example.com --json`, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', MAILCTL_DATA_DIR: data, MAILCTL_LOG_LEVEL: 'warn' },
      stdin: 'pipe', stdout: 'pipe', stderr: 'pipe',
    })
    p.stdin.write('typed password 1\r')
    p.stdin.flush()
    const code = await p.exited
    p.stdin.end()
    const screen = await new Response(p.stdout).text()
    expect(code).toBe(0)
    // (The terminal itself echoes input typed before the prompt starts; from the prompt on it is masked.)
    const fromPrompt = screen.slice(screen.indexOf('? Password'))
    expect(fromPrompt).toContain('Password ****************')
    expect(fromPrompt).not.toContain('typed password 1')
    expect(screen).toContain('"email": "tty@example.com"')
    const store = openStore(`sqlite://${join(data, 'mailctl.db')}`)
    const { users } = store.t
    const [row] = await store.db.select().from(users).where(eq(users.email, 'tty@example.com'))
    await store.close()
    expect(await Bun.password.verify('typed password 1', row.passwordHash)).toBe(true)
  })
})

describe.skipIf(!pgReachableSync())('mailctl CLI on PostgreSQL', () => {
  test('migrate, project create and keys rotate against DATABASE_URL=postgres://', async () => {
    const db = await freshPgDatabase()
    try {
      const env = { MAILCTL_DATA_DIR: tempDir(), DATABASE_URL: db.url }
      const m = await mailctl(['migrate', '--json'], env)
      expect(m.code).toBe(0)
      expect(JSON.parse(m.stdout).applied.length).toBeGreaterThan(0)
      const p = JSON.parse((await mailctl(['project', 'create', '--name', 'pg-demo', '--json'], env)).stdout)
      expect(p.secretKey).toMatch(/^sk_/)
      const r = await mailctl(['keys', 'rotate', 'pg-demo', '--json'], env)
      expect(JSON.parse(r.stdout).id).toBe(p.id)
      const list = JSON.parse((await mailctl(['project', 'list', '--json'], env)).stdout) as Array<{ id: string }>
      expect(list.map((x) => x.id)).toEqual([p.id])
    } finally {
      await db.drop()
    }
  })
})
