import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createSign } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { verpAddress } from '../../../src/mail/outbound/verp'
import { clearCertCache, isSnsUrl, stringToSign, type SnsMessage } from '../../../src/modules/webhooks/sns'
import { forEachStore } from '../../helpers/env'
import { contactEvents, contactOf, emailRow, eventsOf, queueTestEmail, rnd, suppressionOf } from '../tracking/fixture'
import { must } from '../../helpers/must'

/**
 * POST /webhooks/notifications with SNS messages signed by a certificate made here with openssl; the
 * certificate "download" and the subscription confirmation GET are answered by an injected fetch.
 */

function makeCert(dir: string, name: string): { cert: string; key: string } {
  const keyPath = join(dir, `${name}.key`)
  const certPath = join(dir, `${name}.pem`)
  const r = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=sns.us-east-1.amazonaws.com'], { stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`)
  return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') }
}

const dir = mkdtempSync(join(tmpdir(), 'mailctl-sns-'))
const good = makeCert(dir, 'good')
const other = makeCert(dir, 'other')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const CERT_URL = 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem'
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ses-notifications'

type Unsigned = Omit<SnsMessage, 'Signature' | 'SignatureVersion' | 'SigningCertURL'> & Partial<Pick<SnsMessage, 'SigningCertURL'>>

function sign(m: Unsigned, opts: { version?: '1' | '2'; key?: string } = {}): SnsMessage {
  const version = opts.version ?? '2'
  const msg = { ...m, SignatureVersion: version, SigningCertURL: m.SigningCertURL ?? CERT_URL, Signature: '' } as SnsMessage
  msg.Signature = createSign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256').update(stringToSign(msg), 'utf8').sign(opts.key ?? good.key, 'base64')
  return msg
}

function notification(message: unknown, extra: Partial<SnsMessage> = {}): Unsigned {
  return {
    Type: 'Notification', MessageId: Bun.randomUUIDv7(), TopicArn: TOPIC, Message: JSON.stringify(message),
    Timestamp: new Date().toISOString(), ...extra,
  }
}

describe('SNS URLs', () => {
  test('only https on sns.<region>.amazonaws.com', () => {
    expect(isSnsUrl(CERT_URL, true)).toBe(true)
    expect(isSnsUrl('https://sns.cn-north-1.amazonaws.com.cn/x.pem', true)).toBe(true)
    for (const u of ['http://sns.us-east-1.amazonaws.com/x.pem', 'https://sns.us-east-1.amazonaws.com.evil.test/x.pem', 'https://evil.test/sns.us-east-1.amazonaws.com/x.pem',
      'https://user@sns.us-east-1.amazonaws.com/x.pem', 'https://sns.us-east-1.amazonaws.com:8443/x.pem', 'https://sns.us-east-1.amazonaws.com/x.txt', 'not a url']) {
      expect(isSnsUrl(u, true)).toBe(false)
    }
  })
})

forEachStore('POST /webhooks/notifications (SES via SNS)', (env) => {
  let projectId = ''
  const fetched: string[] = []
  let certStatus = 200
  const certBody = good.cert

  beforeAll(async () => {
    projectId = (await env.project()).id
    env.deps.fetch = async (url: string) => {
      fetched.push(url)
      if (url.endsWith('.pem')) return new Response(certStatus === 200 ? (url.includes('other') ? other.cert : certBody) : 'error', { status: certStatus })
      if (url.includes('Action=ConfirmSubscription')) return new Response('<ConfirmSubscriptionResponse/>', { status: 200 })
      return new Response('not found', { status: 404 })
    }
  })

  const post = (m: SnsMessage | string) => env.request('POST', '/webhooks/notifications', {
    raw: typeof m === 'string' ? m : JSON.stringify(m), headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': typeof m === 'string' ? 'Notification' : m.Type },
  })

  function ses(kind: 'Bounce' | 'Complaint' | 'Delivery', email: { messageId: string; toAddress: string; fromAddress: string }, body: Record<string, unknown>) {
    const field = kind === 'Bounce' ? 'bounce' : kind === 'Complaint' ? 'complaint' : 'delivery'
    return {
      notificationType: kind,
      mail: {
        timestamp: new Date().toISOString(), source: email.fromAddress, messageId: '0100018f-ses-id-000000',
        destination: [email.toAddress], headersTruncated: false,
        headers: [{ name: 'Message-ID', value: email.messageId }, { name: 'Subject', value: 'Welcome' }],
        commonHeaders: { messageId: email.messageId, subject: 'Welcome' },
      },
      [field]: body,
    }
  }

  test('SubscriptionConfirmation (SignatureVersion 1) is verified and confirmed by a GET of SubscribeURL', async () => {
    const subscribe = `https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${TOPIC}&Token=tok-${rnd()}`
    const res = await post(sign({ Type: 'SubscriptionConfirmation', MessageId: Bun.randomUUIDv7(), TopicArn: TOPIC, Message: 'You have chosen to subscribe', Timestamp: new Date().toISOString(), Token: 'tok', SubscribeURL: subscribe }, { version: '1' }))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ type: 'SubscriptionConfirmation', confirmed: true, topicArn: TOPIC })
    expect(fetched).toContain(subscribe)
  })

  test('a SubscribeURL that is not an SNS URL is refused (403) and never fetched, even when signed', async () => {
    const evil = 'https://evil.test/?Action=ConfirmSubscription'
    const res = await post(sign({ Type: 'SubscriptionConfirmation', MessageId: Bun.randomUUIDv7(), TopicArn: TOPIC, Message: 'x', Timestamp: new Date().toISOString(), Token: 't', SubscribeURL: evil }))
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('FORBIDDEN')
    expect(fetched).not.toContain(evil)
  })

  test('Bounce, Permanent (5.1.1): BOUNCED, hard, suppressed, email.bounce from ses', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const res = await post(sign(notification(ses('Bounce', email, {
      bounceType: 'Permanent', bounceSubType: 'General', timestamp: new Date().toISOString(), feedbackId: 'fb-1', reportingMTA: 'dns; a1-2.smtp-out.amazonses.com',
      bouncedRecipients: [{ emailAddress: email.toAddress, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' }],
    }))))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ type: 'Notification', kind: 'Bounce', applied: 1, duplicate: false, ignored: null })
    const row = await emailRow(env, email.id)
    expect(row).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
    const [ev] = await eventsOf(env, email.id, 'email.bounce')
    expect(ev.data).toMatchObject({ bounceType: 'hard', bounceKind: 'unknown-user', enhancedCode: '5.1.1', reply: '550 5.1.1 user unknown', smtpCode: 550, suppressed: true, source: 'ses', sesBounceType: 'Permanent', recipient: email.toAddress })
    expect(await suppressionOf(env, projectId, email.toAddress)).toMatchObject({ reason: 'bounce', emailId: email.id })
  })

  test('a signed Bounce whose diagnostic holds a NUL (escaped in its JSON): applied on both stores, no NUL stored (was 500 on PostgreSQL)', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const res = await post(sign(notification(ses('Bounce', email, {
      bounceType: 'Permanent', bounceSubType: 'General', timestamp: new Date().toISOString(), feedbackId: 'fb-nul', reportingMTA: 'dns; a1-2.smtp-out.amazonses.com',
      bouncedRecipients: [{ emailAddress: email.toAddress, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user\u0000unknown' }],
    }))))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ kind: 'Bounce', applied: 1 })
    expect(await emailRow(env, email.id)).toMatchObject({ status: 'BOUNCED', bounceType: 'hard' })
    const [ev] = await eventsOf(env, email.id, 'email.bounce')
    expect(ev.data).toMatchObject({ bounceType: 'hard', enhancedCode: '5.1.1' })
    expect(JSON.stringify(ev.data)).not.toContain('\\u0000')
  })

  test('Bounce, Transient (mailbox full): a soft bounce event only', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const res = await post(sign(notification(ses('Bounce', email, {
      bounceType: 'Transient', bounceSubType: 'MailboxFull', timestamp: new Date().toISOString(),
      bouncedRecipients: [{ emailAddress: email.toAddress }],
    }))))
    expect(res.status).toBe(200)
    expect((await emailRow(env, email.id)).status).toBe('SENT')
    expect((await eventsOf(env, email.id, 'email.bounce'))[0].data).toMatchObject({ bounceType: 'soft', bounceKind: 'mailbox-full', suppressed: false })
    expect(await suppressionOf(env, projectId, email.toAddress)).toBeNull()
  })

  test('Complaint: COMPLAINED, suppressed, contact unsubscribed', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'DELIVERED' })
    const res = await post(sign(notification(ses('Complaint', email, {
      complainedRecipients: [{ emailAddress: email.toAddress }], complaintFeedbackType: 'abuse', timestamp: new Date().toISOString(), userAgent: 'Yahoo!-Mail-Feedback/2.0',
    }))))
    expect(res.status).toBe(200)
    expect((await emailRow(env, email.id)).status).toBe('COMPLAINED')
    expect((await eventsOf(env, email.id, 'email.complaint'))[0].data).toMatchObject({ feedbackType: 'abuse', source: 'ses' })
    expect(await suppressionOf(env, projectId, email.toAddress)).toMatchObject({ reason: 'complaint' })
    expect((await contactOf(env, must(email.contactId, 'the contact id'))).subscribed).toBe(false)
    expect(await contactEvents(env, must(email.contactId, 'the contact id'), 'contact.unsubscribed')).toBe(1)
  })

  test('Delivery: DELIVERED with email.delivery; a later Delivery after a bounce never moves the status back', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const delivery = { timestamp: new Date().toISOString(), recipients: [email.toAddress], smtpResponse: '250 2.0.0 OK', reportingMTA: 'a1-2.smtp-out.amazonses.com' }
    expect((await post(sign(notification(ses('Delivery', email, delivery))))).status).toBe(200)
    expect((await emailRow(env, email.id)).status).toBe('DELIVERED')
    expect((await eventsOf(env, email.id, 'email.delivery'))[0].data).toMatchObject({ reply: '250 2.0.0 OK', source: 'ses' })
    const bounced = await queueTestEmail(env, projectId, { status: 'BOUNCED' })
    await post(sign(notification(ses('Delivery', bounced, { ...delivery, recipients: [bounced.toAddress] }))))
    expect((await emailRow(env, bounced.id)).status).toBe('BOUNCED')
  })

  test('a redelivered notification (same SNS MessageId) changes nothing', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const msg = sign(notification(ses('Bounce', email, { bounceType: 'Transient', bounceSubType: 'General', bouncedRecipients: [{ emailAddress: email.toAddress }] })))
    expect((await post(msg)).body.duplicate).toBe(false)
    const again = await post(msg)
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ duplicate: true, applied: 0 })
    expect(await eventsOf(env, email.id, 'email.bounce')).toHaveLength(1)
  })

  test('the email is also found by the VERP envelope sender (mail.source) when no Message-ID matches', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const n = ses('Bounce', { ...email, messageId: '<unknown@nowhere.test>' }, { bounceType: 'Permanent', bounceSubType: 'NoEmail', bouncedRecipients: [{ emailAddress: email.toAddress }] })
    n.mail.source = verpAddress(env.deps, email.id, 'bounce.acme.test')
    expect((await post(sign(notification(n)))).body.applied).toBe(1)
    expect((await emailRow(env, email.id)).status).toBe('BOUNCED')
    expect((await eventsOf(env, email.id, 'email.bounce'))[0].data).toMatchObject({ bounceKind: 'unknown-user', suppressed: true })
  })

  test('a notification about no email of this server, or of an unhandled type, is answered 200 and ignored', async () => {
    const email = { messageId: '<nobody@nowhere.test>', toAddress: 'x@y.test', fromAddress: 'a@b.test' }
    const r1 = await post(sign(notification(ses('Bounce', email, { bounceType: 'Permanent', bouncedRecipients: [] }))))
    expect(r1.status).toBe(200)
    expect(r1.body).toMatchObject({ applied: 0, ignored: 'no email of this server has that Message-ID' })
    const r2 = await post(sign(notification({ eventType: 'Open', mail: {} })))
    expect(r2.body.ignored).toContain('not handled')
  })

  test('security: altered message, another key, untrusted or plain-http certificate URL, unknown version, stale timestamp -> 403', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'SENT' })
    const body = ses('Bounce', email, { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: email.toAddress, status: '5.1.1' }] })
    const altered = sign(notification(body))
    altered.Message = altered.Message.replace('Permanent', 'Transient')
    const wrongKey = sign(notification(body), { key: other.key })
    const evilCert = sign({ ...notification(body), SigningCertURL: 'https://evil.test/cert.pem' })
    const httpCert = sign({ ...notification(body), SigningCertURL: CERT_URL.replace('https:', 'http:') })
    const v3 = { ...sign(notification(body)), SignatureVersion: '3' }
    const stale = sign(notification(body, { Timestamp: new Date(Date.now() - 8 * 86_400_000).toISOString() }))
    const before = fetched.length
    for (const m of [altered, wrongKey, evilCert, httpCert, v3, stale]) {
      const res = await post(m)
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe('FORBIDDEN')
    }
    expect(fetched.slice(before).some((u) => u.includes('evil.test') || u.startsWith('http:'))).toBe(false)
    expect((await emailRow(env, email.id)).status).toBe('SENT')
    // A message signed by the other key verifies against the certificate served for it.
    const otherUrl = CERT_URL.replace('0123456789abcdef', 'other')
    expect((await post(sign({ ...notification(body), SigningCertURL: otherUrl }, { key: other.key }))).status).toBe(200)
  })

  test('bad input: not JSON, not an SNS message, too large -> 400 / 413; an unreachable certificate -> 500 (SNS retries)', async () => {
    expect((await post('{not json')).status).toBe(400)
    const missing = await post(JSON.stringify({ Type: 'Notification', Message: 'x' }))
    expect(missing.status).toBe(400)
    expect(missing.body.error.code).toBe('BAD_REQUEST')
    expect((await post(JSON.stringify({ ...notification({}), Type: 'Weird', Signature: 'x', SignatureVersion: '1', SigningCertURL: CERT_URL }))).status).toBe(400)
    expect((await post('x'.repeat(600 * 1024))).status).toBe(413)
    clearCertCache()
    certStatus = 503
    try {
      const res = await post(sign(notification({ notificationType: 'Delivery', mail: {} })))
      expect(res.status).toBe(500)
      expect(res.body.error.code).toBe('INTERNAL_SERVER_ERROR')
    } finally {
      certStatus = 200
    }
  })
})
