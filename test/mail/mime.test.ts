import { describe, expect, test } from 'bun:test'
import { decode as qpDecode } from 'libqp'
import { composeAlternative, composeMessage, composeMessageStreamed, composeMessageSync, quotedPrintable, type OutboundMessage } from '../../src/mail/mime'
import { must } from '../helpers/must'

/**
 * The synchronous serialiser of the composer's tree against nodemailer's own stream build of the same
 * tree (same boundaries, same Message-ID and Date): byte for byte, for every shape a message can take.
 */

const base: OutboundMessage = {
  messageId: '<m1@example.com>', date: Date.UTC(2026, 0, 2, 3, 4, 5),
  from: { name: 'Ünïcode Sender', address: 'hello@example.com' }, to: { name: 'Bob', address: 'bob@dest.test' },
  replyTo: 'help@example.com',
  subject: 'A subject long enough to be folded by the composer, with ünïcode and    spaces in it',
  html: `<p>Hello   there \t </p>\n\n\n${'<div class="x">line =  é</div>\n'.repeat(200)}`, text: 'Hello there  \n\n',
  headers: { 'X-Custom': 'a   b\tc' },
  listUnsubscribe: { 'List-Unsubscribe': `<https://example.com/unsubscribe/${'A'.repeat(150)}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  feedbackId: 'send:p1:mailctl',
  attachments: [
    { filename: 'a.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), contentType: 'application/octet-stream', disposition: 'attachment' },
    { filename: 'ïmage long name with spaces.png', content: Buffer.alloc(5000, 7).toString('base64'), contentType: 'image/png', disposition: 'inline', contentId: 'img1@example.com' },
  ],
}

const ascii = 'Plain ASCII line that is short\r\n'
const variants: Record<string, Partial<OutboundMessage>> = {
  'html, text and attachments': {},
  'html and text': { attachments: [] },
  'html only': { text: null, attachments: [] },
  'text only': { html: null, attachments: [] },
  'text only, 7bit ascii': { html: null, text: ascii.repeat(5), attachments: [] },
  'text only, long lines': { html: null, text: 'x'.repeat(300), attachments: [] },
  'html only, mostly non-latin (base64 chosen)': { text: null, html: `<p>${'жзийклмн'.repeat(100)}</p>`, attachments: [] },
  'html with an attachment': { text: null },
  'text with an inline attachment': { html: null, attachments: [must(base.attachments, 'the attachments')[1]] },
  'no body at all': { html: null, text: null, attachments: [] },
  'empty attachment': { attachments: [{ filename: 'empty.txt', content: '', contentType: 'text/plain', disposition: 'attachment' }] },
  'no names, no reply-to, no extras': { from: { address: 'a@example.com' }, to: { address: 'b@dest.test' }, replyTo: null, headers: {}, listUnsubscribe: null, feedbackId: null },
}

describe('MIME composition', () => {
  for (const [name, v] of Object.entries(variants)) {
    test(`synchronous serialisation equals nodemailer's stream build: ${name}`, async () => {
      const m = composeMessageStreamed({ ...base, ...v })
      const streamed = await m.build()
      const sync = m.sync()
      expect(sync.toString('latin1')).toBe(streamed.toString('latin1'))
    })
  }

  test('composeMessage and composeMessageSync build the same message', async () => {
    const a = (await composeMessage(base)).toString('latin1')
    const b = composeMessageSync(base).toString('latin1')
    // Only the random boundaries differ between two builds.
    const boundaries = (s: string) => s.replace(/--_NmP-[0-9a-f]+-Part_\d+/g, 'B').replace(/boundary="[^"]+"/g, 'boundary=B')
    expect(boundaries(a)).toBe(boundaries(b))
    expect(a).toContain('Message-ID: <m1@example.com>')
    expect(a.endsWith('\r\n')).toBe(true)
  })

  test('quoted-printable: decodes to the text (line breaks as CRLF), lines of at most 76 characters, no trailing whitespace', () => {
    // Lone surrogates are written as U+FFFD, as Buffer.from writes them.
    const alphabet = [' ', '\t', '\r\n', '\n', '\r', '=', 'a', 'Z', '.', '~', 'é', '·', '€', '😀', '\ud83d', '\ude00', '\u0000', '\u007f', 'x'.repeat(30)]
    let seed = 11
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    const texts = ['', ' ', 'a ', 'x'.repeat(500), 'é'.repeat(200), '😀'.repeat(100), `a${'😀'.repeat(100)}`, `ab${'😀'.repeat(100)}`, `${'x'.repeat(70)}€€€€`, `${'word '.repeat(40)}\n`.repeat(3), '='.repeat(100)]
    for (let i = 0; i < 2000; i++) texts.push(Array.from({ length: rand(60) }, () => alphabet[rand(alphabet.length)]).join(''))
    // ASCII only (the line-by-line path), with control characters and long runs.
    const asciiAlphabet = [' ', '\t', '\r\n', '\n', '\r', '=', 'a', '.', '\u0001', '\u007f', 'x'.repeat(30), 'y'.repeat(74), ' '.repeat(3), '=3D']
    for (let i = 0; i < 2000; i++) texts.push(Array.from({ length: rand(40) }, () => asciiAlphabet[rand(asciiAlphabet.length)]).join(''))
    for (const t of texts) {
      const qp = quotedPrintable(t)
      expect(qp).toMatch(/^[\x20-\x7e\r\n\t]*$/)
      const lines = qp.split('\r\n')
      for (const line of lines) {
        expect(line.length).toBeLessThanOrEqual(76)
        expect(line).not.toMatch(/[ \t]$/)
        expect(line).not.toMatch(/[\r\n]/)
        // A soft break never splits an escape or a UTF-8 sequence.
        expect(line).not.toMatch(/=[0-9A-F]?=$|=[0-9A-F]$/)
        expect(line).not.toMatch(/=(?:C[2-9A-F]|D[0-9A-F]|E[0-9A-F]|F[0-4])=$/)
      }
      // Nor does a line after a soft break start with a continuation byte (a character cut after its first bytes).
      lines.forEach((line, i) => { if (i > 0 && lines[i - 1].endsWith('=')) expect(line).not.toMatch(/^=[89AB]/) })
      const expected = Buffer.from(t.replace(/\r?\n/g, '\r\n'), 'utf8')
      expect(Buffer.from(qpDecode(qp)).equals(expected)).toBe(true)
    }
  })

  describe('the direct build of HTML and text (composeAlternative)', () => {
    const plain: OutboundMessage = {
      messageId: '<01a21aaa-242a-76f4-8c01-d0e31830ce4e@example.com>', date: Date.UTC(2026, 0, 2, 3, 4, 5),
      from: { name: 'Bench', address: 'hello@example.com' }, to: { address: 'user1@dest.test' },
      subject: 'News for you', html: `<p>Hello =  there \t </p>\n${'<a href="https://example.com/x?a=1&b=2">é</a>\n'.repeat(40)}`, text: 'Hello there  \n\n€',
      listUnsubscribe: { 'List-Unsubscribe': `<https://mail.example.com/u/${'A'.repeat(120)}>, <mailto:unsubscribe+${'B'.repeat(30)}@example.com>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
      feedbackId: 'campaign:p1:mailctl',
    }
    const boundaries = (b: Buffer) => b.toString('latin1').replace(/--_NmP-[0-9a-f]{16}-Part_1/g, 'B')
    /** Shapes it builds itself: each must be byte for byte what nodemailer's composer gives. */
    const taken: Record<string, Partial<OutboundMessage>> = {
      'a campaign message': {},
      'names written as they are, quoted, or folded': { from: { name: 'Bench, Inc. (news)', address: 'first.last+tag@mail.example.co.uk' }, to: { name: `O'Brien \\ ${'x'.repeat(80)}`, address: "o'neil@example.com" } },
      'a reply-to, custom headers, a long subject folded at spaces': {
        replyTo: 'help@example.com', headers: { 'x-entity-ref-id': 'abc', 'X-Long': `${'word '.repeat(30)}end`, 'X-Token': 'z'.repeat(100), 'List-Id': 'News <news.example.com>' },
        subject: `A subject long enough to be folded by the composer, with    spaces and ${'y'.repeat(90)} a long word`,
      },
      'no extras': { listUnsubscribe: null, feedbackId: null, headers: {}, replyTo: null },
      'an A-label domain, a long message id': { to: { address: 'a@xn--jgeva-dua.ee' }, messageId: `<${'m'.repeat(90)}@example.com>` },
    }
    for (const [name, v] of Object.entries(taken)) {
      test(`equals the composer's build: ${name}`, () => {
        const m = { ...plain, ...v }
        const direct = must(composeAlternative(m), 'the direct build')
        expect(boundaries(direct)).toBe(boundaries(composeMessageStreamed(m).sync()))
        expect(boundaries(composeMessageSync(m))).toBe(boundaries(direct))
      })
    }
    /** Shapes it leaves to the composer (an encoding, a header nodemailer rewrites, an address it normalises). */
    const declined: Record<string, Partial<OutboundMessage>> = {
      'an attachment': { attachments: [{ filename: 'a.txt', content: 'YQ==', contentType: 'text/plain', disposition: 'attachment' }] },
      'HTML only': { text: null },
      'text only': { html: null },
      'a non-ASCII name': { from: { name: 'Ünïcode', address: 'hello@example.com' } },
      'a name with spaces at its end': { to: { name: ' Ann', address: 'user1@dest.test' } },
      'a non-ASCII subject': { subject: 'Grüße' },
      'a subject with a quote': { subject: 'Say "hi"' },
      'a subject with "=?"': { subject: 'a =?x' },
      'an empty subject': { subject: '' },
      'an upper-case domain': { to: { address: 'a@Example.com' } },
      'a quoted local part': { to: { address: '"q"@example.com' } },
      'a reply-to with a name': { replyTo: 'Help <help@example.com>' },
      'a custom References': { headers: { References: '<a@b>' } },
      'two custom headers of one name': { headers: { 'x-a': '1', 'X-A': '2' } },
      'a custom header of spaces': { headers: { 'X-Empty': ' ' } },
      'a custom header with a quote': { headers: { 'X-SMTPAPI': '{"a":1}' } },
      'a message id without brackets': { messageId: 'm2@example.com' },
    }
    for (const [name, v] of Object.entries(declined)) {
      test(`leaves it to the composer: ${name}`, () => {
        expect(composeAlternative({ ...plain, ...v })).toBeNull()
      })
    }
  })
})
