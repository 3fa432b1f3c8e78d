import { describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { join } from 'node:path'
import { dkimVerify } from 'mailauth/lib/dkim/verify'
import { LINK_PATHS, verifyLinkToken } from '../../../src/mail/links'
import { buildOutbound } from '../../../src/mail/signer'
import { renderCampaignBody, renderCampaignContent, type CampaignContent, type CampaignSource } from '../../../src/mail/render/campaign'
import { rewriteForTracking } from '../../../src/mail/render/tracking'

// mailparser ships no type declarations: the part of its result used here.
const { simpleParser } = require('mailparser') as { simpleParser: (raw: Buffer) => Promise<{ html: string | false }> }

const deps = { secret: 'plan-secret', config: { publicUrl: 'https://mail.example.net' } }
const projectId = '0190f3a3-0000-7aaa-8bbb-000000000001'
const uuid = (n: number) => `0190f3a3-1111-7aaa-8bbb-${n.toString(16).padStart(12, '0')}`
const design = await Bun.file(join(import.meta.dir, '../../../bench/fixtures/design-body.txt')).text()

/** The per-message path: render, footer, link rewrite. */
function perMessage(c: CampaignContent): { html: string; text: string } {
  const { html, text } = renderCampaignBody(deps, c.campaign, c.contact, c.emailId)
  return { html: rewriteForTracking(deps, { emailId: c.emailId, html, trackingEnabled: c.tracking }), text }
}

/** Quoted-printable decoded to its bytes, read as UTF-8 (soft breaks removed, =XX decoded, CRLF as LF). */
function decodeQp(qp: string): string {
  const bytes: number[] = []
  const body = qp.replace(/=\r\n/g, '')
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '=') { bytes.push(parseInt(body.slice(i + 1, i + 3), 16)); i += 2 } else if (body[i] === '\r' && body[i + 1] === '\n') { bytes.push(10); i++ } else bytes.push(body.charCodeAt(i))
  }
  return Buffer.from(bytes).toString('utf8')
}

const contacts = [
  { firstName: 'Ann', plan: 'pro' },
  {},
  { firstName: '<b>"O\'Brien" & =sons</b>' },
  { firstName: 'Zoë · Ünal 日本' },
  { firstName: '' },
  { firstName: 'line\nbreak' },
  { firstName: 'ends with blanks \t ', plan: ' ' },
  // A value that starts a line: blanks before it end a line (escaped).
  { firstName: '\nstarts a line' },
]

function content(body: string, n: number, tracking: boolean, type = 'MARKETING'): CampaignContent {
  const campaign: CampaignSource = { id: uuid(900), projectId, subject: 's', body, type }
  return { emailId: uuid(n + 100), campaign, contact: { id: uuid(n), email: `r${n}@dest.test`, data: contacts[n % contacts.length] }, tracking }
}

/** Every message of the body is the per-message path's HTML and text, and its quoted-printable decodes to it. */
function expectSame(body: string, planned: boolean) {
  for (const tracking of [true, false]) {
    for (const type of ['MARKETING', 'TRANSACTIONAL']) {
      for (let n = 0; n < contacts.length; n++) {
        const c = content(body, n, tracking, type)
        const got = renderCampaignContent(deps, c)
        const want = perMessage(c)
        expect(got.html).toBe(want.html)
        expect(got.text).toBe(want.text)
        expect(got.htmlEncoded !== undefined).toBe(planned)
        if (got.htmlEncoded !== undefined) {
          expect(decodeQp(got.htmlEncoded)).toBe(want.html.replace(/\r\n/g, '\n'))
          for (const line of got.htmlEncoded.split('\r\n')) {
            expect(line.length).toBeLessThanOrEqual(76)
            expect(line).toMatch(/^[\x21-\x7e \t]*$/)
            expect(line).not.toMatch(/[ \t]$/)
          }
        }
      }
    }
  }
}

describe('a campaign body made once per campaign (plan.ts)', () => {
  test('the visual editor\'s body: the same HTML and text as rendered per message, its quoted-printable decoding to it', () => {
    expectSame(design, true)
  })

  test('hand-written bodies with variables in text, in quoted attributes, as own hrefs, with or without </body>', () => {
    expectSame(`<html><body><h1>Hello {{firstName}}</h1>${'<p>News. <a href="https://shop.test/x">Shop</a></p>'.repeat(20)}</body></html>`, true)
    expectSame('<p title="Hi {{firstName}}">Hi {{ firstName | default: "there" }}</p><a href="https://a.test/" title="{{firstName}}">a</a><a href="{{manageUrl}}">m</a>', true)
    expectSame('<table><tr><td style="color:{{plan}}">{{firstName}}</td></tr></table>\r\n<a href=\'https://b.test/?q=1&amp;r=2\'>b</a> <a href="mailto:x@y.test">m</a> <a data-notrack href="https://c.test/">c</a>', true)
    expectSame(`<img src="https://cdn.test/a.png" alt="{{firstName}}"><p>${'x'.repeat(7000)}</p>`, true)
    expectSame(`<p>{{firstName}}\n{{plan}} \n${'y'.repeat(73)}{{plan}}\n</p>{{firstName}}`, true)
  })

  test('bodies where a value could change a link, a tag or the padding are rendered per message, with the same result', () => {
    for (const body of [
      '<a href="https://shop.test/{{firstName}}">x</a>', // a link's target
      '<a href="{{firstName}}">x</a>', // a target from data
      '<a {{firstName}} href="https://shop.test/">x</a>', // an unquoted place in a link tag
      '<p><{{firstName}} href="https://x.test/">y</p>', // a tag's name
      '<p>a</p></body {{firstName}}>', // the blanks of </body
      '<img{{firstName}} src="x">', // an image's name
      '<img src="https://cdn.test/a.png" alt="{{firstName}}"><p>short</p>', // image-only padding by length
      '<p>{{{firstName}}}</p>', // not escaped
      '{{#if firstName}}<p>{{firstName}}</p>{{/if}}', // not the fast path
      '<p>\uE006{{firstName}}</p>', // place-holder characters in the source
    ]) expectSame(body, false)
  })

  test('a planned message built and signed: DKIM verifies, each link and the pixel are signed for its own email', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const key = { domain: 'plan.test', selector: 's1', privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() }
    const dnsValue = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`
    for (const n of [0, 3]) {
      const c = content(design, n, true)
      const raw = await buildOutbound({ messageId: `<m${n}@plan.test>`, date: Date.UTC(2026, 10, 28), from: { address: 'news@plan.test' }, to: { address: c.contact.email }, subject: 'News', campaign: c }, key, deps)
      const res = await dkimVerify(raw, { resolver: async (name: string) => (name === 's1._domainkey.plan.test' ? [[dnsValue]] : []) })
      expect(res.results[0].status.result).toBe('pass')
      const parsed = await simpleParser(raw)
      expect(parsed.html).toBe(perMessage(c).html)
      const clicks = [...String(parsed.html).matchAll(new RegExp(`${deps.config.publicUrl}${LINK_PATHS.click}/([\\w-]+)`, 'g'))].map((m) => verifyLinkToken(deps, m[1], 'click'))
      expect(clicks.length).toBe(6)
      for (const t of clicks) expect(t?.emailId).toBe(c.emailId)
      expect(new Set(clicks.map((t) => t?.url))).toEqual(new Set(['https://example.com/changelog', 'https://example.com/blog', 'https://example.com', 'https://x.com/', 'https://www.linkedin.com/']))
      const pixel = new RegExp(`${deps.config.publicUrl}${LINK_PATHS.open}/([\\w-]+)`).exec(String(parsed.html))
      expect(verifyLinkToken(deps, pixel?.[1] ?? '', 'open')?.emailId).toBe(c.emailId)
    }
  })
})
