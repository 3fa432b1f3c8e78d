import { describe, expect, test } from 'bun:test'
import { clickUrl, unsubscribeUrl } from '../../../src/mail/links'
import { withUnsubscribeFooter } from '../../../src/mail/render/campaign'
import { linkTagCacheSize, rewriteForTracking } from '../../../src/mail/render/tracking'
import { urlsIn } from './fixture'

const deps = { secret: 'rewrite-secret', config: { publicUrl: 'https://mail.example.net' } }
const id = '0190f3a3-1111-7aaa-8bbb-000000000002'
const rewrite = (html: string) => rewriteForTracking(deps, { emailId: id, html, trackingEnabled: true })

/** Issue 35 item 1: the HTML is a tenant's; the rewrite is linear in it (the per-test timeout is the only clock). */
describe('rewriteForTracking on hostile HTML', () => {
  test('"<a " x 300,000 (no ">"): nothing is a link, the pixel is appended', () => {
    const html = '<a '.repeat(300_000)
    const out = rewrite(html)
    expect(out.startsWith(html)).toBe(true)
    expect(out.slice(html.length).startsWith('<table role="presentation"')).toBe(true)
  }, 5_000)

  test('an unclosed <a href=" x 100,000 after a real link: the link is tracked, the cut tag is left as written', () => {
    const html = `<a href="https://x.test/a">A</a>${'<a href="'.repeat(100_000)}`
    const out = rewrite(html)
    expect(urlsIn(out, 'href')[0]).toBe(clickUrl(deps, id, 'https://x.test/a'))
    expect(out).toContain('<a href="'.repeat(100_000))
  }, 5_000)

  test('200,000 </body> and 200,000 "<area": the pixel goes before the last </body>', () => {
    const html = `${'<area'.repeat(200_000)}${'</body>'.repeat(200_000)}x`
    const out = rewrite(html)
    expect(out.lastIndexOf('<table role="presentation"')).toBe(html.length - '</body>x'.length)
  }, 5_000)

  test('attributes are read as a browser reads them: href inside another value is not the link, quoted ">" stays in the tag', () => {
    const out = rewrite('<a title=" href=https://evil.test/" href="https://x.test/b?q=>">B</a><a HREF = \'https://x.test/c\' data-x>C</a>')
    expect(urlsIn(out, 'href')).toEqual([clickUrl(deps, id, 'https://x.test/b?q=>')])
    expect(out).toContain(`<a HREF = "${clickUrl(deps, id, 'https://x.test/c')}" data-x>C</a>`)
    expect(out).toContain('title=" href=https://evil.test/"')
  })
})

describe('rewriteForTracking: where the pixel goes, what is cached', () => {
  test('the pixel goes before the last </body> in any case, with blanks before its ">"; </bodyx> is not one', () => {
    const pixelAt = (html: string) => rewrite(html).indexOf('<table role="presentation"')
    expect(pixelAt('<p>a</p></BODY ></html>')).toBe('<p>a</p>'.length)
    expect(pixelAt('<body>a</Body>b</bOdY\n>c')).toBe('<body>a</Body>b'.length)
    expect(pixelAt('<p>a</p></bodyx>')).toBe('<p>a</p></bodyx>'.length)
    expect(pixelAt('<p>a</p></body')).toBe('<p>a</p></body'.length)
  })

  test("a message's own links (its unsubscribe URL) are not kept in the shared tag cache; the campaign's links are", () => {
    const before = linkTagCacheSize()
    for (let i = 0; i < 200; i++) {
      const own = unsubscribeUrl(deps, { projectId: id, contactId: `0190f3a3-1111-7aaa-8bbb-${String(i).padStart(12, '0')}`, emailId: id })
      const out = rewrite(`<a href="https://x.test/shared-${before}">S</a><a href="${own}" style="color:#555">Unsubscribe</a>`)
      expect(urlsIn(out, 'href')).toEqual([clickUrl(deps, id, `https://x.test/shared-${before}`), own])
    }
    expect(linkTagCacheSize() - before).toBe(1)
  })
})

describe('the unsubscribe footer', () => {
  test('goes before the last </body> in any case, else at the end', () => {
    const footerAt = (html: string) => withUnsubscribeFooter(html, 't', 'https://mail.example.net/unsubscribe/x').html.indexOf('<p style="margin:24px')
    expect(footerAt('<body><p>a</p></BODY >')).toBe('<body><p>a</p>'.length)
    expect(footerAt('<p>a</p>')).toBe('<p>a</p>'.length)
  })
})
