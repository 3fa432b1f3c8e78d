/**
 * A private PostgreSQL server for fault tests (stopped and started by the test; the shared server on
 * 5432 is never touched): initdb and pg_ctl from /usr/lib/postgresql/15/bin, as the `postgres` user when
 * the tests run as root, on its own port and socket directory under /tmp.
 */
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe } from 'bun:test'
import type { Config } from '../../src/config'
import { sqliteOnly, TestEnv } from './env'
import { freePort } from './ports'

const BIN = process.env.MAILCTL_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin'

/** True when this machine can run a private server. */
export const privatePgAvailable = existsSync(join(BIN, 'initdb'))

export interface PrivatePg {
  /** The admin URL (database `postgres`, trust auth). */
  url: string
  start(): Promise<void>
  /** Stops at once, as a crash or a kill would (`-m immediate`). */
  stop(): Promise<void>
  /** Freezes (SIGSTOP) or thaws (SIGCONT) every process of the server: a database that does not answer. */
  freeze(on: boolean): Promise<void>
  destroy(): Promise<void>
}

async function run(args: string[]): Promise<void> {
  const asRoot = process.getuid?.() === 0
  const cmd = asRoot ? ['runuser', '-u', 'postgres', '--', ...args] : args
  const p = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe' })
  const code = await p.exited
  if (code !== 0) throw new Error(`${args.join(' ')} failed (${code}): ${await new Response(p.stderr).text()}`)
}

export async function startPrivatePg(): Promise<PrivatePg> {
  const dir = mkdtempSync('/tmp/mailctl-pg-')
  if (process.getuid?.() === 0) {
    const { uid, gid } = await pgUser()
    chownSync(dir, uid, gid)
  }
  const data = join(dir, 'data')
  const port = freePort()
  await run([join(BIN, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const ctl = (...a: string[]) => run([join(BIN, 'pg_ctl'), '-D', data, ...a])
  const start = () => ctl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, '-l', join(dir, 'log'), '-w', 'start')
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop: () => ctl('-m', 'immediate', '-w', 'stop'),
    async freeze(on) {
      const pid = Number((await Bun.file(join(data, 'postmaster.pid')).text()).split('\n')[0])
      const children = (await new Response(Bun.spawn(['pgrep', '-P', String(pid)], { stdout: 'pipe' }).stdout).text()).split('\n').filter(Boolean).map(Number)
      for (const p of [pid, ...children]) process.kill(p, on ? 'SIGSTOP' : 'SIGCONT')
    },
    async destroy() {
      await ctl('-m', 'immediate', '-w', 'stop').catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function pgUser(): Promise<{ uid: number; gid: number }> {
  const text = await Bun.file('/etc/passwd').text()
  const line = text.split('\n').find((l) => l.startsWith('postgres:'))
  if (!line) throw new Error('no postgres user to run a private PostgreSQL')
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

/** What a `describePrivatePg` body reads once its hooks have run: the private server and a TestEnv on it. */
export interface PrivatePgSuite { pg: PrivatePg; env: TestEnv }

/**
 * A describe block on a private PostgreSQL server (started before its tests, stopped and removed after),
 * with a TestEnv on it. Never skipped silently: without initdb/pg_ctl a notice says so, and under CI
 * (CI=1) that is a failure. Skipped on purpose under `MAILCTL_TEST_STORES=sqlite` (the fast tier).
 */
export function describePrivatePg(title: string, overrides: Partial<Config>, body: (s: PrivatePgSuite) => void): void {
  if (sqliteOnly) {
    describe.skip(title, () => body({} as PrivatePgSuite))
    return
  }
  if (!privatePgAvailable) {
    if (process.env.CI) throw new Error(`a private PostgreSQL (initdb, pg_ctl in ${BIN}) is needed for "${title}"`)
    console.warn(`\n*** NOTICE: no private PostgreSQL (initdb/pg_ctl in ${BIN}): "${title}" is SKIPPED ***\n`)
  }
  const s = {} as PrivatePgSuite
  ;(privatePgAvailable ? describe : describe.skip)(title, () => {
    beforeAll(async () => {
      s.pg = await startPrivatePg()
      s.env = new TestEnv('pg', overrides, s.pg.url)
      await s.env.start()
    }, 120_000)
    afterAll(async () => {
      await s.pg.start().catch(() => {})
      await s.env.stop()
      await s.pg.destroy()
    }, 60_000)
    body(s)
  })
}
