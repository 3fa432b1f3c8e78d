import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { TestEnv } from '../helpers/env'
import { startServe } from '../cli/run'
import { storeInbound } from '../../src/modules/inbound/service'
import { createProject } from '../../src/modules/projects/service'
import { projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { must } from '../helpers/must'

/**
 * The worker threads inside the compiled executable: `npm run build` compiles each worker file as an
 * entry point beside cli/mailctl.ts (as bytecode); a built `mailctl serve` must start them: the signer
 * threads (outbound mail), the track writer's threads (POST /v1/track on SQLite) and the inbound parse
 * thread (messages over 256 KB). (SQLite store; the executable is built once into a temporary directory
 * with the same command line as the build script.)
 */

const ROOT = resolve(import.meta.dir, '../..')
const dir = mkdtempSync(join(tmpdir(), 'mailctl-compiled-'))
const BIN = join(dir, 'mailctl')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

beforeAll(async () => {
  // The dashboard's bundle the executable embeds (dist/web/), as `npm run build`'s prebuild writes it first.
  const web = Bun.spawn([join(ROOT, 'node_modules/.bin/bun'), 'scripts/build-web.ts'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [webErr, webCode] = await Promise.all([new Response(web.stderr).text(), web.exited])
  if (webCode !== 0) throw new Error(`web build failed (${webCode}): ${webErr}`)
  const script = (await Bun.file(join(ROOT, 'package.json')).json() as { scripts: { build: string } }).scripts.build
  const args = script.split(/\s+/).slice(1).map((a) => (a === 'dist/mailctl' ? BIN : a))
  const build = Bun.spawn([join(ROOT, 'node_modules/.bin/bun'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited])
  if (code !== 0) throw new Error(`build failed (${code}): ${err}`)
}, 120_000)

/** The settings a child `mailctl serve` needs to share the test's store. */
function childEnv(env: TestEnv, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir, MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'config.jwtSecret'),
    MAILCTL_OUTBOUND: 'capture', MAILCTL_HOSTNAME: env.config.hostname, MAILCTL_HTTP_HOST: '127.0.0.1', MAILCTL_HTTP_PORT: '0',
    MAILCTL_SMTP_INBOUND_PORT: '0', MAILCTL_SMTP_RELAY_PORT: '0', ...extra,
  }
}

test('a compiled worker signs outbound mail in its signer threads, campaign messages rendered there', async () => {
  const dns = await startTestDns()
  const env = new TestEnv('sqlite', { dnsServers: [dns.server], outbound: 'capture' })
  await env.start()
  try {
    const p = await projectWithDomain(env, dns, `bin-${Math.random().toString(36).slice(2, 8)}.test`)
    const res = await env.request('POST', '/v1/send', { key: p.secretKey, body: { to: 'x@dest.test', from: p.from, subject: 'Compiled', body: '<p>hi</p>' } })
    const id: string = res.body.data.emails[0].email
    // A campaign too: its message is rendered (Handlebars, the footer, tracking) in a signer thread.
    expect((await env.request('POST', '/contacts', { key: p.secretKey, body: { email: 'zed@dest.test', data: { firstName: 'Zed' } } })).status).toBeLessThan(300)
    const c = await env.request('POST', '/campaigns', { key: p.secretKey, body: { name: 'Bin', subject: 'For {{firstName}}', body: '<p>Hello {{firstName}}</p>', from: p.from, audienceType: 'ALL' } })
    expect((await env.request('POST', `/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: {} })).status).toBe(200)
    const child = Bun.spawn([BIN, 'serve', '--role', 'worker'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...childEnv(env, { MAILCTL_LOG_LEVEL: 'warn' }) },
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
      const [camp] = await env.store.db.select({ s: emails.status }).from(emails).where(eq(emails.campaignId, c.body.data.id))
      if ((status === 'SENT' || status === 'FAILED') && (camp?.s === 'SENT' || camp?.s === 'FAILED')) break
      await Bun.sleep(50)
    }
    child.kill('SIGTERM')
    const stderr = await new Response(child.stderr).text()
    await child.exited
    expect({ status, reply: status === 'SENT' ? null : reply, stderr: status === 'SENT' ? '' : stderr }).toEqual({ status: 'SENT', reply: null, stderr: '' })
    const caps = await env.store.db.select().from(mailCapture).where(eq(mailCapture.projectId, p.id))
    expect(caps.map((x) => x.toAddress).sort()).toEqual(['x@dest.test', 'zed@dest.test'])
    for (const cap of caps) expect(cap.raw).toStartWith(`DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=${p.domain}`)
    const campaignMail = must(caps.find((x) => x.toAddress === 'zed@dest.test'), 'the campaign message')
    expect(campaignMail.subject).toBe('For Zed')
    expect(campaignMail.raw).toContain('<p>Hello Zed</p>')
    expect(campaignMail.raw).toContain('/unsubscribe/')
  } finally {
    await env.stop()
    await dns.close()
  }
}, 120_000)

test('the compiled API answers POST /v1/track through the track writer thread', async () => {
  const env = new TestEnv('sqlite', { outbound: 'capture' })
  await env.start()
  try {
    const p = await createProject(env.store, { name: 'bin-track', ownerUserId: null })
    const s = await startServe([BIN], ['--role', 'api'], childEnv(env, { MAILCTL_LOG_LEVEL: 'info' }), dir)
    try {
      const res = await fetch(`http://127.0.0.1:${s.port}/v1/track`, {
        method: 'POST', headers: { authorization: `Bearer ${p.publicKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'tracked@example.com', event: 'compiled-track' }),
      })
      expect({ status: res.status, body: res.status === 200 ? '' : await res.text() }).toEqual({ status: 200, body: '' })
    } finally {
      expect(await s.stop()).toBe(0)
    }
    // Beside the start line, nothing on stderr: no failed thread, and no non-JSON warning from Elysia
    // (handlers are read from their source text, which the bytecode build keeps).
    expect(s.stderr().replace(/^mailctl \S+ is running: .*\n/, '')).toBe('')
    const { events } = env.store.t
    const rows = await env.store.db.select({ name: events.name }).from(events).where(and(eq(events.projectId, p.id), eq(events.name, 'compiled-track')))
    expect(rows.length).toBe(1)
  } finally {
    await env.stop()
  }
}, 60_000)

test('a compiled worker reads a large inbound message in its parse thread', async () => {
  const env = new TestEnv('sqlite', { outbound: 'capture' })
  await env.start()
  try {
    // Over the 256 KB read inline: parseInbound hands it to src/mail/inbound/parse-worker.ts.
    const raw = Buffer.from(`From: a@remote.test\r\nTo: b@nowhere.test\r\nSubject: big\r\nContent-Type: text/plain\r\n\r\n${'hello world\r\n'.repeat(40_000)}`)
    const id = await storeInbound(env.deps, { raw, mailFrom: 'a@remote.test', rcptTo: ['b@nowhere.test'], projectId: null, remoteAddress: '127.0.0.1', helo: 'remote.test' })
    const child = Bun.spawn([BIN, 'serve', '--role', 'worker'], {
      cwd: dir, env: { PATH: process.env.PATH ?? '', ...childEnv(env, { MAILCTL_LOG_LEVEL: 'warn' }) }, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe',
    })
    const { inboundMessages } = env.store.t
    const end = Date.now() + 30_000
    let row: { status: string; kind: string | null; detail: string | null } | undefined
    while (Date.now() < end) {
      ;[row] = await env.store.db.select({ status: inboundMessages.status, kind: inboundMessages.kind, detail: inboundMessages.detail }).from(inboundMessages).where(eq(inboundMessages.id, id))
      if (row?.status !== 'queued') break
      await Bun.sleep(50)
    }
    child.kill('SIGTERM')
    // Beside the start line, nothing on stderr (logs are on stdout; a failed thread would show here).
    const stderr = (await new Response(child.stderr).text()).replace(/^mailctl \S+ is running: workers only \(Ctrl-C stops\)\n/, '')
    expect(await child.exited).toBe(0)
    // Read (by the thread), then ignored: it is neither a bounce nor addressed to a verified domain.
    expect({ row, stderr }).toEqual({ row: { status: 'ignored', kind: 'other', detail: 'neither a bounce nor a feedback report, and not addressed to a verified domain' }, stderr: '' })
  } finally {
    await env.stop()
  }
}, 60_000)
