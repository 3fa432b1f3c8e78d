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

/**
 * The encoder as it was before lines of mostly-ASCII text took the string path, kept as the reference:
 * the present one must give the same bytes for every text.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control bytes quoted-printable encodes
const REF_BYTES = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\uffff]/
const REF_HEX = new TextEncoder().encode('0123456789ABCDEF')
const REF_QP_HEX = Array.from({ length: 128 }, (_, c) => `=${c.toString(16).toUpperCase().padStart(2, '0')}`)
function referenceQuotedPrintable(text: string): string {
  return REF_BYTES.test(text) ? referenceBytes(text) : referenceAscii(text)
}
function referenceAscii(text: string): string {
  const lines = text.includes('\r') ? text.split(/\r?\n/) : text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]
    if (line.includes('=')) line = line.replaceAll('=', '=3D')
    if (line.includes('\r')) line = line.replaceAll('\r', '=0D')
    const last = line.charCodeAt(line.length - 1)
    if (last === 0x20 || last === 0x09) line = line.slice(0, -1) + REF_QP_HEX[last]
    if (line.length > 76) {
      const pieces: string[] = []
      let pos = 0
      while (line.length - pos > 76) {
        let cut = pos + 75
        if (line.charCodeAt(cut - 1) === 0x3d) cut -= 1
        else if (line.charCodeAt(cut - 2) === 0x3d) cut -= 2
        pieces.push(line.slice(pos, cut))
        pos = cut
      }
      pieces.push(line.slice(pos))
      line = pieces.join('=\r\n')
    }
    lines[i] = line
  }
  return lines.join('\r\n')
}
function referenceBytes(text: string): string {
  const src = Buffer.from(text, 'utf8')
  const len = src.length
  const out = new Uint8Array(Math.ceil(len * 3 * (1 + 3 / 72)) + 8)
  let o = 0
  let col = 0
  for (let i = 0; i < len; i++) {
    const c = src[i]
    if (c === 0x0a || (c === 0x0d && src[i + 1] === 0x0a)) {
      if (c === 0x0d) i++
      out[o++] = 0x0d
      out[o++] = 0x0a
      col = 0
      continue
    }
    let literal = (c >= 0x21 && c <= 0x7e && c !== 0x3d)
    if (c === 0x20 || c === 0x09) {
      const next = src[i + 1]
      literal = !(i + 1 === len || next === 0x0a || (next === 0x0d && src[i + 2] === 0x0a))
    }
    const need = literal ? 1 : c >= 0xf0 ? 12 : c >= 0xe0 ? 9 : c >= 0xc0 ? 6 : 3
    if (col + need > 75) {
      out[o++] = 0x3d
      out[o++] = 0x0d
      out[o++] = 0x0a
      col = 0
    }
    if (literal) {
      out[o++] = c
      col++
    } else {
      out[o++] = 0x3d
      out[o++] = REF_HEX[c >> 4]
      out[o++] = REF_HEX[c & 15]
      col += 3
    }
  }
  return Buffer.from(out.buffer, 0, o).toString('latin1')
}

describe('quoted-printable against the reference encoder', () => {
  let seed = 29
  const rand = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
  /** Pieces that meet at line ends, soft breaks and escapes: runs whose lengths land a line on 74-77 characters. */
  const asciiPieces = ['a', 'Z', '.', '~', '<td style="padding:0">', '=', '==', ' ', '  ', '\t', ' \t', '\r', '\u0001', '\u007f',
    'x'.repeat(30), 'y'.repeat(73), 'y'.repeat(74), 'y'.repeat(75), 'y'.repeat(76), 'y'.repeat(77), 'z'.repeat(150), 'z'.repeat(151), '=3D']
  const breaks = ['\n', '\r\n', '\r\r\n', ' \n', '\t\r\n', '\n\n']
  const wide = ['é', 'ß', '·', '©', 'ж', 'Привет', '中文字符', '€', '😀', '👍🏽', '\ud83d', '\ude00', '\u00a0']
  const alphabets: Record<string, string[]> = {
    'mostly ASCII with a few wide characters': [...asciiPieces, ...asciiPieces, ...breaks, ...breaks, ...wide.slice(0, 4)],
    'ASCII and wide characters evenly': [...asciiPieces, ...breaks, ...wide],
    'mostly wide characters': [...wide, ...wide, ...wide, ...breaks, 'a', ' ', '='],
    'ASCII only': [...asciiPieces, ...breaks],
  }
  for (const [name, alphabet] of Object.entries(alphabets)) {
    test(`the same bytes as the reference: ${name}`, () => {
      for (let i = 0; i < 3000; i++) {
        const t = Array.from({ length: rand(80) }, () => alphabet[rand(alphabet.length)]).join('')
        const got = quotedPrintable(t)
        if (got !== referenceQuotedPrintable(t)) expect({ text: t, got }).toEqual({ text: t, got: referenceQuotedPrintable(t) })
      }
    })
  }

  test('the same bytes as the reference: long texts of many lines (design body, Russian, Chinese, one accent)', () => {
    const design = require('node:fs').readFileSync(`${import.meta.dir}/../../bench/fixtures/design-body.txt`, 'utf8') as string
    const lines = Array.from({ length: 200 }, (_, i) => `<p style="margin:0 0 ${i}px">${'word '.repeat(i % 40)}</p>${i % 7 === 0 ? ' ' : ''}`)
    const texts = [
      design, design.replace(/·/g, '-'), `${design}\n·`, design.replace(/\n/g, '\r\n'),
      'Съешь же ещё этих мягких французских булок, да выпей чаю. '.repeat(100),
      `${'Съешь же ещё этих мягких французских булок, да выпей чаю.\n'.repeat(100)}${'ascii line\n'.repeat(99)}`,
      '我能吞下玻璃而不伤身体。'.repeat(300), `${'我能吞下玻璃而不伤身体。\r\n'.repeat(50)}${'y'.repeat(76)}\n`,
      lines.join('\n'), `${lines.join('\n')}é`, `é\n${lines.join('\r\n')}`, `${lines.join('\n')}\n${'y'.repeat(76)}\n😀`,
    ]
    for (const t of texts) expect(quotedPrintable(t)).toBe(referenceQuotedPrintable(t))
  })
})
