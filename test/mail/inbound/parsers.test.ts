import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseDsn, classifyStatus, type DsnReport, type DsnRecipient } from '../../../src/mail/inbound/dsn'
import { parseArf, type ArfReport } from '../../../src/mail/inbound/arf'
import { classifyInbound } from '../../../src/mail/inbound/classify'

const DIR = join(import.meta.dir, '../../fixtures/inbound')
const read = (name: string) => readFileSync(join(DIR, name))
const VERP = (id: string) => `bounce+${id}@bounces.acme.test`
const MID = (id: string) => `<${id}@acme.test>`

function dsn(name: string): DsnReport {
  const r = parseDsn(read(name))
  if (r.kind !== 'dsn') throw new Error(`${name}: expected a DSN, got ${JSON.stringify(r)}`)
  return r
}
function arf(name: string): ArfReport {
  const r = parseArf(read(name))
  if (r.kind !== 'arf') throw new Error(`${name}: expected an ARF report, got ${JSON.stringify(r)}`)
  return r
}
function rcpt(r: DsnReport, i = 0): Pick<DsnRecipient, 'address' | 'action' | 'status' | 'bounceType' | 'bounceKind'> {
  const x = r.recipients[i]
  return { address: x.address, action: x.action, status: x.status, bounceType: x.bounceType, bounceKind: x.bounceKind }
}

/** What each fixture must classify as; every fixture file must be listed (checked below). */
const EXPECTED: Record<string, 'dsn' | 'arf' | 'other' | 'unparseable'> = {
  'dsn/gmail-unknown-user.eml': 'dsn',
  'dsn/gmail-policy-block.eml': 'dsn',
  'dsn/outlook-unknown-user.eml': 'dsn',
  'dsn/outlook-policy-block.eml': 'dsn',
  'dsn/yahoo-two-recipients.eml': 'dsn',
  'dsn/yahoo-deferred.eml': 'dsn',
  'dsn/yahoo-legacy-failure-notice.eml': 'dsn',
  'dsn/postfix-mailbox-full.eml': 'dsn',
  'dsn/postfix-expired-4xx.eml': 'dsn',
  'arf/yahoo-abuse.eml': 'arf',
  'arf/outlook-jmrp.eml': 'arf',
  'arf/rfc5965-generic-fraud.eml': 'arf',
  'other/plain-reply.eml': 'other',
  'other/auto-reply.eml': 'other',
  'malformed/empty.eml': 'unparseable',
  'malformed/binary-junk.eml': 'unparseable',
  'malformed/no-headers.eml': 'unparseable',
  'malformed/report-without-status-part.eml': 'unparseable',
  'malformed/status-without-recipient.eml': 'unparseable',
  'malformed/truncated-base64-status.eml': 'unparseable',
  'malformed/bounce-text-without-recipient.eml': 'unparseable',
  'malformed/arf-without-feedback-type.eml': 'unparseable',
  'malformed/arf-report-without-feedback-part.eml': 'unparseable',
}

const ALL = readdirSync(DIR).flatMap((d) => readdirSync(join(DIR, d)).map((f) => `${d}/${f}`)).sort()

describe('inbound fixtures', () => {
  test('every fixture has an expectation', () => {
    expect(ALL).toEqual(Object.keys(EXPECTED).sort())
  })

  for (const name of Object.keys(EXPECTED)) {
    test(`${name} classifies as ${EXPECTED[name]}`, () => {
      const r = classifyInbound(read(name))
      expect(r.kind).toBe(EXPECTED[name])
      if (r.kind === 'unparseable') expect(r.reason.length).toBeGreaterThan(5)
      // The specialised parsers agree with the classifier.
      const d = parseDsn(read(name))
      const a = parseArf(read(name))
      if (EXPECTED[name] === 'dsn') { expect(d.kind).toBe('dsn'); expect(a.kind).toBe('not-arf') }
      if (EXPECTED[name] === 'arf') expect(a.kind).toBe('arf')
      if (EXPECTED[name] === 'other') { expect(d.kind).toBe('not-dsn'); expect(a.kind).toBe('not-arf') }
    })
  }
})

describe('DSN (RFC 3464)', () => {
  test('Gmail, unknown user: hard, unknown-user, VERP and original Message-ID', () => {
    const r = dsn('dsn/gmail-unknown-user.eml')
    const id = '0190f3a2-7c1e-7d4b-9a55-3e2f1b0c9d81'
    expect(r.recipients).toHaveLength(1)
    expect(rcpt(r)).toEqual({ address: 'no.such.person.4711@gmail.com', action: 'failed', status: '5.1.1', bounceType: 'hard', bounceKind: 'unknown-user' })
    expect(r.recipients[0].finalRecipient).toBe('no.such.person.4711@gmail.com')
    expect(r.recipients[0].diagnosticCode).toStartWith('550-5.1.1 The email account that you tried to reach does not exist.')
    expect(r.recipients[0].diagnosticCode).not.toContain('\n')
    expect(r.recipients[0].remoteMta).toContain('gmail-smtp-in.l.google.com')
    expect(r.reportingMta).toBe('googlemail.com')
    expect(r.addressedTo).toEqual([VERP(id)])
    expect(r.verpAddresses).toEqual([VERP(id)])
    expect(r.originalMessageId).toBe(MID(id))
    expect(r.original?.subject).toBe('Your June update — Acme')
    expect(r.original?.returnPath).toBe(VERP(id))
    expect(r.original?.headers['dkim-signature']).toContain('d=acme.test')
    expect(r.heuristic).toBe(false)
    expect(r.from).toBe('mailer-daemon@googlemail.com')
  })

  test('Gmail, unauthenticated sender 5.7.26: hard but policy, kept apart from unknown users', () => {
    const r = dsn('dsn/gmail-policy-block.eml')
    expect(rcpt(r)).toEqual({ address: 'reader@gmail.com', action: 'failed', status: '5.7.26', bounceType: 'hard', bounceKind: 'policy' })
    expect(r.originalMessageId).toBe(MID('0190f3a3-1111-7aaa-8bbb-000000000002'))
  })

  test('Outlook (Exchange NDR), 5.1.10: Original-Recipient preferred, text/rfc822-headers read', () => {
    const r = dsn('dsn/outlook-unknown-user.eml')
    const id = '0190f3b0-2222-7ccc-9ddd-000000000003'
    expect(rcpt(r)).toEqual({ address: 'alex.unknown@contoso.test', action: 'failed', status: '5.1.10', bounceType: 'hard', bounceKind: 'unknown-user' })
    expect(r.recipients[0].originalRecipient).toBe('alex.unknown@contoso.test')
    expect(r.recipients[0].diagnosticCode).toBe('550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient alex.unknown@contoso.test not found by SMTP address lookup')
    expect(r.reportingMta).toBe('AM0PR01MB1234.eurprd01.prod.exchangelabs.com')
    expect(r.originalMessageId).toBe(MID(id))
    expect(r.verpAddresses).toEqual([VERP(id)])
    expect(r.subject).toBe('Undeliverable: Your June update')
  })

  test('Outlook block list (S3150), CRLF and a base64 delivery-status part: policy', () => {
    const raw = read('dsn/outlook-policy-block.eml')
    expect(raw.includes('\r\n')).toBe(true)
    const r = dsn('dsn/outlook-policy-block.eml')
    expect(rcpt(r)).toEqual({ address: 'pat@outlook.com', action: 'failed', status: '5.7.1', bounceType: 'hard', bounceKind: 'policy' })
    expect(r.recipients[0].diagnosticCode).toContain('block list (S3150)')
    expect(r.subject).toBe('Undeliverable: Cançao do dia')
    expect(r.original?.to).toEqual(['pat@outlook.com'])
    expect(r.originalMessageId).toBe(MID('0190f3c0-3333-7eee-8fff-000000000004'))
  })

  test('Yahoo, two recipients: 5.0.0 "account doesn\'t exist" refined to unknown-user; 5.2.2 mailbox full is soft', () => {
    const r = dsn('dsn/yahoo-two-recipients.eml')
    expect(r.recipients).toHaveLength(2)
    expect(rcpt(r, 0)).toEqual({ address: 'gone.reader@yahoo.com', action: 'failed', status: '5.0.0', bounceType: 'hard', bounceKind: 'unknown-user' })
    expect(rcpt(r, 1)).toEqual({ address: 'full.reader@yahoo.com', action: 'failed', status: '5.2.2', bounceType: 'soft', bounceKind: 'mailbox-full' })
    expect(r.originalEnvelopeId).toBe('0190f3d0-4444-7aaa-8bbb-000000000005')
  })

  test('Yahoo TSS04 deferral, Action: delayed 4.7.0: soft', () => {
    const r = dsn('dsn/yahoo-deferred.eml')
    expect(rcpt(r)).toEqual({ address: 'slow.reader@yahoo.com', action: 'delayed', status: '4.7.0', bounceType: 'soft', bounceKind: 'policy' })
    expect(r.recipients[0].remoteMta).toBe('mta7.am0.yahoodns.net')
    expect(r.recipients[0].willRetryUntil).toBe('Fri, 14 Jun 2024 07:55:00 +0000 (UTC)')
  })

  test('Postfix: Action failed 5.2.2 mailbox full is soft; an expired 4.4.1 is soft (network)', () => {
    expect(rcpt(dsn('dsn/postfix-mailbox-full.eml'))).toEqual({ address: 'full.inbox@example.net', action: 'failed', status: '5.2.2', bounceType: 'soft', bounceKind: 'mailbox-full' })
    expect(rcpt(dsn('dsn/postfix-expired-4xx.eml'))).toEqual({ address: 'slow.host@example.org', action: 'failed', status: '4.4.1', bounceType: 'soft', bounceKind: 'network' })
    expect(dsn('dsn/postfix-mailbox-full.eml').recipients[0].willRetryUntil).toBeNull()
  })

  test('Yahoo legacy plain-text "Failure Notice": read heuristically, the copied message is not a recipient', () => {
    const r = dsn('dsn/yahoo-legacy-failure-notice.eml')
    const id = '0190f3f0-6666-7eee-8fff-000000000007'
    expect(r.heuristic).toBe(true)
    expect(r.recipients.map((x) => x.address)).toEqual(['gone.user@yahoo.com'])
    expect(rcpt(r)).toEqual({ address: 'gone.user@yahoo.com', action: 'failed', status: '5.0.0', bounceType: 'hard', bounceKind: 'unknown-user' })
    expect(r.originalMessageId).toBe(MID(id))
    expect(r.verpAddresses).toEqual([VERP(id)])
  })

  test('classifyStatus: the mapping table', () => {
    expect(classifyStatus('5.1.1')).toEqual({ bounceType: 'hard', bounceKind: 'unknown-user' })
    expect(classifyStatus('5.1.2')).toEqual({ bounceType: 'hard', bounceKind: 'unknown-user' })
    expect(classifyStatus('5.7.1')).toEqual({ bounceType: 'hard', bounceKind: 'policy' })
    expect(classifyStatus('5.2.2')).toEqual({ bounceType: 'soft', bounceKind: 'mailbox-full' })
    expect(classifyStatus('5.2.1')).toEqual({ bounceType: 'hard', bounceKind: 'mailbox' })
    expect(classifyStatus('5.4.4')).toEqual({ bounceType: 'hard', bounceKind: 'network' })
    expect(classifyStatus('5.6.0')).toEqual({ bounceType: 'hard', bounceKind: 'content' })
    expect(classifyStatus('4.2.2')).toEqual({ bounceType: 'soft', bounceKind: 'mailbox-full' })
    expect(classifyStatus('4.4.1')).toEqual({ bounceType: 'soft', bounceKind: 'network' })
    expect(classifyStatus('5.1.1', 'delayed')).toEqual({ bounceType: 'soft', bounceKind: 'unknown-user' })
    expect(classifyStatus('2.0.0', 'delivered')).toEqual({ bounceType: null, bounceKind: null })
    expect(classifyStatus(null, 'failed')).toEqual({ bounceType: 'hard', bounceKind: 'other' })
  })

  test('Status missing: taken from Diagnostic-Code (enhanced, then basic code)', () => {
    const mk = (diag: string) => Buffer.from([
      'From: MAILER-DAEMON@mx.test', 'To: b@bounces.acme.test', 'Subject: Undelivered Mail Returned to Sender',
      'Content-Type: multipart/report; report-type=delivery-status; boundary=B', '',
      '--B', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.test', '',
      'Final-Recipient: rfc822; <X@Example.Test>', 'Action: failed', `Diagnostic-Code: smtp; ${diag}`, '', '--B--', '',
    ].join('\r\n'))
    const a = parseDsn(mk('550 5.1.1 <x@example.test>: Recipient address rejected'))
    expect(a.kind === 'dsn' && rcpt(a)).toEqual({ address: 'x@example.test', action: 'failed', status: '5.1.1', bounceType: 'hard', bounceKind: 'unknown-user' })
    const b = parseDsn(mk('452 Too many connections'))
    expect(b.kind === 'dsn' && rcpt(b)).toEqual({ address: 'x@example.test', action: 'failed', status: '4.0.0', bounceType: 'soft', bounceKind: 'other' })
    const c = parseDsn(mk('550 Mailbox is full'))
    expect(c.kind === 'dsn' && rcpt(c)).toEqual({ address: 'x@example.test', action: 'failed', status: '5.0.0', bounceType: 'soft', bounceKind: 'mailbox-full' })
  })

  test('delivered and relayed recipients are no bounce', () => {
    const raw = Buffer.from([
      'From: MAILER-DAEMON@mx.test', 'To: b@bounces.acme.test', 'Subject: Successful Mail Delivery Report',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="B"', '',
      '--B', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.test', '',
      'Final-Recipient: rfc822; ok@example.test', 'Action: delivered', 'Status: 2.0.0', '',
      'Final-Recipient: rfc822; fwd@example.test', 'Action: relayed', 'Status: 2.0.0', '', '--B--',
    ].join('\n'))
    const r = parseDsn(raw)
    expect(r.kind).toBe('dsn')
    if (r.kind === 'dsn') expect(r.recipients.map((x) => [x.address, x.bounceType])).toEqual([['ok@example.test', null], ['fwd@example.test', null]])
  })
})

describe('ARF (RFC 5965)', () => {
  test('Yahoo abuse report: feedback type, recipient, Message-ID, reported domain, VERP', () => {
    const r = arf('arf/yahoo-abuse.eml')
    const id = '0190f401-7777-7aaa-8bbb-000000000008'
    expect(r.feedbackType).toBe('abuse')
    expect(r.isComplaint).toBe(true)
    expect(r.userAgent).toBe('Yahoo!-Mail-Feedback/2.0')
    expect(r.originalRecipient).toBe('complainer@yahoo.com')
    expect(r.originalRcptTo).toEqual(['complainer@yahoo.com'])
    expect(r.originalMailFrom).toBe(VERP(id))
    expect(r.originalMessageId).toBe(MID(id))
    expect(r.reportedDomains).toEqual(['acme.test'])
    expect(r.sourceIp).toBe('203.0.113.25')
    expect(r.arrivalDate?.toISOString()).toBe('2024-06-11T14:19:00.000Z')
    expect(r.verpAddresses[0]).toBe(VERP(id))
    expect(r.original?.headers['list-unsubscribe']).toBe('<https://mail.acme.test/unsubscribe/abc>')
  })

  test('Outlook JMRP: the redacted recipient is not reported; the original Return-Path still maps the email', () => {
    const r = arf('arf/outlook-jmrp.eml')
    const id = '0190f402-8888-7ccc-8ddd-000000000009'
    expect(r.feedbackType).toBe('abuse')
    expect(r.originalRecipient).toBeNull()
    expect(r.originalRcptTo).toEqual([])
    expect(r.originalMailFrom).toBeNull()
    expect(r.originalMessageId).toBe(MID(id))
    expect(r.verpAddresses).toContain(VERP(id))
    expect(r.reportedDomains).toEqual([])
  })

  test('generic RFC 5965 fraud report: several Reported-Domain fields, text/rfc822-headers', () => {
    const r = arf('arf/rfc5965-generic-fraud.eml')
    expect(r.feedbackType).toBe('fraud')
    expect(r.isComplaint).toBe(true)
    expect(r.originalRecipient).toBe('user@example.net')
    expect(r.reportedDomains).toEqual(['acme.test', 'links.acme.test'])
    expect(r.reportingMta).toBe('mail.example.net')
    expect(r.originalMessageId).toBe(MID('0190f403-9999-7eee-8fff-00000000000a'))
    expect(r.arrivalDate?.toISOString()).toBe('2024-06-13T12:00:00.000Z')
  })

  test('not-spam is a feedback report but no complaint', () => {
    const raw = Buffer.from(read('arf/yahoo-abuse.eml').toString('latin1').replace('Feedback-Type: abuse', 'Feedback-Type: not-spam'), 'latin1')
    const r = parseArf(raw)
    expect(r.kind === 'arf' && [r.feedbackType, r.isComplaint]).toEqual(['not-spam', false])
  })
})

describe('robustness: the parsers never throw', () => {
  test('unparseable reasons are specific', () => {
    const reason = (n: string) => { const r = classifyInbound(read(n)); return r.kind === 'unparseable' ? r.reason : r.kind }
    expect(reason('malformed/empty.eml')).toBe('empty message')
    expect(reason('malformed/report-without-status-part.eml')).toContain('without a message/delivery-status part')
    expect(reason('malformed/status-without-recipient.eml')).toContain('names no recipient')
    expect(reason('malformed/arf-without-feedback-type.eml')).toContain('Feedback-Type')
  })

  test('random corruption of every fixture yields a result, never an exception', () => {
    let seed = 12345
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
    for (const name of ALL) {
      const base = read(name)
      for (let k = 0; k < 40; k++) {
        const buf = Buffer.from(base)
        if (buf.length === 0) continue
        const op = rnd(3)
        if (op === 0) for (let j = 0; j < 20; j++) buf[rnd(buf.length)] = rnd(256)
        const mutated = op === 1 ? buf.subarray(0, rnd(buf.length)) : op === 2 ? Buffer.concat([buf.subarray(0, rnd(buf.length)), buf.subarray(rnd(buf.length))]) : buf
        for (const f of [parseDsn, parseArf, classifyInbound]) {
          const r = f(mutated)
          expect(typeof r.kind).toBe('string')
        }
      }
    }
  })

  test('hostile structure: deep nesting, thousands of parts, a huge header, a large original', () => {
    let nested = 'Content-Type: text/plain\n\nleaf'
    for (let i = 0; i < 50; i++) nested = `Content-Type: multipart/mixed; boundary="b${i}"\n\n--b${i}\n${nested}\n--b${i}--`
    expect(classifyInbound(Buffer.from(`From: a@b.test\nSubject: x\n${nested}`)).kind).toBe('other')

    const many = ['From: MAILER-DAEMON@x.test', 'Subject: failure notice', 'Content-Type: multipart/report; report-type=delivery-status; boundary=M', '']
    for (let i = 0; i < 5000; i++) many.push('--M', 'Content-Type: text/plain', '', `part ${i}`)
    many.push('--M--')
    const r = parseDsn(Buffer.from(many.join('\n')))
    expect(r.kind === 'unparseable' && r.reason).toContain('MIME parts')

    const hugeHeader = Buffer.from(`From: a@b.test\nX-Long: ${'a'.repeat(600_000)}\n\nbody`)
    expect(['other', 'unparseable']).toContain(classifyInbound(hugeHeader).kind)

    const big = read('dsn/gmail-unknown-user.eml').toString('latin1').replace('<p>Hello</p>', 'x'.repeat(8 * 1024 * 1024))
    const b = parseDsn(Buffer.from(big, 'latin1'))
    expect(b.kind === 'dsn' && b.recipients[0].status).toBe('5.1.1')
  })
})
