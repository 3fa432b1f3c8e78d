import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Deps } from '../../src/deps'
import { memoryLimiter } from '../../src/http/ratelimit'
import { carriedHeaders } from '../../src/modules/emails/relay'
import { AUTH_FAILURE_LIMIT, startRelay, type Relay } from '../../src/smtp/relay'
import { parseVerp } from '../../src/mail/outbound/verp'
import { readFileSync } from 'node:fs'
import { Worker } from '../../src/jobs/queue'
import { inboundJobs } from '../../src/modules/inbound/jobs'
import { startInbound } from '../../src/smtp/receiver'
import { forEachStore } from '../helpers/env'
import { startSink } from '../helpers/smtp'
import { dkimOf, mxTo, pipelineFor, projectWithDomain, startTestDns } from '../modules/emails/fixture'
import { must } from '../helpers/must'
import { contactMadeAndGone, RACED_EMAIL_PREFIX } from '../helpers/races'

/**
 * The SMTP relay as an application uses it: nodemailer with AUTH (any user, the sk_ key), the message
 * queued into the one pipeline and delivered DKIM-signed to a sink found through a loopback DNS server.
 */

interface ParsedMail {
  subject?: string
  html: string | false
  text?: string
  headers: Map<string, unknown>
  attachments: Array<{ filename?: string; content: Buffer; contentType: string; cid?: string }>
}
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer) => Promise<ParsedMail> }

const rnd = () => Math.random().toString(36).slice(2, 8)
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')
afterAll(async () => { await sink.close(); await dns.close() })

/** A self-signed certificate for the relay's STARTTLS and implicit TLS, made with openssl. */
const certDir = mkdtempSync(join(tmpdir(), 'mailctl-relay-tls-'))
const certPath = join(certDir, 'cert.pem')
const keyPath = join(certDir, 'key.pem')
const made = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=relay.mailctl.test'], { stderr: 'pipe' })
if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
afterAll(() => rmSync(certDir, { recursive: true, force: true }))

interface Outcome { ok: boolean; response: string; code?: number; command?: string; accepted?: string[]; rejected?: string[] }

type MailOptions = Parameters<ReturnType<typeof nodemailer.createTransport>['sendMail']>[0]

async function submit(port: number, auth: { user: string; pass: string } | null, mail: MailOptions, extra: Record<string, unknown> = {}): Promise<Outcome> {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, ...(auth ? { auth } : {}), ...extra })
  try {
    const info = await t.sendMail(mail)
    return { ok: true, response: String(info.response), accepted: info.accepted.map(String), rejected: info.rejected.map(String) }
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; command?: string; message: string }
    return { ok: false, response: e.response ?? e.message, code: e.responseCode, command: e.command }
  } finally {
    t.close()
  }
}

/**
 * A plain SMTP conversation over a socket: the greeting, then one reply (all its lines) per command,
 * each sent only after the previous reply is complete.
 */
async function smtpTalk(port: number, commands: string[]): Promise<string[]> {
  const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data(_s, chunk) { buffer += chunk.toString() ; wake() } } })
  let buffer = ''
  let wake = () => {}
  const reply = async (): Promise<string> => {
    for (;;) {
      const m = /(?:^|\r\n)\d{3} [^\r\n]*\r\n/.exec(buffer)
      if (m) {
        const end = m.index + m[0].length
        const text = buffer.slice(0, end).trimEnd()
        buffer = buffer.slice(end)
        return text
      }
      await new Promise<void>((resolve) => { wake = resolve })
    }
  }
  try {
    const out = [await reply()]
    for (const c of commands) {
      socket.write(`${c}\r\n`)
      out.push(await reply())
    }
    return out
  } finally {
    socket.end()
  }
}

forEachStore('SMTP relay', (env) => {
  let relay: Relay
  let p: Awaited<ReturnType<typeof projectWithDomain>>
  const auth = () => ({ user: 'any-user-name', pass: p.secretKey })

  beforeAll(async () => {
    p = await projectWithDomain(env, dns, `relay-${rnd()}.test`)
    relay = must(await startRelay(env.deps, { port: 0, host: '127.0.0.1', securePort: null, authFailureDelayMs: 1 }), 'the relay')
    env.onStop(() => relay.close())
  })

  const emailsOf = async (projectId: string) => {
    const e = env.store.t.emails
    return env.store.db.select().from(e).where(eq(e.projectId, projectId)).orderBy(e.createdAt, e.id)
  }

  test('nodemailer with the secret key: queued before the 250, delivered DKIM-signed with the VERP return path and tracking', async () => {
    const to = `r.${rnd()}@dest.test`
    const png = Buffer.from(`89504e470d0a1a0a${'ab'.repeat(64)}`, 'hex')
    const res = await submit(relay.port, auth(), {
      from: `"The App" <app@${p.domain}>`, to: { name: 'Rcpt Person', address: to }, replyTo: 'support@example.org',
      subject: 'Relayed ✓ message', text: 'Hello from the app', html: '<html><body><p>Hello <a href="https://example.com/go">go</a></p><img src="cid:logo@app"></body></html>',
      headers: { 'X-App-Id': 'order-42', 'In-Reply-To': '<earlier@app.test>' },
      attachments: [
        { filename: 'report.csv', content: 'a,b\n1,2\n', contentType: 'text/csv' },
        { filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@app' },
      ],
    })
    expect(res.ok).toBe(true)
    expect(res.response).toMatch(/^250 2\.0\.0 Ok: queued as [0-9a-f-]{36}$/)
    const id = must(/queued as ([0-9a-f-]{36})/.exec(res.response), 'a queued-as reply')[1]
    // Queued (and the contact upserted, unsubscribed like any /v1/send contact) before the answer.
    const [email] = (await emailsOf(p.id)).filter((e) => e.id === id)
    expect(email).toMatchObject({ sourceType: 'relay', status: 'PENDING', toAddress: to, toName: 'Rcpt Person', fromAddress: `app@${p.domain}`, fromName: 'The App', replyTo: 'support@example.org', subject: 'Relayed ✓ message' })
    const c = env.store.t.contacts
    const [contact] = await env.store.db.select().from(c).where(eq(c.id, must(email.contactId, 'the contact id')))
    expect(contact).toMatchObject({ email: to, subscribed: false, projectId: p.id })
    await pipelineFor(env).drain()
    const [msg] = sink.byMessageId(email.messageId)
    expect(msg).toBeDefined()
    expect(msg.to).toEqual([to])
    expect(parseVerp(env.deps, msg.from)?.emailId).toBe(id)
    const [dkim] = await dkimOf(msg.raw, dns)
    expect(dkim.status.result).toBe('pass')
    expect(dkim.signingDomain).toBe(p.domain)
    const parsed = await simpleParser(msg.raw)
    expect(parsed.subject).toBe('Relayed ✓ message')
    expect(parsed.text?.trim()).toBe('Hello from the app')
    expect(parsed.headers.get('x-app-id')).toBe('order-42')
    expect(parsed.headers.get('in-reply-to')).toBe('<earlier@app.test>')
    // Tracking is on for the project: rewritten link and pixel.
    expect(String(parsed.html)).toContain(`${env.config.publicUrl}/t/c/`)
    expect(String(parsed.html)).toContain(`${env.config.publicUrl}/t/o/`)
    expect(String(parsed.html)).not.toContain('href="https://example.com/go"')
    const csv = must(parsed.attachments.find((a) => a.filename === 'report.csv'), 'report.csv')
    expect(csv.content.toString()).toBe('a,b\n1,2\n')
    const logo = must(parsed.attachments.find((a) => a.filename === 'logo.png'), 'logo.png')
    expect(logo.content.equals(png)).toBe(true)
    expect(logo.cid).toBe('logo@app')
  })

  test('each envelope recipient (to, cc, bcc) gets its own email and message, addressed to it alone', async () => {
    const rcpts = [`a.${rnd()}@dest.test`, `b.${rnd()}@dest.test`, `c.${rnd()}@dest.test`]
    const res = await submit(relay.port, auth(), { from: `app@${p.domain}`, to: rcpts[0], cc: rcpts[1], bcc: rcpts[2], subject: 'Three', text: 'x' })
    expect(res.ok).toBe(true)
    const ids = must(/queued as (.+)$/.exec(res.response), 'a queued-as reply')[1].split(',')
    expect(ids).toHaveLength(3)
    await pipelineFor(env).drain()
    for (const r of rcpts) {
      const got = sink.received.filter((m) => m.to.includes(r))
      expect(got).toHaveLength(1)
      expect(got[0].to).toEqual([r])
      expect(got[0].raw.toString('latin1')).not.toMatch(/^bcc:/im)
    }
  })

  test('refused: no AUTH (530 at MAIL), a wrong key and a public key (535)', async () => {
    const mail = { from: `app@${p.domain}`, to: 'x@dest.test', subject: 's', text: 't' }
    const none = await submit(relay.port, null, mail)
    expect(none.ok).toBe(false)
    expect(none.code).toBe(530)
    const wrong = await submit(relay.port, { user: 'app', pass: `sk_${'0'.repeat(64)}` }, mail)
    expect(wrong).toMatchObject({ ok: false, code: 535 })
    expect(wrong.response).toContain('5.7.8')
    const pub = await submit(relay.port, { user: 'app', pass: p.publicKey }, mail)
    expect(pub).toMatchObject({ ok: false, code: 535 })
    expect(pub.response).toContain('public key')
    const garbage = await submit(relay.port, { user: 'app', pass: 'letmein' }, mail)
    expect(garbage).toMatchObject({ ok: false, code: 535 })
  })

  test('refused: a sender domain not verified for the project (553 at MAIL FROM, also for another project\'s domain)', async () => {
    const foreign = await submit(relay.port, auth(), { from: 'someone@gmail.com', to: 'x@dest.test', subject: 's', text: 't' })
    expect(foreign).toMatchObject({ ok: false, code: 553 })
    expect(foreign.response).toContain('5.7.1')
    const other = await projectWithDomain(env, dns, `other-${rnd()}.test`)
    const theirs = await submit(relay.port, auth(), { from: other.from, to: 'x@dest.test', subject: 's', text: 't' })
    expect(theirs).toMatchObject({ ok: false, code: 553 })
    // A verified envelope sender with a foreign From header is refused at the end of DATA.
    const header = await submit(relay.port, auth(), { envelope: { from: `app@${p.domain}`, to: ['x@dest.test'] }, from: 'ceo@bank.test', to: 'x@dest.test', subject: 's', text: 't' })
    expect(header).toMatchObject({ ok: false, code: 550 })
    expect(header.response).toContain('not verified')
    expect((await emailsOf(p.id)).some((e) => e.fromAddress === 'ceo@bank.test')).toBe(false)
  })

  test('a suppressed recipient is refused at RCPT; the others of the message go out', async () => {
    const gone = `gone.${rnd()}@dest.test`
    const ok = `ok.${rnd()}@dest.test`
    expect((await env.request('POST', '/suppressions', { key: p.secretKey, body: { email: gone } })).status).toBe(200)
    const only = await submit(relay.port, auth(), { from: `app@${p.domain}`, to: gone, subject: 's', text: 't' })
    expect(only).toMatchObject({ ok: false, code: 550 })
    expect(only.response).toContain('suppressed')
    const mixed = await submit(relay.port, auth(), { from: `app@${p.domain}`, to: [gone, ok], subject: 's', text: 't' })
    expect(mixed.ok).toBe(true)
    expect(mixed.rejected).toEqual([gone])
    expect(mixed.accepted).toEqual([ok])
  })

  // PostgreSQL only: SQLite has one writer, so no other can create and delete the contact mid-write.
  test.skipIf(env.kind !== 'pg')('PostgreSQL only: a recipient\'s contact made and deleted by other writers mid-write: the message is queued all the same, to a contact made anew', async () => {
    const to = `${RACED_EMAIL_PREFIX}.${rnd()}@dest.test`
    const { r, err, madeId } = await contactMadeAndGone(env, p.id, to, () => submit(relay.port, auth(), { from: `app@${p.domain}`, to, subject: 'raced', text: 't' }))
    expect(err).toBeUndefined()
    expect(r).toMatchObject({ ok: true, accepted: [to] })
    const id = must(/queued as ([0-9a-f-]{36})/.exec(r?.response ?? ''), 'a queued-as reply')[1]
    const [email] = (await emailsOf(p.id)).filter((e) => e.id === id)
    const c = env.store.t.contacts
    const contacts = await env.store.db.select().from(c).where(eq(c.email, to))
    expect(contacts.map((x) => x.id)).toEqual([must(email.contactId, 'the contact id')])
    expect(email.contactId).not.toBe(madeId)
  }, 60_000)

  test('text no store can hold (a NUL, a lone surrogate from UTF-16) in the subject, a name, a body or a file name: 550 5.6.0, nothing queued', async () => {
    const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64')
    // 0x0061 0xD800: "a" and half of a surrogate pair, which iconv decodes as it is.
    const utf16 = Buffer.from('0061d800', 'hex').toString('base64')
    const from = `app@${p.domain}`
    const cases: Array<[string, string]> = [
      ['subject', 'Subject: a\u0000b\r\n\r\nbody'],
      ['subject', `Subject: =?UTF-8?B?${b64('a\u0000b')}?=\r\n\r\nbody`],
      ['subject', `Subject: =?UTF-16BE?B?${utf16}?=\r\n\r\nbody`],
      ['toNames.0', `To: =?UTF-8?B?${b64('T\u0000o')}?= <r@dest.test>\r\nSubject: s\r\n\r\nbody`],
      ['text', 'Subject: s\r\n\r\nbo\u0000dy'],
      ['html', 'Subject: s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<p>a=00b</p>'],
      ['attachments.0.filename', `Subject: s\r\nContent-Type: multipart/mixed; boundary=BB\r\n\r\n--BB\r\nContent-Type: text/plain\r\n\r\nhi\r\n--BB\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="=?UTF-8?B?${b64('f\u0000.txt')}?="\r\nContent-Transfer-Encoding: base64\r\n\r\naGk=\r\n--BB--`],
    ]
    const before = (await emailsOf(p.id)).length
    for (const [field, message] of cases) {
      const login = `AUTH PLAIN ${Buffer.from(`\u0000u\u0000${p.secretKey}`).toString('base64')}`
      const talk = await smtpTalk(relay.port, ['EHLO client.test', login, `MAIL FROM:<${from}>`, 'RCPT TO:<r@dest.test>', 'DATA', `From: <${from}>\r\n${message}\r\n.`, 'QUIT'])
      // Permanent (5xx), naming the part: a 4xx would have the client try again forever.
      expect(talk[6]).toStartWith(`550 5.6.0 The message's ${field} contains a NUL character or a lone UTF-16 surrogate`)
    }
    expect((await emailsOf(p.id)).length).toBe(before)
  })

  test('a subject longer than a header line, cut where an emoji straddles the limit, is queued with whole characters', async () => {
    const subject = `${'s'.repeat(997)}\u{1F600} and the rest`
    const res = await submit(relay.port, auth(), { from: `app@${p.domain}`, to: `long.${rnd()}@dest.test`, subject, text: 'x' })
    expect(res.ok).toBe(true)
    const id = must(/queued as (.+)$/.exec(res.response), 'a queued-as reply')[1]
    const email = (await emailsOf(p.id)).find((e) => e.id === id)
    expect(email?.subject).toBe('s'.repeat(997))
  })

  test('repeated failures from one address slow down, then lock the address out even with the right key', async () => {
    const deps: Deps = { ...env.deps, limiter: memoryLimiter() }
    const own = must(await startRelay(deps, { port: 0, host: '127.0.0.1', securePort: null, authFailureDelayMs: 1 }), 'the relay')
    try {
      const mail = { from: `app@${p.domain}`, to: `x.${rnd()}@dest.test`, subject: 's', text: 't' }
      expect((await submit(own.port, auth(), mail)).ok).toBe(true)
      for (let i = 0; i < AUTH_FAILURE_LIMIT; i++) {
        expect(await submit(own.port, { user: 'x', pass: `sk_${rnd()}` }, mail)).toMatchObject({ ok: false, code: 535 })
      }
      const locked = await submit(own.port, auth(), mail)
      expect(locked).toMatchObject({ ok: false, code: 454 })
      expect(locked.response).toContain('Too many failed logins')
    } finally {
      await own.close()
    }
  })

  test('a disabled project cannot log in', async () => {
    const q = await projectWithDomain(env, dns, `off-${rnd()}.test`)
    await env.store.tx((db) => db.update(env.store.t.projects).set({ disabled: true }).where(eq(env.store.t.projects.id, q.id)))
    const res = await submit(relay.port, { user: 'u', pass: q.secretKey }, { from: q.from, to: 'x@dest.test', subject: 's', text: 't' })
    expect(res).toMatchObject({ ok: false, code: 535 })
    expect(res.response).toContain('disabled')
  })

  test('full circle: relayed mail bounces back to the VERP address it went out with; the address is then refused at RCPT', async () => {
    const inbound = must(await startInbound(env.deps, { port: 0, host: '127.0.0.1' }), 'the inbound server')
    try {
      const to = `no.such.${rnd()}@dest.test`
      const res = await submit(relay.port, auth(), { from: `app@${p.domain}`, to, subject: 'Will bounce', text: 't' })
      expect(res.ok).toBe(true)
      const id = must(/queued as ([0-9a-f-]{36})/.exec(res.response), 'a queued-as reply')[1]
      await pipelineFor(env).drain()
      const [email] = (await emailsOf(p.id)).filter((e) => e.id === id)
      const [msg] = sink.byMessageId(email.messageId)
      // The receiving side accepted, then bounced later: its DSN goes to the envelope sender it saw.
      const dsn = readFileSync(join(import.meta.dir, '../fixtures/inbound/dsn/gmail-unknown-user.eml'), 'latin1')
        .replace(/bounce\+[0-9a-f-]{36}@bounces\.acme\.test/g, msg.from)
        .replace(/<[0-9a-f-]{36}@acme\.test>/g, email.messageId)
        .replace(/no\.such\.person\.4711@gmail\.com/g, to)
      const t = nodemailer.createTransport({ host: '127.0.0.1', port: inbound.port, secure: false, ignoreTLS: true })
      await t.sendMail({ envelope: { from: '', to: [msg.from] }, raw: dsn })
      t.close()
      await new Worker(env.deps, inboundJobs).drain()
      const [after] = (await emailsOf(p.id)).filter((e) => e.id === id)
      expect(after).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
      const again = await submit(relay.port, auth(), { from: `app@${p.domain}`, to, subject: 'Again', text: 't' })
      expect(again).toMatchObject({ ok: false, code: 550 })
      expect(again.response).toContain('suppressed')
    } finally {
      await inbound.close()
    }
  })

  test('with a certificate: AUTH only after STARTTLS; implicit TLS on the secure port', async () => {
    const deps: Deps = { ...env.deps, config: { ...env.config, smtpTlsCert: certPath, smtpTlsKey: keyPath } }
    const tlsRelay = must(await startRelay(deps, { port: 0, host: '127.0.0.1', securePort: 0, authFailureDelayMs: 1 }), 'the relay')
    try {
      expect(tlsRelay.securePort).toBeGreaterThan(0)
      const mail = () => ({ from: `app@${p.domain}`, to: `tls.${rnd()}@dest.test`, subject: 'over TLS', text: 't' })
      const clear = await submit(tlsRelay.port, auth(), mail())
      expect(clear.ok).toBe(false)
      const starttls = await submit(tlsRelay.port, auth(), mail(), { ignoreTLS: false, requireTLS: true, tls: { rejectUnauthorized: false } })
      expect(starttls.ok).toBe(true)
      const implicit = await submit(must(tlsRelay.securePort, 'the implicit-TLS port'), auth(), mail(), { secure: true, ignoreTLS: false, tls: { rejectUnauthorized: false } })
      expect(implicit.ok).toBe(true)
      const wrong = await submit(must(tlsRelay.securePort, 'the implicit-TLS port'), { user: 'u', pass: `sk_${'1'.repeat(64)}` }, mail(), { secure: true, ignoreTLS: false, tls: { rejectUnauthorized: false } })
      expect(wrong).toMatchObject({ ok: false, code: 535 })
    } finally {
      await tlsRelay.close()
    }
  })

  test('with a certificate: EHLO in clear does not offer AUTH; AUTH in clear is 538 5.7.11 (RFC 4954); after STARTTLS it is offered', async () => {
    const deps: Deps = { ...env.deps, config: { ...env.config, smtpTlsCert: certPath, smtpTlsKey: keyPath } }
    const tlsRelay = must(await startRelay(deps, { port: 0, host: '127.0.0.1', securePort: null, authFailureDelayMs: 1 }), 'the relay')
    try {
      const talk = await smtpTalk(tlsRelay.port, ['EHLO client.test', `AUTH PLAIN ${Buffer.from(`\0u\0${p.secretKey}`).toString('base64')}`, 'QUIT'])
      const ehlo = talk[1]
      expect(ehlo).toContain('STARTTLS')
      expect(ehlo).not.toMatch(/AUTH/)
      expect(talk[2]).toBe('538 5.7.11 Encryption required for requested authentication mechanism')
      // nodemailer told to log in without TLS (forceAuth: AUTH although not offered) gets the same reply.
      const mail = { from: `app@${p.domain}`, to: `clear.${rnd()}@dest.test`, subject: 'in clear', text: 't' }
      const forced = await submit(tlsRelay.port, auth(), mail, { forceAuth: true })
      expect(forced).toMatchObject({ ok: false, code: 538 })
      expect(forced.response).toBe('538 5.7.11 Encryption required for requested authentication mechanism')
      // Without forceAuth nodemailer sees no AUTH in the EHLO reply, skips it, and MAIL FROM is refused.
      const skipped = await submit(tlsRelay.port, auth(), mail)
      expect(skipped).toMatchObject({ ok: false, code: 530 })
      expect(skipped.response).toContain('issue STARTTLS')
      // swaks (a real SMTP client): in clear it finds no AUTH to use; with STARTTLS it logs in and sends.
      if (Bun.which('swaks')) {
        // Spawned, not spawnSync: the relay answers from this same process.
        const swaks = async (args: string[]) => {
          const proc = Bun.spawn(['swaks', '--server', `127.0.0.1:${tlsRelay.port}`, '--from', `app@${p.domain}`, '--to', `swaks.${rnd()}@dest.test`, '--helo', 'client.test', ...args], { stdout: 'pipe', stderr: 'pipe' })
          const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
          return { out: out + err, code }
        }
        const clear = await swaks(['--auth', 'PLAIN', '--auth-user', 'u', '--auth-password', p.secretKey])
        expect(clear.code).not.toBe(0)
        expect(clear.out).toMatch(/^<-\s+250-STARTTLS/m)
        expect(clear.out).not.toMatch(/^<-\s+250-AUTH/m)
        expect(clear.out).toMatch(/did not advertise authentication|no common auth/i)
        const tlsRun = await swaks(['--tls', '--auth', 'PLAIN', '--auth-user', 'u', '--auth-password', p.secretKey])
        const tlsOut = tlsRun.out
        expect(tlsRun.code).toBe(0)
        expect(tlsOut).toMatch(/^<~\s+250-AUTH PLAIN LOGIN/m)
        expect(tlsOut).toMatch(/^<~\s+235/m)
        expect(tlsOut).toMatch(/^<~\s+250 2\.0\.0 Ok: queued as/m)
      }
    } finally {
      await tlsRelay.close()
    }
  })
}, { dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })

test('carriedHeaders keeps application headers and drops structural ones and transport traces', () => {
  const lines = [
    { key: 'x-app', line: 'X-App: one' }, { key: 'subject', line: 'Subject: s' }, { key: 'received', line: 'Received: from x' },
    { key: 'dkim-signature', line: 'DKIM-Signature: v=1' }, { key: 'content-type', line: 'Content-Type: text/plain' },
    { key: 'references', line: 'References: <a@b>\r\n <c@d>' }, { key: 'x-bad', line: 'X-Bad: \u0001' },
    { key: 'list-unsubscribe', line: 'List-Unsubscribe: <https://app.test/u>' }, { key: 'bcc', line: 'Bcc: hidden@x.test' },
  ]
  expect(carriedHeaders(lines)).toEqual({ 'X-App': 'one', References: '<a@b> <c@d>', 'List-Unsubscribe': '<https://app.test/u>' })
})

