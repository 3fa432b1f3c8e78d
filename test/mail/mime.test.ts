import { describe, expect, test } from 'bun:test'
import { decode as qpDecode } from 'libqp'
import { composeMessage, composeMessageStreamed, composeMessageSync, quotedPrintable, type OutboundMessage } from '../../src/mail/mime'
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
    const alphabet = [' ', '\t', '\r\n', '\n', '\r', '=', 'a', 'Z', '.', '~', 'é', '€', '😀', '\u0000', '\u007f', 'x'.repeat(30)]
    let seed = 11
    const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    const texts = ['', ' ', 'a ', 'x'.repeat(500), 'é'.repeat(200), '😀'.repeat(100), `${'word '.repeat(40)}\n`.repeat(3), '='.repeat(100)]
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
      const expected = Buffer.from(t.replace(/\r?\n/g, '\r\n'), 'utf8')
      expect(Buffer.from(qpDecode(qp)).equals(expected)).toBe(true)
    }
  })
})
