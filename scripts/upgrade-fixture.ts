/**
 * Writes an upgrade fixture (test/fixtures/upgrade/<version>/): a SQLite data dir and a PostgreSQL dump made
 * by an earlier mailctl, checked out from this repository's history, plus manifest.json naming what is in
 * them. test/ops/upgrade.test.ts migrates every fixture with the current code and checks that everything is
 * still there and still works (docs/upgrades.md: "a fixture for every release").
 *
 *   git worktree add --detach /tmp/old <commit> && ln -s "$PWD/node_modules" /tmp/old/node_modules
 *   node_modules/.bin/bun scripts/upgrade-fixture.ts /tmp/old <version>
 *   git worktree remove --force /tmp/old
 *
 * The old version is driven only from outside, as an operator and a client would: its CLI (`project
 * create`, `domain add`) and its HTTP API (`serve` on a loopback port with MAILCTL_OUTBOUND=capture, so the
 * signed messages stay in its own database). Two things need the outside world and are written directly
 * instead: the domain's verified flag (DNS), and reading the captured messages (for their links and DKIM
 * signature). Needs pg_dump for the PostgreSQL half (BENCH-like PG_URL: the admin URL, default the test
 * server's).
 */
import { Database } from 'bun:sqlite'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { splitTxt, startTestDns } from '../test/helpers/dns'

const [oldTree, version] = process.argv.slice(2)
if (!oldTree || !version || !existsSync(join(oldTree, 'cli', 'mailctl.ts'))) {
  console.error('usage: bun scripts/upgrade-fixture.ts OLD_WORKTREE VERSION')
  process.exit(2)
}
const PG_ADMIN = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const OUT = join(import.meta.dir, '..', 'test', 'fixtures', 'upgrade', version)
const CLI = join(oldTree, 'cli', 'mailctl.ts')
const BUN = process.execPath
const PUBLIC_URL = 'http://localhost:3000'
/** PostgreSQL takes its keys from the settings: this one is the fixture's, written into its manifest. */
const PG_SECRET = 'upgrade-fixture-secret-not-for-production-0123456789'
const HOUR = 3_600_000

type Kind = 'sqlite' | 'pg'
type Json = Record<string, unknown>

function commitOf(tree: string): string {
  const r = Bun.spawnSync(['git', '-C', tree, 'rev-parse', 'HEAD'])
  return r.stdout.toString().trim()
}

async function run(args: string[], env: Record<string, string>): Promise<string> {
  const p = Bun.spawn([BUN, CLI, '--json', ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`mailctl ${args.join(' ')}: exit ${code}: ${err}`)
  return out
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') })
  const port = s.port ?? 0
  s.stop(true)
  return port
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(100)
  }
}

/** Direct reads and writes of the old store, for what needs the outside world (see the header). */
interface Raw { exec(q: string): Promise<void>; rows<T>(q: string): Promise<T[]>; close(): Promise<void> }
function rawStore(kind: Kind, url: string): Raw {
  if (kind === 'sqlite') {
    const db = new Database(url.replace(/^sqlite:\/\//, ''))
    return {
      async exec(q) { db.run(q) },
      async rows<T>(q: string) { return db.query(q).all() as T[] },
      async close() { db.close() },
    }
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  return {
    async exec(q) { await sql.unsafe(q) },
    async rows<T>(q: string) { return (await sql.unsafe(q)) as unknown as T[] },
    async close() { await sql.end() },
  }
}

async function generate(kind: Kind, work: string): Promise<Json> {
  const dns = await startTestDns()
  const dataDir = join(work, `data-${kind}`)
  mkdirSync(dataDir, { recursive: true })
  let databaseUrl = `sqlite://${join(dataDir, 'mailctl.db')}`
  let dbName = ''
  if (kind === 'pg') {
    dbName = `mailctl_fixture_${Date.now().toString(36)}`
    const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE ${dbName}`)
    await admin.end()
    const u = new URL(PG_ADMIN)
    u.pathname = `/${dbName}`
    databaseUrl = u.toString()
  }
  const port = await freePort()
  const env: Record<string, string> = {
    MAILCTL_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, MAILCTL_PUBLIC_URL: PUBLIC_URL, MAILCTL_HOSTNAME: 'mx.fixture.test',
    MAILCTL_OUTBOUND: 'capture', MAILCTL_DNS_SERVERS: dns.server, MAILCTL_LOG_LEVEL: 'warn', MAILCTL_HTTP_PORT: String(port), MAILCTL_HTTP_HOST: '127.0.0.1',
    ...(kind === 'pg' ? { MAILCTL_SECRET: PG_SECRET } : {}),
  }
  await run(['migrate'], env)
  const project = JSON.parse(await run(['project', 'create', '--name', 'Upgrade fixture'], env)) as { id: string; publicKey: string; secretKey: string }
  const domain = JSON.parse(await run(['domain', 'add', project.id, 'fixture.test'], env)) as { id: string; records: Array<{ purpose: string; type: string; name: string; value: string }> }
  const dkim = domain.records.find((r) => r.purpose === 'DKIM')
  if (!dkim) throw new Error('domain add printed no DKIM record')
  // The domain is verified the old version's own way, through a DNS server on loopback publishing its records
  // (the background re-check of a serving node would otherwise unverify it).
  for (const r of domain.records) {
    if (r.type === 'TXT') dns.add(r.name, { type: 'TXT', data: splitTxt(r.value) })
    else if (r.type === 'MX') dns.add(r.name, { type: 'MX', exchange: r.value, priority: 10 })
  }
  const verified = JSON.parse(await run(['domain', 'verify', project.id, 'fixture.test'], env)) as { verified: boolean }
  if (!verified.verified) throw new Error(`the fixture's domain did not verify: ${JSON.stringify(verified)}`)

  const server = Bun.spawn([BUN, CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'inherit', stderr: 'inherit' })
  const base = `http://127.0.0.1:${port}`
  const api = async (method: string, path: string, body?: unknown, key = project.secretKey): Promise<Json> => {
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
    return text ? JSON.parse(text) as Json : {}
  }
  try {
    await until('the old server', async () => (await fetch(`${base}/health`).catch(() => null))?.ok)
    const from = 'hello@fixture.test'
    const contacts: Json[] = []
    for (const [i, plan] of ['pro', 'free', 'pro', 'team'].entries()) {
      contacts.push(await api('POST', '/contacts', { email: `person${i}@example.com`, subscribed: true, data: { firstName: `Person${i}`, plan, score: i * 10 } }))
    }
    contacts.push(await api('POST', '/contacts', { email: 'optedout@example.com', subscribed: false, data: { plan: 'free' } }))
    const transactional = await api('POST', '/templates', { name: 'Receipt', subject: 'Your receipt, {{firstName}}', body: '<p>Thanks {{firstName}}. <a href="https://example.com/orders">Your orders</a></p>', from, type: 'TRANSACTIONAL' })
    const marketing = await api('POST', '/templates', { name: 'Newsletter', subject: 'News for {{firstName}}', body: '<p>Hello {{firstName}}, read <a href="https://example.com/news">the news</a>.</p>', from, type: 'MARKETING' })
    const segment = await api('POST', '/segments', { name: 'Pro plan', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }, trackMembership: true })
    const suppression = await api('POST', '/suppressions', { email: 'bounced@example.com' })
    const webhook = await api('POST', '/webhooks/endpoints', { url: 'https://hooks.example.com/mailctl', eventTypes: ['email.open', 'email.click'], description: 'fixture endpoint', enabled: false })

    // A transactional email with a link: delivered (captured), then opened and clicked through its links.
    const sent = await api('POST', '/v1/send', { to: 'person0@example.com', template: transactional.id, data: { firstName: 'Person0' } })
    const emailId = ((sent.data as Json).emails as Array<{ email: string }>)[0].email
    // A campaign to the segment, sent now; another to everyone, scheduled an hour ahead.
    const campaignBody = (name: string, extra: Json) => ({ name, subject: `${name} for {{firstName}}`, body: '<p>Hi {{firstName}}, see <a href="https://example.com/sale">the sale</a>.</p>', from, type: 'MARKETING', ...extra })
    const sentCampaign = (await api('POST', '/campaigns', campaignBody('Spring sale', { audienceType: 'SEGMENT', segmentId: segment.id }))).data as Json
    await api('POST', `/campaigns/${sentCampaign.id}/send`, {})
    const scheduledCampaign = (await api('POST', '/campaigns', campaignBody('Summer sale', { audienceType: 'ALL' }))).data as Json
    const scheduledFor = new Date(Date.now() + HOUR).toISOString()
    await api('POST', `/campaigns/${scheduledCampaign.id}/send`, { scheduledFor })

    // A workflow: signup -> DELAY 1 hour -> SEND_EMAIL (newsletter template); two signups leave two executions waiting.
    const wf = await api('POST', '/workflows', { name: 'Welcome', eventName: 'signup' })
    const steps = wf.steps as Array<{ id: string }>
    const delay = await api('POST', `/workflows/${wf.id}/steps`, { type: 'DELAY', config: { amount: 1, unit: 'hours' }, name: 'One hour' })
    const mail = await api('POST', `/workflows/${wf.id}/steps`, { type: 'SEND_EMAIL', config: { templateId: marketing.id }, name: 'Welcome mail' })
    await api('POST', `/workflows/${wf.id}/transitions`, { fromStepId: steps[0].id, toStepId: delay.id })
    await api('POST', `/workflows/${wf.id}/transitions`, { fromStepId: delay.id, toStepId: mail.id })
    await api('PATCH', `/workflows/${wf.id}`, { enabled: true })
    for (const who of ['person1@example.com', 'person2@example.com']) {
      await api('POST', '/v1/track', { email: who, event: 'signup', data: { source: 'fixture' } }, project.publicKey)
    }
    await api('POST', '/v1/track', { email: 'person3@example.com', event: 'order.placed', data: { amount: 42 } }, project.publicKey)

    const executions = await until('two waiting executions', async () => {
      const list = (await api('GET', `/workflows/${wf.id}/executions?limit=100`)).data as Array<{ id: string; status: string }>
      return list.length === 2 && list.every((e) => e.status === 'WAITING') ? list : null
    })
    await until('the sent campaign', async () => (await api('GET', `/campaigns/${sentCampaign.id}`)).status === 'SENT')

    // The captured messages: the transactional one's open pixel and click link, a campaign message's unsubscribe link.
    const store = rawStore(kind, databaseUrl)
    const captured = await until('captured messages', async () => {
      const rows = await store.rows<{ to_address: string; subject: string; raw: string | null }>(`SELECT to_address, subject, raw FROM mail_capture WHERE kind = 'outbound'`)
      return rows.some((r) => r.subject.startsWith('Your receipt')) && rows.some((r) => r.subject.startsWith('Spring sale')) ? rows : null
    })
    await store.close()
    const unfold = (s: string) => s.replace(/=\r?\n/g, '').replace(/=3D/g, '=')
    const receipt = unfold(captured.find((r) => r.subject.startsWith('Your receipt'))?.raw ?? '')
    const openUrl = receipt.match(/https?:\/\/[^"'\s>]*\/t\/o\/[^"'\s>]+/)?.[0]
    const clickUrl = receipt.match(/https?:\/\/[^"'\s>]*\/t\/c\/[^"'\s>]+/)?.[0]
    const campaignMessage = captured.find((r) => r.subject.startsWith('Spring sale') && r.to_address !== 'person0@example.com')
    if (!campaignMessage) throw new Error('no campaign message captured')
    const unsubscribeUrl = (campaignMessage.raw ?? '').replace(/\r?\n[ \t]+/g, ' ').match(/List-Unsubscribe:[^\n]*<(https?:\/\/[^>]+)>/i)?.[1]
    if (!openUrl || !clickUrl || !unsubscribeUrl) throw new Error(`links not found: open ${openUrl}, click ${clickUrl}, unsubscribe ${unsubscribeUrl}`)
    // Opened and clicked with the old version: email.open and email.click events.
    await fetch(openUrl.replace(PUBLIC_URL, base))
    await fetch(clickUrl.replace(PUBLIC_URL, base), { redirect: 'manual' })
    await until('the open and click events', async () => {
      const e = await api('GET', `/emails/${emailId}`)
      return e.status === 'CLICKED' ? e : null
    })
    await Bun.sleep(1500)

    return {
      project, from,
      domain: { id: domain.id, name: 'fixture.test', dkimRecordName: dkim.name, dkimRecord: dkim.value },
      contacts: contacts.map((c) => ({ id: c.id, email: c.email, subscribed: c.subscribed })),
      templates: [transactional.id, marketing.id], segment: segment.id, suppression: (suppression.email ?? 'bounced@example.com'), webhook: webhook.id,
      email: { id: emailId, to: 'person0@example.com' },
      campaigns: { sent: sentCampaign.id, scheduled: scheduledCampaign.id, scheduledFor },
      workflow: { id: wf.id, executions: executions.map((e) => e.id) },
      links: { open: openUrl, click: clickUrl, clickTarget: 'https://example.com/orders', unsubscribe: unsubscribeUrl, unsubscribeContact: campaignMessage.to_address },
      ...(kind === 'pg' ? { secret: PG_SECRET, database: dbName } : {}),
    }
  } finally {
    server.kill('SIGTERM')
    await server.exited
    await dns.close()
  }
}

const work = mkdtempSync(join(tmpdir(), 'mailctl-fixture-'))
try {
  rmSync(OUT, { recursive: true, force: true })
  mkdirSync(OUT, { recursive: true })
  const commit = commitOf(oldTree)
  const sqlite = await generate('sqlite', work)
  // The data dir as the old version left it, its WAL folded in: the database and the key files.
  const dataDir = join(work, 'data-sqlite')
  const db = new Database(join(dataDir, 'mailctl.db'))
  db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  db.run('VACUUM')
  db.close()
  mkdirSync(join(OUT, 'sqlite'))
  for (const f of ['mailctl.db', 'secret.key', 'dkim.key']) cpSync(join(dataDir, f), join(OUT, 'sqlite', f))
  writeFileSync(join(OUT, 'sqlite', 'manifest.json'), `${JSON.stringify({ version, commit, store: 'sqlite', publicUrl: PUBLIC_URL, createdAt: new Date().toISOString(), ...sqlite }, null, 2)}\n`)

  const pg = await generate('pg', work)
  const u = new URL(PG_ADMIN)
  u.pathname = `/${pg.database}`
  const dump = Bun.spawnSync(['pg_dump', '--no-owner', '--no-privileges', '--column-inserts', '--no-comments', u.toString()])
  if (dump.exitCode !== 0) throw new Error(`pg_dump: ${dump.stderr.toString()}`)
  mkdirSync(join(OUT, 'pg'))
  writeFileSync(join(OUT, 'pg', 'dump.sql'), dump.stdout)
  const { database: _db, ...rest } = pg
  writeFileSync(join(OUT, 'pg', 'manifest.json'), `${JSON.stringify({ version, commit, store: 'pg', publicUrl: PUBLIC_URL, createdAt: new Date().toISOString(), ...rest }, null, 2)}\n`)
  const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} })
  await admin.unsafe(`DROP DATABASE IF EXISTS ${pg.database} WITH (FORCE)`)
  await admin.end()
  console.log(`fixture written: ${OUT} (mailctl ${version}, commit ${commit})`)
} finally {
  rmSync(work, { recursive: true, force: true })
}
