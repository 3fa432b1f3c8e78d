import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { sql } from 'drizzle-orm'
import { TestEnv } from '../../helpers/env'
import { must } from '../../helpers/must'
import { startServe } from '../../cli/run'

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
  try {
    // Port 0 and the "http listening" line (startServe): no port to pick and clash on; a child that dies
    // or hangs while starting fails the test with what it printed (startServe's deadline).
    const server = await startServe([join(dir, 'mailctl')], ['--role', 'api'], {
      DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir,
      MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'config.jwtSecret'), MAILCTL_HTTP_PORT: '0', MAILCTL_HTTP_HOST: '127.0.0.1',
    }, dir)
    let code: number
    try {
      const p = await env.project()
      // The track writer thread has no fallback (events/service.ts): a thread that failed to load in the
      // executable fails this request (a 500).
      const res = await fetch(`http://127.0.0.1:${server.port}/v1/track`, {
        method: 'POST', headers: { authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bin@example.com', event: 'compiled' }),
      })
      const body = await res.json() as { data: { event: string } }
      expect(res.status).toBe(200)
      const [row] = await env.store.rows<{ name: string }>(sql`SELECT name FROM events WHERE id = ${body.data.event}`)
      expect(row).toEqual({ name: 'compiled' })
    } finally {
      code = await server.stop()
    }
    // Nothing of a failed writer thread in what the server printed (its logs, on either stream), and a clean stop.
    expect([...server.lines, server.stderr()].filter((l) => l.includes('track writer thread failed'))).toEqual([])
    expect(code).toBe(0)
  } finally {
    await env.stop()
  }
}, 120_000)
