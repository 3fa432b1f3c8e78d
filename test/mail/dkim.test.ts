import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { canonBodyRelaxed, canonHeaderRelaxed, dkimSign } from '../../src/mail/dkim'
import { buildMessage, composeMessage, type OutboundMessage } from '../../src/mail/mime'

/** The DKIM signer against an independent verifier (mailauth), RSA-2048 and Ed25519. */

function keys(type: 'rsa' | 'ed25519') {
  const { privateKey, publicKey } = type === 'rsa'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : generateKeyPairSync('ed25519')
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  const der = publicKey.export({ type: 'spki', format: 'der' }) as Buffer
  // Ed25519 DNS records carry the raw 32-byte key (RFC 8463), RSA the SubjectPublicKeyInfo.
  const p = type === 'rsa' ? der.toString('base64') : der.subarray(der.length - 32).toString('base64')
  return { pem, record: `v=DKIM1; k=${type}; p=${p}` }
}

const verify = (raw: Buffer, record: string) =>
  dkimVerify(raw, { resolver: async () => [[record]] }).then((r) => r.results[0])

const message: OutboundMessage = {
  messageId: '<m1@example.com>', date: Date.UTC(2026, 0, 2, 3, 4, 5),
  from: { name: 'Ünïcode Sender', address: 'hello@example.com' }, to: { name: 'Bob', address: 'bob@dest.test' },
  replyTo: 'help@example.com',
  subject: 'A subject long enough to be folded by the composer, with ünïcode and    spaces in it',
  html: `<p>Hello   there \t </p>\n\n\n${'<div>line</div>\n'.repeat(200)}`, text: 'Hello there  \n\n',
  headers: { 'X-Custom': 'a   b\tc' },
  listUnsubscribe: { 'List-Unsubscribe': `<https://example.com/unsubscribe/${'A'.repeat(150)}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  attachments: [{ filename: 'a.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), contentType: 'application/octet-stream', disposition: 'attachment' }],
}

describe('DKIM', () => {
  test('relaxed canonicalisation (RFC 6376 3.4.2 / 3.4.4)', () => {
    expect(canonBodyRelaxed('')).toBe('')
    expect(canonBodyRelaxed('\r\n\r\n')).toBe('')
    expect(canonBodyRelaxed(' C \r\nD \t E\r\n\r\n\r\n')).toBe(' C\r\nD E\r\n')
    expect(canonBodyRelaxed('no newline at end \t')).toBe('no newline at end\r\n')
    expect(canonHeaderRelaxed('SUBJect ', ' A  folded\r\n \tvalue  ')).toBe('subject:A folded value\r\n')
  })

  test('relaxed body canonicalisation equals the RFC rules applied one by one, on random bodies', () => {
    // The rules of RFC 6376 3.4.4 as separate rewrites (the reference), against the one-pass version.
    const reference = (body: string) => {
      if (!body) return ''
      const b = body.replace(/\r?\n/g, '\r\n').replace(/[ \t]+/g, ' ').replace(/ \r\n/g, '\r\n').replace(/ $/, '').replace(/(\r\n)+$/, '')
      return b ? `${b}\r\n` : ''
    }
    const alphabet = [' ', '\t', '\r', '\n', '\r\n', 'a', '.', '=', 'é']
    let seed = 7
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    for (let i = 0; i < 3000; i++) {
      const body = Array.from({ length: rand(40) }, () => alphabet[rand(alphabet.length)]).join('')
      expect(canonBodyRelaxed(body)).toBe(reference(body))
    }
    // Bodies that are already canonical inside (the composer's usual output) take the native path.
    for (const body of ['a\r\nb\r\n', 'a\r\nb', 'a\r\n\r\n\r\n', '\r\n', 'x', 'a b\r\n\r\nc\r\n\r\n']) {
      expect(canonBodyRelaxed(body)).toBe(reference(body))
    }
  })

  for (const type of ['rsa', 'ed25519'] as const) {
    test(`${type}: a composed message verifies, and any change to a signed part breaks it`, async () => {
      const k = keys(type)
      const raw = await buildMessage(message, { domain: 'example.com', selector: 'sel', privateKeyPem: k.pem })
      const ok = await verify(raw, k.record)
      expect(ok.status.result).toBe('pass')
      expect(ok.format).toBe('relaxed/relaxed')
      expect(ok.algo).toBe(type === 'rsa' ? 'rsa-sha256' : 'ed25519-sha256')
      const signed = String(ok.signingHeaders?.keys).toLowerCase().split(/:\s*/)
      for (const h of ['from', 'to', 'subject', 'date', 'message-id', 'reply-to', 'list-unsubscribe', 'list-unsubscribe-post']) expect(signed).toContain(h)
      // Relaxed: whitespace changes in body and headers still verify.
      const text = raw.toString('latin1')
      const rewrapped = Buffer.from(text.replace('X-Custom: a   b\tc', 'X-Custom:    a b c').replace('Subject: ', 'Subject:  '), 'latin1')
      expect((await verify(rewrapped, k.record)).status.result).toBe('pass')
      const bodyChanged = Buffer.from(text.replace('line</div>', 'LINE</div>'), 'latin1')
      expect((await verify(bodyChanged, k.record)).status.result).not.toBe('pass')
      const fromAdded = Buffer.from(text.replace('MIME-Version:', 'From: evil@example.org\r\nMIME-Version:'), 'latin1')
      expect((await verify(fromAdded, k.record)).status.result).not.toBe('pass')
    })
  }

  test('single-part and multipart messages all carry their headers and verify', async () => {
    const k = keys('rsa')
    const variants: Array<Partial<OutboundMessage>> = [
      { html: null, attachments: [] }, { text: null, attachments: [] }, { attachments: [] }, { html: null }, {},
    ]
    for (const v of variants) {
      const raw = await buildMessage({ ...message, ...v }, { domain: 'example.com', selector: 'sel', privateKeyPem: k.pem })
      const head = raw.toString('latin1').split('\r\n\r\n')[0]
      for (const h of ['From:', 'To:', 'Subject:', 'Message-ID: <m1@example.com>', 'Date:', 'Reply-To:', 'MIME-Version:']) expect(head).toContain(h)
      expect((await verify(raw, k.record)).status.result).toBe('pass')
    }
  })

  test('signing an unsigned composed message equals buildMessage with a key', async () => {
    const k = keys('rsa')
    const raw = await composeMessage({ ...message, attachments: [] })
    const signed = dkimSign(raw, { domain: 'example.com', selector: 'sel', privateKeyPem: k.pem })
    expect(signed.subarray(signed.length - raw.length).equals(raw)).toBe(true)
    expect(signed.toString('latin1')).toStartWith('DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.com; s=sel;')
    expect(signed.toString('latin1').split('\r\n\r\n')[0].split('\r\n').every((l) => l.length <= 998)).toBe(true)
    expect((await verify(signed, k.record)).status.result).toBe('pass')
  })
})
