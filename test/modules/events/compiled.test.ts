import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { sql } from 'drizzle-orm'
import { TestEnv } from '../../helpers/env'
import { must } from '../../helpers/must'

/**
 * The track writer thread inside the compiled executable: `npm run build` compiles its worker file as an
 * entry point; a built `mailctl serve --role api` must record tracks through it. (SQLite store; the
 * executable is built into a temporary directory with the same command line as the build script.)
 */

const ROOT = resolve(import.meta.dir, '../../..')
const dir = mkdtempSync(join(tmpdir(), 'mailctl-compiled-track-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a compiled server records tracks on its writer thread', async () => {
  // The dashboard's bundle the executable embeds (dist/web/), as `npm run build`'s prebuild writes it first.
  const web = Bun.spawn([join(ROOT, 'node_modules/.bin/bun'), 'scripts/build-web.ts'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [webErr, webCode] = await Promise.all([new Response(web.stderr).text(), web.exited])
  if (webCode !== 0) throw new Error(`web build failed (${webCode}): ${webErr}`)
  const script = (await Bun.file(join(ROOT, 'package.json')).json() as { scripts: { build: string } }).scripts.build
  const args = script.split(/\s+/).slice(1).map((a) => (a === 'dist/mailctl' ? join(dir, 'mailctl') : a))
  const build = Bun.spawn([join(ROOT, 'node_modules/.bin/bun'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited])
  expect({ code, err: code ? err : '' }).toEqual({ code: 0, err: '' })

  const env = new TestEnv('sqlite')
  await env.start()
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const child = Bun.spawn([join(dir, 'mailctl'), 'serve', '--role', 'api'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '', DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir,
      MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'config.jwtSecret'), MAILCTL_LOG_LEVEL: 'warn', MAILCTL_HTTP_PORT: String(port), MAILCTL_HTTP_HOST: '127.0.0.1',
    },
    stdin: 'ignore', stdout: 'ignore', stderr: 'pipe',
  })
  try {
    const p = await env.project()
    let res: Response | null = null
    const end = Date.now() + 30_000
    while (Date.now() < end && !res) {
      res = await fetch(`http://127.0.0.1:${port}/v1/track`, {
        method: 'POST', headers: { authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bin@example.com', event: 'compiled' }),
      }).catch(() => null)
      if (!res) await Bun.sleep(100)
    }
    if (!res) throw new Error('the compiled binary did not answer within 30 s')
    const body = await res.json() as { data: { event: string } }
    expect(res.status).toBe(200)
    const [row] = await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE id = ${body.data.event}`)
    expect(row).toEqual({ name: 'compiled' })
  } finally {
    child.kill('SIGTERM')
    const stderr = await new Response(child.stderr).text()
    await child.exited
    await env.stop()
    expect(stderr).not.toContain('track writer thread failed')
  }
}, 120_000)
