import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { forEachStore, type TestEnv } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { CaptureTransport } from '../../src/mail/outbound/capture'
import { dkimKey } from '../../src/secrets'

/** `mailctl queue` and `mailctl queue --captured`, run as a child process on the test's store. */

const CLI = join(import.meta.dir, '../../cli/mailctl.ts')
const dns = await startTestDns()
const sink = await startSink({ script: (c) => (c.stage === 'data' ? '451 4.7.1 Greylisted, please try again in 300 seconds' : null) })
mxTo(dns, 'later.test')

async function cli(env: TestEnv, args: string[]) {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: env.config.databaseUrl, MAILCTL_DATA_DIR: env.config.dataDir, MAILCTL_JWT_SECRET: 'cli-test', MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'), MAILCTL_LOG_LEVEL: 'warn', MAILCTL_OUTBOUND: 'smtp://user:hidden@relay.example:587' },
    stdout: 'pipe', stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

forEachStore('mailctl queue', (env) => {
  test('depth, deferred mail with next retries; captured mail listed and printed raw', async () => {
    const p = await projectWithDomain(env, dns, `cli-${Math.random().toString(36).slice(2, 8)}.test`)
    const send = async (to: string) => (await env.request('POST', '/v1/send', { key: p.secretKey, body: { to, from: p.from, subject: `To ${to}`, body: '<p>x</p>' } })).body.data.emails[0].email as string
    const deferred = await send('a@later.test')
    await pipelineFor(env).drain()
    const captured = await send('b@dest.test')
    await pipelineFor(env, { transport: new CaptureTransport() }).drain()

    const stats = await cli(env, ['--json', 'queue'])
    expect(stats.code).toBe(0)
    const s = JSON.parse(stats.stdout)
    expect(s).toMatchObject({ depth: 1, due: 0, inFlight: 0, deferred: 1, transport: 'smtp://***@relay.example:587' })
    expect(s.nextRetries).toHaveLength(1)
    expect(s.nextRetries[0]).toMatchObject({ emailId: deferred, to: 'a@later.test', attempts: 1 })
    expect(s.nextRetries[0].lastError).toContain('451 4.7.1')
    expect(Date.parse(s.nextRetries[0].nextAttemptAt)).toBeGreaterThan(Date.now() + 200_000)

    const human = await cli(env, ['queue'])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain('deferred         1')
    expect(human.stdout).toContain('a@later.test')
    expect(human.stdout).not.toContain('hidden')

    const list = await cli(env, ['--json', 'queue', '--captured'])
    expect(list.code).toBe(0)
    const rows = JSON.parse(list.stdout) as Array<{ emailId: string; to: string; subject: string; kind: string }>
    expect(rows.find((r) => r.emailId === captured)).toMatchObject({ to: 'b@dest.test', subject: 'To b@dest.test', kind: 'outbound' })
    const raw = await cli(env, ['queue', '--captured', '--raw', captured])
    expect(raw.code).toBe(0)
    expect(raw.stdout).toContain('DKIM-Signature:')
    expect(raw.stdout).toContain(`Message-ID: <${captured}@${p.domain}>`)

    const unknown = await cli(env, ['queue', '--captured', '--raw', 'nope'])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('not found')
    const usage = await cli(env, ['queue', '--raw', captured])
    expect(usage.code).toBe(2)
    expect((await cli(env, ['queue', '--limit', '0'])).code).toBe(2)
  }, 60_000)
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
