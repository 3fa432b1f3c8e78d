import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { eq } from 'drizzle-orm'
import { TestEnv } from '../helpers/env'
import { projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { must } from '../helpers/must'

/**
 * The signer worker threads inside the compiled executable: `npm run build` compiles the worker file as
 * a second entry point; a built `mailctl serve --role worker` must sign with them. (SQLite store; the
 * executable is built into a temporary directory with the same command line as the build script.)
 */

const ROOT = resolve(import.meta.dir, '../..')
const dir = mkdtempSync(join(tmpdir(), 'mailctl-compiled-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a compiled worker signs outbound mail in its signer threads', async () => {
  const script = (await Bun.file(join(ROOT, 'package.json')).json() as { scripts: { build: string } }).scripts.build
  const args = script.split(/\s+/).slice(1).map((a) => (a === 'dist/mailctl' ? join(dir, 'mailctl') : a))
  const build = Bun.spawn([join(ROOT, 'node_modules/.bin/bun'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited])
  expect({ code, err: code ? err : '' }).toEqual({ code: 0, err: '' })

  const dns = await startTestDns()
  const env = new TestEnv('sqlite', { dnsServers: [dns.server], outbound: 'capture' })
  await env.start()
  try {
    const p = await projectWithDomain(env, dns, `bin-${Math.random().toString(36).slice(2, 8)}.test`)
    const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'x@dest.test', from: p.from, subject: 'Compiled', body: '<p>hi</p>' } })
    const id: string = res.body.data.emails[0].email
    const child = Bun.spawn([join(dir, 'mailctl'), 'serve', '--role', 'worker'], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? '', DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir,
        MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'config.jwtSecret'), MAILCTL_OUTBOUND: 'capture', MAILCTL_LOG_LEVEL: 'warn', MAILCTL_HOSTNAME: env.config.hostname,
      },
      stdin: 'ignore', stdout: 'ignore', stderr: 'pipe',
    })
    const { emails, mailCapture } = env.store.t
    const end = Date.now() + 30_000
    let status = ''
    let reply: string | null = null
    while (Date.now() < end) {
      const [row] = await env.store.db.select({ s: emails.status, r: emails.lastReply }).from(emails).where(eq(emails.id, id))
      status = row?.s ?? ''
      reply = row?.r ?? null
      if (status === 'SENT' || status === 'FAILED') break
      await Bun.sleep(50)
    }
    child.kill('SIGTERM')
    const stderr = await new Response(child.stderr).text()
    await child.exited
    expect({ status, reply: status === 'SENT' ? null : reply, stderr: status === 'SENT' ? '' : stderr }).toEqual({ status: 'SENT', reply: null, stderr: '' })
    const [cap] = await env.store.db.select().from(mailCapture).where(eq(mailCapture.projectId, p.id))
    expect(cap.raw).toStartWith(`DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=${p.domain}`)
  } finally {
    await env.stop()
    await dns.close()
  }
}, 120_000)
