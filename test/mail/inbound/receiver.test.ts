import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Deps } from '../../../src/deps'
import { Worker } from '../../../src/jobs/queue'
import type { Logger } from '../../../src/log'
import { parseArf } from '../../../src/mail/inbound/arf'
import { parseDsn } from '../../../src/mail/inbound/dsn'
import { inboundJobs } from '../../../src/modules/inbound/jobs'
import { INBOUND_JOB } from '../../../src/modules/inbound/service'
import { startInbound, type SmtpListener } from '../../../src/smtp/receiver'
import { verpAddress } from '../../../src/mail/outbound/verp'
import { returnPathDomain } from '../../../src/modules/domains/service'
import { forEachStore } from '../../helpers/env'
import { startTestDns } from '../../helpers/dns'
import { verifiedDomain } from '../../modules/emails/fixture'
import { contactEvents, contactOf, emailRow, eventsOf, queueTestEmail, rnd, suppressionOf } from '../../modules/tracking/fixture'
import { must } from '../../helpers/must'

/**
 * The inbound receiver over real SMTP: nodemailer delivers real-format DSN and ARF messages (Gmail,
 * Outlook, Yahoo) to the receiver on loopback; the processing job changes the right email and contact.
 */

const FIXTURES = join(import.meta.dir, '../../fixtures/inbound')
const readFixture = (name: string) => readFileSync(join(FIXTURES, name), 'latin1')
const dns = await startTestDns()
afterAll(() => dns.close())

interface LogLine { level: string; msg: string; fields: Record<string, unknown> }
function capturingLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => { lines.push({ level, msg, fields }) }
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log }
  return log
}

interface Sent { ok: true; response: string }
interface Refused { ok: false; code: number | undefined; response: string }

/** Delivers `raw` with nodemailer as a remote MTA would: given envelope (null sender for bounces). */
async function deliver(port: number, envelope: { from: string; to: string[] }, raw: string | Buffer): Promise<Sent | Refused> {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: 'mta.remote.test' })
  try {
    const info = await t.sendMail({ envelope, raw })
    return { ok: true, response: String(info.response) }
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string }
    return { ok: false, code: e.responseCode, response: e.response ?? e.message }
  } finally {
    t.close()
  }
}

forEachStore('inbound SMTP receiver', (env) => {
  let deps: Deps
  let server: SmtpListener
  let worker: Worker
  const logs: LogLine[] = []
  let projectId = ''
  let domain = ''

  beforeAll(async () => {
    deps = { ...env.deps, log: capturingLogger(logs) }
    const p = await env.project()
    projectId = p.id
    domain = `acme-${rnd()}.test`
    await verifiedDomain(env, dns, projectId, domain)
    server = must(await startInbound(deps, { port: 0, host: '127.0.0.1' }), 'the inbound server')
    env.onStop(() => server.close())
    worker = new Worker(deps, inboundJobs)
  })

  const verp = (emailId: string) => verpAddress(deps, emailId, returnPathDomain(domain))

  /** A fixture with its placeholder email id, VERP address and Message-ID replaced by a real email's. */
  function personalise(name: string, email: { id: string; messageId: string }): string {
    let text = readFixture(name)
    const id = /bounce\+([0-9a-f-]{36})@bounces\.acme\.test/.exec(text)?.[1]
    if (id) {
      text = text.split(`bounce+${id}@bounces.acme.test`).join(verp(email.id))
      text = text.split(`<${id}@acme.test>`).join(email.messageId)
    }
    return text
  }

  function recipientOf(name: string): string {
    const raw = Buffer.from(readFixture(name), 'latin1')
    const d = parseDsn(raw)
    if (d.kind === 'dsn') return d.recipients[0].address
    const a = parseArf(raw)
    if (a.kind === 'arf' && a.originalRecipient) return a.originalRecipient
    // Outlook's JMRP redacts the recipient: the report is matched by VERP and Message-ID alone.
    if (a.kind === 'arf') return `complainer.${rnd()}@outlook.com`
    throw new Error(`no recipient in ${name}`)
  }

  async function inboundRows() {
    const m = env.store.t.inboundMessages
    return env.store.db.select().from(m).orderBy(m.receivedAt)
  }

  /** Sends a fixture about a fresh email and runs the processing job. */
  async function bounceOf(name: string, status = 'DELIVERED') {
    const email = await queueTestEmail(env, projectId, { to: recipientOf(name), from: `hello@${domain}`, status })
    const res = await deliver(server.port, { from: '', to: [verp(email.id)] }, personalise(name, email))
    expect(res.ok).toBe(true)
    await worker.drain()
    return email
  }

  const DSNS: Array<{ name: string; type: 'hard' | 'soft'; kind: string; status: string; suppressed: boolean }> = [
    { name: 'dsn/gmail-unknown-user.eml', type: 'hard', kind: 'unknown-user', status: '5.1.1', suppressed: true },
    { name: 'dsn/outlook-unknown-user.eml', type: 'hard', kind: 'unknown-user', status: '5.1.10', suppressed: true },
    { name: 'dsn/yahoo-two-recipients.eml', type: 'hard', kind: 'unknown-user', status: '5.0.0', suppressed: true },
    { name: 'dsn/yahoo-legacy-failure-notice.eml', type: 'hard', kind: 'unknown-user', status: '5.0.0', suppressed: true },
    { name: 'dsn/gmail-policy-block.eml', type: 'hard', kind: 'policy', status: '5.7.26', suppressed: false },
    { name: 'dsn/outlook-policy-block.eml', type: 'hard', kind: 'policy', status: '5.7.1', suppressed: false },
    // Action: failed bounces the email whatever the code; a full mailbox or a relay's expired 4.x.x is soft, never suppressed.
    { name: 'dsn/postfix-mailbox-full.eml', type: 'soft', kind: 'mailbox-full', status: '5.2.2', suppressed: false },
    { name: 'dsn/postfix-expired-4xx.eml', type: 'soft', kind: 'network', status: '4.4.1', suppressed: false },
  ]

  for (const c of DSNS) {
    test(`${c.name}: ${c.type} bounce (${c.kind})${c.suppressed ? ', address suppressed' : ''}`, async () => {
      const email = await bounceOf(c.name)
      const row = await emailRow(env, email.id)
      const [ev] = await eventsOf(env, email.id, 'email.bounce')
      expect(ev.data).toMatchObject({
        emailId: email.id, messageId: email.messageId, bounceType: c.type, bounceKind: c.kind, enhancedCode: c.status,
        recipient: email.toAddress, suppressed: c.suppressed, source: 'dsn',
      })
      expect(ev.contactId).toBe(email.contactId)
      expect(row.status).toBe('BOUNCED')
      expect(row.bounceType).toBe(c.type)
      expect(row.bouncedAt).not.toBeNull()
      expect(await eventsOf(env, email.id, 'email.delayed')).toHaveLength(0)
      const s = await suppressionOf(env, projectId, email.toAddress)
      if (c.suppressed) expect(s).toMatchObject({ reason: 'bounce', emailId: email.id })
      else expect(s).toBeNull()
      const inbound = must((await inboundRows()).find((r) => r.emailId === email.id), 'the inbound row')
      expect(inbound).toMatchObject({ status: 'processed', kind: 'dsn', projectId, mailFrom: '' })
      expect(inbound.rcptTo).toEqual([verp(email.id)])
    })
  }

  test('dsn/yahoo-deferred.eml (Action: delayed 4.7.0): email.delayed, no bounce; the status, counters and suppressions stay', async () => {
    const email = await bounceOf('dsn/yahoo-deferred.eml')
    const row = await emailRow(env, email.id)
    expect(row.status).toBe('DELIVERED')
    expect(row.bounceType).toBeNull()
    expect(row.bouncedAt).toBeNull()
    expect(await eventsOf(env, email.id, 'email.bounce')).toHaveLength(0)
    const [ev] = await eventsOf(env, email.id, 'email.delayed')
    expect(ev.data).toMatchObject({
      emailId: email.id, messageId: email.messageId, enhancedCode: '4.7.0', smtpCode: 421, recipient: email.toAddress,
      reportingMta: 'relay.acme.test', remoteMta: 'mta7.am0.yahoodns.net', willRetryUntil: 'Fri, 14 Jun 2024 07:55:00 +0000 (UTC)',
      source: 'dsn', action: 'delayed',
    })
    expect(ev.contactId).toBe(email.contactId)
    expect(await suppressionOf(env, projectId, email.toAddress)).toBeNull()
    const inbound = must((await inboundRows()).find((r) => r.emailId === email.id), 'the inbound row')
    expect(inbound).toMatchObject({ status: 'processed', kind: 'dsn' })
    expect(inbound.detail).toContain('email.delayed')
  })

  test('a repeated mailbox-full DSN is a duplicate; a later 5.1.1 DSN still makes the bounce hard and suppresses', async () => {
    const email = await bounceOf('dsn/postfix-mailbox-full.eml')
    await deliver(server.port, { from: '', to: [verp(email.id)] }, personalise('dsn/postfix-mailbox-full.eml', email))
    await worker.drain()
    expect(await eventsOf(env, email.id, 'email.bounce')).toHaveLength(1)
    const hard = personalise('dsn/postfix-mailbox-full.eml', email).replace('Status: 5.2.2', 'Status: 5.1.1').split('552 5.2.2').join('550 5.1.1')
    await deliver(server.port, { from: '', to: [verp(email.id)] }, hard)
    await worker.drain()
    expect(await eventsOf(env, email.id, 'email.bounce')).toHaveLength(2)
    expect(await emailRow(env, email.id)).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
    expect(await suppressionOf(env, projectId, email.toAddress)).toMatchObject({ reason: 'bounce', emailId: email.id })
  })

  const ARFS = ['arf/yahoo-abuse.eml', 'arf/outlook-jmrp.eml', 'arf/rfc5965-generic-fraud.eml']
  for (const name of ARFS) {
    test(`${name}: complaint -> COMPLAINED, address suppressed, contact unsubscribed`, async () => {
      const email = await queueTestEmail(env, projectId, { to: recipientOf(name), from: `news@${domain}`, status: 'OPENED' })
      expect((await contactOf(env, must(email.contactId, 'the contact id'))).subscribed).toBe(true)
      // Feedback loops write to an address of the bounce domain, not to the VERP address itself.
      const res = await deliver(server.port, { from: '', to: [`fbl@${returnPathDomain(domain)}`] }, personalise(name, email))
      expect(res.ok).toBe(true)
      await worker.drain()
      const row = await emailRow(env, email.id)
      expect(row.status).toBe('COMPLAINED')
      expect(row.complainedAt).not.toBeNull()
      const [ev] = await eventsOf(env, email.id, 'email.complaint')
      expect(ev.data).toMatchObject({ emailId: email.id, suppressed: true, source: 'arf' })
      expect(typeof ev.data.feedbackType).toBe('string')
      expect(await suppressionOf(env, projectId, email.toAddress)).toMatchObject({ reason: 'complaint', emailId: email.id })
      expect((await contactOf(env, must(email.contactId, 'the contact id'))).subscribed).toBe(false)
      expect(await contactEvents(env, must(email.contactId, 'the contact id'), 'contact.unsubscribed')).toBe(1)
    })
  }

  test('a repeated bounce or complaint is a duplicate: no second event, status kept', async () => {
    const email = await bounceOf('dsn/gmail-unknown-user.eml')
    await deliver(server.port, { from: '', to: [verp(email.id)] }, personalise('dsn/gmail-unknown-user.eml', email))
    await worker.drain()
    expect(await eventsOf(env, email.id, 'email.bounce')).toHaveLength(1)
    const rows = (await inboundRows()).filter((r) => r.emailId === email.id)
    expect(rows).toHaveLength(2)
    expect(rows[1].detail).toContain('duplicate')
  })

  test('status only moves forward: a bounce after a complaint keeps COMPLAINED (the event is still recorded)', async () => {
    const email = await bounceOf('dsn/gmail-policy-block.eml', 'COMPLAINED')
    expect((await emailRow(env, email.id)).status).toBe('COMPLAINED')
    expect(await eventsOf(env, email.id, 'email.bounce')).toHaveLength(1)
  })

  test('a bounce without a usable VERP address is matched by the original Message-ID', async () => {
    const email = await queueTestEmail(env, projectId, { to: 'no.such.person.4711@gmail.com', from: `hello@${domain}`, status: 'SENT' })
    const text = personalise('dsn/gmail-unknown-user.eml', email).split(verp(email.id)).join(`postmaster@${returnPathDomain(domain)}`)
    expect((await deliver(server.port, { from: '', to: [`postmaster@${returnPathDomain(domain)}`] }, text)).ok).toBe(true)
    await worker.drain()
    expect((await emailRow(env, email.id)).status).toBe('BOUNCED')
  })

  test('a bounce to a forged VERP address (wrong tag) is stored and ignored; the email is untouched', async () => {
    const email = await queueTestEmail(env, projectId, { to: 'no.such.person.4711@gmail.com', from: `hello@${domain}`, status: 'SENT' })
    const forged = verp(email.id).replace(/\.([0-9a-f]{10})@/, '.0000000000@')
    const text = readFixture('dsn/gmail-unknown-user.eml').replace(/bounce\+[0-9a-f-]{36}@bounces\.acme\.test/g, forged)
    expect((await deliver(server.port, { from: '', to: [forged] }, text)).ok).toBe(true)
    await worker.drain()
    expect((await emailRow(env, email.id)).status).toBe('SENT')
    const last = must((await inboundRows()).at(-1), 'an inbound row')
    expect(last).toMatchObject({ status: 'ignored', kind: 'dsn', emailId: null })
  })

  test('ordinary mail for a verified domain -> email.received, linked to the email it replies to and its contact', async () => {
    const email = await queueTestEmail(env, projectId, { to: 'reader@example.org', from: `hello@${domain}`, status: 'DELIVERED' })
    const text = readFixture('other/plain-reply.eml').replace('<0190f3a3-1111-7aaa-8bbb-000000000002@acme.test>', email.messageId).replace('hello@acme.test', `hello@${domain}`)
    const res = await deliver(server.port, { from: 'reader@example.org', to: [`hello@${domain}`] }, text)
    expect(res.ok).toBe(true)
    await worker.drain()
    const [ev] = await eventsOf(env, email.id, 'email.received')
    expect(ev.contactId).toBe(email.contactId)
    expect(ev.data).toMatchObject({ from: 'reader@example.org', to: [`hello@${domain}`], subject: 'Re: Welcome', inReplyTo: email.messageId, emailId: email.id, autoSubmitted: false })
    expect(String(ev.data.snippet)).toContain("I'm not a bounce")
    // It shows in the activity feed.
    const p = await env.request('GET', '/activity?type=email.received', { key: (await keyOf(projectId)) })
    expect(p.status).toBe(200)
    expect(p.body.data.some((i: { type: string; emailId: string }) => i.type === 'email.received' && i.emailId === email.id)).toBe(true)
  })

  /** A secret key for the project (rotated: the original is not stored). */
  const keys = new Map<string, string>()
  async function keyOf(id: string): Promise<string> {
    if (!keys.has(id)) {
      const { rotateKeys } = await import('../../../src/modules/projects/service')
      keys.set(id, (await rotateKeys(env.store, id)).secretKey)
    }
    return must(keys.get(id), 'the secret key')
  }

  test('mail for a verified domain from a stranger: email.received without a contact', async () => {
    const res = await deliver(server.port, { from: 'stranger@elsewhere.test', to: [`sales@${domain}`] }, `From: Stranger <stranger@elsewhere.test>\r\nTo: sales@${domain}\r\nSubject: Hello there\r\n\r\nA question.\r\n`)
    expect(res.ok).toBe(true)
    await worker.drain()
    const e = env.store.t.events
    const [ev] = await env.store.db.select().from(e).where(and(eq(e.projectId, projectId), eq(e.name, 'email.received'))).orderBy(e.createdAt)
      .then((rows) => rows.filter((r) => r.data.from === 'stranger@elsewhere.test'))
    expect(ev.contactId).toBeNull()
    expect(ev.emailId).toBeNull()
    expect(ev.data.subject).toBe('Hello there')
  })

  test('a NUL in a received subject or a bounce\'s diagnostic becomes U+FFFD: recorded the same on both stores, not a job PostgreSQL refuses', async () => {
    const nul = Buffer.from('a\u0000b').toString('base64')
    const res = await deliver(server.port, { from: 'nul@elsewhere.test', to: [`nul@${domain}`] }, `From: =?UTF-8?B?${nul}?= <nul@elsewhere.test>\r\nTo: nul@${domain}\r\nSubject: =?UTF-8?B?${nul}?=\r\n\r\nText with a\u0000NUL.\r\n`)
    expect(res.ok).toBe(true)
    const email = await queueTestEmail(env, projectId, { to: 'nul@remote.test', from: `hello@${domain}`, status: 'DELIVERED' })
    const qmail = `From: MAILER-DAEMON@mx.remote.test\r\nTo: ${verp(email.id)}\r\nSubject: failure notice\r\n\r\n<nul@remote.test>:\r\n550 5.1.1 no such\u0000user\r\n`
    expect((await deliver(server.port, { from: '', to: [verp(email.id)] }, qmail)).ok).toBe(true)
    await worker.drain()
    const e = env.store.t.events
    const [received] = await env.store.db.select().from(e).where(and(eq(e.projectId, projectId), eq(e.name, 'email.received')))
      .then((all) => all.filter((r) => r.data.from === 'nul@elsewhere.test'))
    expect(received.data).toMatchObject({ subject: 'a\uFFFDb', snippet: 'Text with a\uFFFDNUL.' })
    const [bounce] = await eventsOf(env, email.id, 'email.bounce')
    expect(bounce.data).toMatchObject({ bounceType: 'hard', enhancedCode: '5.1.1', recipient: 'nul@remote.test' })
    expect(JSON.stringify(bounce.data)).not.toContain('\\u0000')
    expect((await emailRow(env, email.id)).status).toBe('BOUNCED')
  })

  test('hostile mail (1 MB of "<" as text/html, a 1 MB "<a@a@…" bounce line) is accepted and processed while HTTP and SMTP keep answering', async () => {
    const html = `From: Mallory <mallory@elsewhere.test>\r\nTo: info@${domain}\r\nSubject: lt\r\nContent-Type: text/html\r\n\r\n<p>Hello</p>${'<'.repeat(1024 * 1024)}\r\n`
    expect((await deliver(server.port, { from: 'mallory@elsewhere.test', to: [`info@${domain}`] }, html)).ok).toBe(true)
    const email = await queueTestEmail(env, projectId, { to: 'gone@remote.test', from: `hello@${domain}`, status: 'DELIVERED' })
    const qmail = `From: MAILER-DAEMON@mx.remote.test\r\nTo: ${verp(email.id)}\r\nSubject: failure notice\r\n\r\n<gone@remote.test>:\r\n550 5.1.1 user unknown\r\n\r\n<${'a@'.repeat(512 * 1024)}\r\n`
    expect((await deliver(server.port, { from: '', to: [verp(email.id)] }, qmail)).ok).toBe(true)
    // While the job reads them, the same process answers HTTP and takes more mail.
    const processing = worker.drain()
    const health = await env.request('GET', '/health')
    expect(health.status).toBe(200)
    expect((await deliver(server.port, { from: 'x@elsewhere.test', to: [`info@${domain}`] }, 'Subject: meanwhile\r\n\r\nx\r\n')).ok).toBe(true)
    await processing
    await worker.drain()
    const rows = await inboundRows()
    const htmlRow = must(rows.find((r) => r.size > 1024 * 1024 && r.mailFrom === 'mallory@elsewhere.test'), 'the large HTML message')
    expect(htmlRow).toMatchObject({ status: 'processed', kind: 'other', projectId })
    const e = env.store.t.events
    const [received] = await env.store.db.select().from(e).where(and(eq(e.projectId, projectId), eq(e.name, 'email.received')))
      .then((all) => all.filter((r) => r.data.inboundId === htmlRow.id))
    expect(received.data).toMatchObject({ from: 'mallory@elsewhere.test', subject: 'lt', snippet: `Hello ${'<'.repeat(494)}` })
    const [bounce] = await eventsOf(env, email.id, 'email.bounce')
    expect(bounce.data).toMatchObject({ bounceType: 'hard', enhancedCode: '5.1.1', recipient: 'gone@remote.test', source: 'dsn' })
    expect((await emailRow(env, email.id)).status).toBe('BOUNCED')
  }, 30_000)

  test('malformed messages are stored exactly and logged, never a crash; the receiver keeps working', async () => {
    const names = ['malformed/empty.eml', 'malformed/binary-junk.eml', 'malformed/no-headers.eml', 'malformed/report-without-status-part.eml',
      'malformed/status-without-recipient.eml', 'malformed/truncated-base64-status.eml', 'malformed/bounce-text-without-recipient.eml',
      'malformed/arf-without-feedback-type.eml', 'malformed/arf-report-without-feedback-part.eml']
    for (const name of names) {
      const raw = readFileSync(join(FIXTURES, name))
      const res = await deliver(server.port, { from: '', to: [`postmaster@${returnPathDomain(domain)}`] }, raw)
      expect(res.ok).toBe(true)
    }
    await worker.drain()
    const rows = (await inboundRows()).slice(-names.length)
    expect(rows).toHaveLength(names.length)
    for (const r of rows) {
      expect(r.status).toBe('failed')
      expect(r.kind).toBe('unparseable')
      expect(String(r.detail).length).toBeGreaterThan(5)
    }
    // Stored exactly as it came over SMTP (line ends as the client sent them: CRLF).
    const text = readFileSync(join(FIXTURES, 'malformed/no-headers.eml'), 'latin1').replace(/\r?\n/g, '\r\n')
    expect(rows.some((r) => Buffer.from(r.raw).toString('latin1') === text)).toBe(true)
    expect(rows.some((r) => r.size <= 2)).toBe(true) // the empty message (a client may send one line end)
    const warned = logs.filter((l) => l.msg === 'inbound message unreadable: stored, not processed')
    expect(warned.length).toBeGreaterThanOrEqual(names.length)
    expect(warned.at(-1)?.fields.detail).toBeTruthy()
    // Still serving.
    expect((await bounceOf('dsn/gmail-unknown-user.eml')).id).toBeTruthy()
  })

  test('250 only after the message is durably stored: the row and its job exist before any processing', async () => {
    const res = await deliver(server.port, { from: 'x@elsewhere.test', to: [`info@${domain}`] }, 'Subject: durable\r\n\r\nbody\r\n')
    expect(res.ok).toBe(true)
    const id = /queued as ([0-9a-f-]{36})/.exec(res.response)?.[1]
    expect(id).toBeTruthy()
    const m = env.store.t.inboundMessages
    const [row] = await env.store.db.select().from(m).where(eq(m.id, must(id, 'a queued id')))
    expect(row).toMatchObject({ status: 'queued', projectId, rcptTo: [`info@${domain}`], mailFrom: 'x@elsewhere.test', remoteAddress: '127.0.0.1', helo: 'mta.remote.test' })
    expect(Buffer.from(row.raw).toString()).toContain('Subject: durable')
    const j = env.store.t.jobs
    const jobs = await env.store.db.select().from(j).where(eq(j.name, INBOUND_JOB))
    expect(jobs.some((x) => x.payload.inboundId === id && x.status === 'queued')).toBe(true)
    await worker.drain()
    const [done] = await env.store.db.select().from(m).where(eq(m.id, must(id, 'a queued id')))
    expect(done.status).toBe('processed')
  })

  test('no open relay: foreign domains refused at RCPT with 550 5.7.1; unknown local users and bad VERP tags with 550 5.1.1', async () => {
    const foreign = await deliver(server.port, { from: 'spammer@bad.test', to: ['victim@gmail.com'] }, 'Subject: x\r\n\r\nx\r\n')
    expect(foreign).toMatchObject({ ok: false, code: 550 })
    expect((foreign as Refused).response).toContain('5.7.1')
    const pendingDomain = `pending-${rnd()}.test`
    const { createDomain } = await import('../../../src/modules/domains/service')
    const { ctxFor } = await import('../../../src/deps')
    await createDomain(ctxFor(env.deps, projectId, { kind: 'cli' }), { projectId, domain: pendingDomain })
    const pending = await deliver(server.port, { from: 'a@b.test', to: [`info@${pendingDomain}`] }, 'Subject: x\r\n\r\nx\r\n')
    expect(pending).toMatchObject({ ok: false, code: 550 })
    // ...but the bounce subdomain of a registered (even pending) domain is served.
    expect((await deliver(server.port, { from: '', to: [`anything@${returnPathDomain(pendingDomain)}`] }, 'Subject: x\r\n\r\nx\r\n')).ok).toBe(true)
    const host = env.config.hostname
    const unknown = await deliver(server.port, { from: '', to: [`nobody@${host}`] }, 'Subject: x\r\n\r\nx\r\n')
    expect(unknown).toMatchObject({ ok: false, code: 550 })
    expect((unknown as Refused).response).toContain('5.1.1')
    const id = Bun.randomUUIDv7()
    const good = verpAddress(deps, id, host)
    expect((await deliver(server.port, { from: '', to: [good] }, 'Subject: x\r\n\r\nx\r\n')).ok).toBe(true)
    const bad = await deliver(server.port, { from: '', to: [good.replace(/\.([0-9a-f]{10})@/, '.ffffffffff@')] }, 'Subject: x\r\n\r\nx\r\n')
    expect(bad).toMatchObject({ ok: false, code: 550 })
    expect((await deliver(server.port, { from: '', to: [`postmaster@${host}`] }, 'Subject: x\r\n\r\nx\r\n')).ok).toBe(true)
    // A mixed envelope: the served recipient is accepted, the foreign one refused.
    const mixed = await deliver(server.port, { from: 'a@b.test', to: [`info@${domain}`, 'other@gmail.com'] }, 'Subject: mixed\r\n\r\nx\r\n')
    expect(mixed.ok).toBe(true)
    expect(logs.some((l) => l.msg === 'inbound recipient refused' && l.fields.rcpt === 'victim@gmail.com')).toBe(true)
    await worker.drain()
  })
}, { dnsServers: [dns.server] })
