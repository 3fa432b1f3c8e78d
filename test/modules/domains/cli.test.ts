import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { splitTxt, startTestDns, type TestDns } from '../../helpers/dns'

/** `mailctl domain add|verify|list` run as a real process against a SQLite data dir and the loopback DNS. */
let dns: TestDns
let dir: string
let env: Record<string, string>

/** Asynchronous: the DNS server answering the child runs in this process. */
async function cli(...args: string[]) {
  const p = Bun.spawn([process.execPath, 'cli/mailctl.ts', ...args], { env: { ...process.env, ...env }, cwd: join(import.meta.dir, '../../..'), stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, out, err }
}

beforeAll(async () => {
  dns = await startTestDns()
  dir = mkdtempSync(join(tmpdir(), 'mailctl-domain-cli-'))
  env = {
    MAILCTL_DATA_DIR: dir, DATABASE_URL: `sqlite://${join(dir, 'm.db')}`, MAILCTL_DNS_SERVERS: dns.server,
    MAILCTL_HOSTNAME: 'mx.cli.test', MAILCTL_LOG_LEVEL: 'error', MAILCTL_CONFIG: '', REDIS_URL: '',
  }
}, 60_000)
afterAll(async () => {
  await dns.close()
  rmSync(dir, { recursive: true, force: true })
}, 60_000)

test('add, verify and list a domain from the command line', async () => {
  expect((await cli('migrate')).code).toBe(0)
  const project = await cli('--json', 'project', 'create', '--name', 'clip')
  expect(project.code).toBe(0)

  const added = await cli('--json', 'domain', 'add', 'clip', 'Example-CLI.com')
  expect(added.err).toBe('')
  expect(added.code).toBe(0)
  const d = JSON.parse(added.out)
  expect(d).toMatchObject({ domain: 'example-cli.com', verified: false })
  expect(added.out).not.toContain('PRIVATE KEY')
  const dkim = d.records.find((r: { purpose: string }) => r.purpose === 'DKIM')

  const human = await cli('domain', 'verify', 'clip', 'example-cli.com')
  expect(human.code).toBe(0)
  expect(human.out).toContain('verified   no')
  expect(human.out).toMatch(/DKIM\s+TXT\s+\S+\._domainkey\.example-cli\.com\s+failed/)
  expect(human.out).toContain('missing: no TXT record')
  expect(human.out).toContain('bounce.example-cli.com')

  dns.set(dkim.name, [{ type: 'TXT', data: splitTxt(dkim.value) }])
  const verified = JSON.parse((await cli('--json', 'domain', 'verify', 'clip', d.id)).out)
  expect(verified.verified).toBe(true)

  const list = await cli('domain', 'list', 'clip')
  expect(list.code).toBe(0)
  expect(list.out).toMatch(/example-cli\.com\s+yes\s+DKIM:verified/)

  const dup = await cli('domain', 'add', 'clip', 'example-cli.com')
  expect(dup.code).toBe(1)
  expect(dup.err).toContain('CONFLICT')
  const bad = await cli('domain', 'add', 'clip', '10.0.0.1')
  expect(bad.code).toBe(1)
  expect(bad.err).toContain('VALIDATION_ERROR')
  const unknown = await cli('domain', 'verify', 'clip', 'nope.example')
  expect(unknown.code).toBe(1)
  expect(unknown.err).toContain('NOT_FOUND')
}, 60_000)
