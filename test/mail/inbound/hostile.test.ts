import { describe, expect, test } from 'bun:test'
import { analyzeInbound, parseInbound } from '../../../src/mail/inbound/analyze'
import { parseDsn } from '../../../src/mail/inbound/dsn'
import { addresses, messageId, parseContentType, parseMime, READABLE_PART_BYTES, readableText, stripTags } from '../../../src/mail/inbound/mime'

/**
 * Hostile inbound mail: inputs on which the old parsers backtracked quadratically (minutes for 1 MB).
 * Each test asserts what is extracted; the per-test timeout is what fails a quadratic parser (these
 * inputs took the old code from minutes to an hour), never a timed assertion. bench/inbound-hostile.ts
 * measures the times.
 */
const MB = 1024 * 1024
const HOSTILE_MS = 15_000

const bounce = (body: string) => Buffer.from(`From: MAILER-DAEMON@mx.remote.test\r\nTo: b+x@bounce.acme.test\r\nSubject: failure notice\r\n\r\n${body}`, 'latin1')
const RECIPIENT_BLOCK = 'Hi. This is the qmail-send program at mx.remote.test.\r\n\r\n<gone@remote.test>:\r\n550 5.1.1 user unknown\r\n\r\n'

function recipientsOf(raw: Buffer) {
  const r = parseDsn(raw)
  if (r.kind !== 'dsn') throw new Error(`expected a DSN, got ${JSON.stringify(r).slice(0, 300)}`)
  return r.recipients.map((x) => ({ address: x.address, status: x.status, bounceKind: x.bounceKind }))
}

describe('hostile inbound mail is read in linear time', () => {
  test('a text/html body of 1 MB of "<": the text before it is read, the rest is capped', () => {
    const raw = Buffer.from(`From: a@remote.test\r\nTo: hello@acme.test\r\nSubject: x\r\nContent-Type: text/html\r\n\r\n<p>Hello</p>${'<'.repeat(MB)}`, 'latin1')
    const text = readableText(parseMime(raw))
    // Tags stripped from the first READABLE_PART_BYTES only: the unclosed '<' run is text.
    expect(text).toBe(` Hello ${'<'.repeat(READABLE_PART_BYTES - '<p>Hello</p>'.length)}`)
    const a = analyzeInbound(raw)
    expect(a.kind === 'other' && a.mail.snippet).toBe(`Hello ${'<'.repeat(494)}`)
  }, HOSTILE_MS)

  test('stripTags on 1 MB of "<" and of "<>" keeps the unclosed text and replaces each tag', () => {
    expect(stripTags('<'.repeat(MB))).toBe('<'.repeat(MB))
    expect(stripTags('a<b>c<'.repeat(MB / 8))).toBe(`a${' c'.repeat(MB / 8)}<`)
    expect(stripTags('x <b>bold</b> y &lt; <unclosed')).toBe('x  bold  y &lt; <unclosed')
  }, HOSTILE_MS)

  test('a bounce with a 1 MB line "<a@a@a@…": the real recipient above it is found', () => {
    const raw = bounce(`${RECIPIENT_BLOCK}<${'a@'.repeat(MB / 2)}\r\n`)
    expect(recipientsOf(raw)).toEqual([{ address: 'gone@remote.test', status: '5.1.1', bounceKind: 'unknown-user' }])
  }, HOSTILE_MS)

  test('a bounce line "<a@b.test>" followed by 1 MB of blanks and a letter is no recipient line', () => {
    const raw = bounce(`${RECIPIENT_BLOCK}<x@b.test>${' \t'.repeat(MB / 2)}x\r\n`)
    expect(recipientsOf(raw)).toEqual([{ address: 'gone@remote.test', status: '5.1.1', bounceKind: 'unknown-user' }])
  }, HOSTILE_MS)

  test('a bounce with a 1 MB line of "-" (the marker line scan): recipients and the returned copy are read', () => {
    const raw = bounce(`${RECIPIENT_BLOCK}${'-'.repeat(MB)}\r\n--- Below this line is a copy of the message.\r\n\r\nReturn-Path: <b+copy@bounce.acme.test>\r\nMessage-ID: <orig-1@acme.test>\r\nSubject: hi\r\n\r\nbody\r\n`)
    // The 1 MB dash line is cut at READABLE_PART_BYTES, so the marker after it is not reached; the recipient is.
    expect(recipientsOf(raw)).toEqual([{ address: 'gone@remote.test', status: '5.1.1', bounceKind: 'unknown-user' }])
    const short = bounce(`${RECIPIENT_BLOCK}${'-'.repeat(40_000)}\r\n--- Below this line is a copy of the message.\r\n\r\nReturn-Path: <b+copy@bounce.acme.test>\r\nMessage-ID: <orig-1@acme.test>\r\nSubject: hi\r\n\r\nbody\r\n`)
    const r = parseDsn(short)
    expect(r.kind === 'dsn' && [r.originalMessageId, r.verpAddresses.includes('b+copy@bounce.acme.test')]).toEqual(['<orig-1@acme.test>', true])
  }, HOSTILE_MS)

  test('addresses: "<a@a@a@…" (1 MB) has no bracketed address; "a@…….b" keeps its dots', () => {
    expect(addresses(`<${'a@'.repeat(MB / 2)}`)).toEqual([])
    expect(addresses(`Bob <${'a@'.repeat(MB / 2)}x>`)).toEqual([`${'a@'.repeat(MB / 2)}x`])
    const dotted = `a@${'.'.repeat(MB)}b`
    expect(addresses(`x ${dotted}`)).toEqual([dotted])
    expect(addresses('Ann <Ann@Example.COM>, "b" <b@x.test>')).toEqual(['ann@example.com', 'b@x.test'])
    expect(addresses('c@d.test., (e@f.test)')).toEqual(['c@d.test', 'e@f.test'])
    expect(addresses('@a@b, a@b@c, plain')).toEqual([])
  }, HOSTILE_MS)

  test('messageId: "a@a@…a@<" (1 MB) is no Message-ID; ordinary ones are read', () => {
    expect(messageId(`${'a@'.repeat(MB / 2)}<`)).toBeNull()
    expect(messageId(`<${'a'.repeat(MB)}`)).toBeNull()
    expect(messageId('  <id-1@acme.test> (comment)')).toBe('<id-1@acme.test>')
    expect(messageId('id-2@acme.test')).toBe('<id-2@acme.test>')
    expect(messageId('@x')).toBeNull()
  }, HOSTILE_MS)

  test('Content-Type parameters: quoted, escaped, continued, unclosed, and 1 MB of ";" after an open quote', () => {
    expect(parseContentType('Multipart/Mixed; boundary="a \\"b\\" c"; charset=UTF-8')).toEqual({ type: 'multipart/mixed', params: { boundary: 'a "b" c', charset: 'UTF-8' } })
    expect(parseContentType('text/plain; name*0="long"; name*1=".txt"; title*=utf-8\'\'x')).toEqual({ type: 'text/plain', params: { name: 'long.txt', title: "utf-8''x" } })
    expect(parseContentType('text/plain; a="unclosed; b=c')).toEqual({ type: 'text/plain', params: { a: '"unclosed', b: 'c' } })
    expect(parseContentType('text/plain;; ;x; =y; d = e')).toEqual({ type: 'text/plain', params: { d: 'e' } })
    expect(parseContentType('nonsense')).toEqual({ type: 'text/plain', params: {} })
    expect(parseContentType(`text/plain; a="${';'.repeat(MB)}`).params.a).toBe('"')
  }, HOSTILE_MS)

  test('10 MB of "=" in a quoted-printable body and 10 MB of base64: decoded, the text capped', () => {
    const qp = analyzeInbound(Buffer.from(`From: a@remote.test\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nhi=3D${'='.repeat(10 * MB)}`, 'latin1'))
    expect(qp.kind === 'other' && qp.mail.snippet).toBe(`hi=${'='.repeat(497)}`)
    const b64 = Buffer.from(`From: a@remote.test\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from(`hello ${'x'.repeat(7 * MB)}`).toString('base64').replace(/.{76}/g, '$&\r\n')}`)
    const r = analyzeInbound(b64)
    expect(r.kind === 'other' && r.mail.snippet.slice(0, 8)).toBe('hello xx')
  }, HOSTILE_MS)

  test('multiparts nested past the depth limit, each with a 100 KB "<" html part: each level to the limit read', () => {
    let nested = `Content-Type: text/html\r\n\r\n<b>deep</b>${'<'.repeat(100_000)}`
    for (let i = 0; i < 20; i++) nested = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\nContent-Type: text/html\r\n\r\n${'<'.repeat(100_000)}\r\n--b${i}\r\n${nested}\r\n--b${i}--`
    const root = parseMime(Buffer.from(`From: a@remote.test\r\nSubject: x\r\n${nested}`, 'latin1'))
    // Parts below the depth limit (8) are not split: eight html parts, each capped.
    const text = readableText(root)
    expect(text.length).toBe(8 * READABLE_PART_BYTES + 7)
    expect(text.includes('deep')).toBe(false)
  }, HOSTILE_MS)

  test('a multipart with 100 KB boundaries: its parts are found', () => {
    const b = 'b'.repeat(100_000)
    const raw = Buffer.from(`From: a@remote.test\r\nContent-Type: multipart/alternative; boundary="${b}"\r\n\r\npreamble\r\n--${b}\r\nContent-Type: text/plain\r\n\r\none\r\n--${b} \r\nContent-Type: text/plain\r\n\r\ntwo\r\n--${b}x\r\nstill two\r\n--${b}--\r\nepilogue`, 'latin1')
    const root = parseMime(raw)
    expect(root.children.map((p) => p.body.toString('latin1'))).toEqual(['one', `two\r\n--${b}x\r\nstill two`])
    // The second part is longer than READABLE_PART_BYTES: it is read up to its last whole line in the cap.
    expect(readableText(root)).toBe('one\ntwo\r\n')
  }, HOSTILE_MS)

  test('a large message is parsed in a worker thread, with the same result as inline', async () => {
    const raw = Buffer.from(`From: Ann <ann@remote.test>\r\nSubject: =?utf-8?q?caf=C3=A9?=\r\nIn-Reply-To: <x@acme.test>\r\nReferences: ${Array.from({ length: 50 }, (_, i) => `<r${i}@acme.test>`).join(' ')}\r\nContent-Type: text/html\r\n\r\n<p>Hi</p>${'<'.repeat(MB)}`, 'latin1')
    const inline = analyzeInbound(raw)
    const threaded = await parseInbound(raw, { inlineBytes: 0 })
    expect(threaded).toEqual(inline)
    expect(threaded.kind === 'other' && threaded.mail).toMatchObject({ from: 'ann@remote.test', subject: 'café', inReplyTo: '<x@acme.test>', references: Array.from({ length: 20 }, (_, i) => `<r${i + 30}@acme.test>`) })
    // A DSN crosses the thread boundary intact too.
    const dsn = bounce(RECIPIENT_BLOCK)
    expect(await parseInbound(dsn, { inlineBytes: 0 })).toEqual(analyzeInbound(dsn))
  }, HOSTILE_MS)

  test('a parse that outlives its timeout is abandoned with the reason, as an error (the job retries it)', async () => {
    const raw = Buffer.from(`From: a@remote.test\r\nSubject: x\r\n\r\n${'x'.repeat(4 * MB)}`)
    await expect(parseInbound(raw, { inlineBytes: 0, timeoutMs: 1 })).rejects.toThrow(/took longer than 0.001 s and was abandoned/)
  }, HOSTILE_MS)
})
