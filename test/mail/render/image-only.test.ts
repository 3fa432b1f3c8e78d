import { describe, expect, test } from 'bun:test'
import { IMAGE_ONLY_MAX_CHARS, pastImageOnlyBands } from '../../../src/mail/render/image-only'
import { withUnsubscribeFooter } from '../../../src/mail/render/campaign'
import { rewriteForTracking } from '../../../src/mail/render/tracking'

const deps = { secret: 'image-only-secret', config: { publicUrl: 'https://mail.example.net' } }
const emailId = '0190f3a3-1111-7aaa-8bbb-000000000009'
/** Code points, as a filter that decodes the part counts them. */
const chars = (s: string) => [...s].length

describe('HTML with images is taken past the HTML_IMAGE_ONLY bands', () => {
  test('short HTML with an <img> gets spaces before its </body> up to one past the last band', () => {
    const html = '<html><body><img src="https://cdn.test/a.png" alt="A"><p>Hi</p></body></html>'
    const out = pastImageOnlyBands(html, html.indexOf('</body>'))
    expect(chars(out)).toBe(IMAGE_ONLY_MAX_CHARS + 1)
    expect(out.startsWith('<html><body><img src="https://cdn.test/a.png" alt="A"><p>Hi</p> ')).toBe(true)
    expect(out.endsWith(' </body></html>')).toBe(true)
    expect(out.replace(/ {2,}/, '')).toBe(html)
  })

  test('without </body> the spaces go at the end; <IMG/> in any case counts', () => {
    const out = pastImageOnlyBands('<IMG/>', -1)
    expect(out.startsWith('<IMG/>')).toBe(true)
    expect(out.length).toBe(IMAGE_ONLY_MAX_CHARS + 1)
  })

  test('left as they are: HTML without an image, HTML already past the bands, exactly one past', () => {
    const noImage = `<p>${'x'.repeat(100)}</p><table><tr><td background="https://t.test/o"></td></tr></table>`
    expect(pastImageOnlyBands(noImage, -1)).toBe(noImage)
    expect(pastImageOnlyBands('<imgx src="a">', -1)).toBe('<imgx src="a">')
    const long = `<img src="a">${'y'.repeat(IMAGE_ONLY_MAX_CHARS)}`
    expect(pastImageOnlyBands(long, -1)).toBe(long)
    const atBound = `<img src="a">${'y'.repeat(IMAGE_ONLY_MAX_CHARS + 1 - 13)}`
    expect(atBound.length).toBe(IMAGE_ONLY_MAX_CHARS + 1)
    expect(pastImageOnlyBands(atBound, -1)).toBe(atBound)
    const oneShort = atBound.slice(0, -1)
    expect(pastImageOnlyBands(oneShort, -1)).toBe(`${oneShort} `)
  })

  test('a supplementary character counts once', () => {
    const html = `<img src="a">${'😀'.repeat(1000)}`
    const out = pastImageOnlyBands(html, -1)
    expect(chars(out)).toBe(IMAGE_ONLY_MAX_CHARS + 1)
  })

  test('the open pixel and the unsubscribe footer of short HTML with an image: past the bands; without an image: nothing added but them', () => {
    const withImage = '<body><img src="https://cdn.test/banner.jpg" alt="Sale"><p>20% off. <a href="https://shop.test/s">Shop</a></p></body>'
    const tracked = rewriteForTracking(deps, { emailId, html: withImage, trackingEnabled: true })
    expect(chars(tracked)).toBe(IMAGE_ONLY_MAX_CHARS + 1)
    expect(tracked).toMatch(/<img src="https:\/\/mail\.example\.net\/t\/o\/[^"]+" width="1" height="1"[^>]*> +<\/body>$/)
    const footed = withUnsubscribeFooter(withImage, 'text', 'https://mail.example.net/unsubscribe/x').html
    expect(chars(footed)).toBe(IMAGE_ONLY_MAX_CHARS + 1)
    expect(footed).toMatch(/Unsubscribe<\/a><\/p> +<\/body>$/)
    // Footer then tracking (a campaign message): nothing more is added once past the bands.
    const both = rewriteForTracking(deps, { emailId, html: footed, trackingEnabled: true })
    expect(both.length).toBeGreaterThan(IMAGE_ONLY_MAX_CHARS + 1)
    expect(both.match(/ {2,}/g)?.length).toBe(1)

    const noImage = '<body><p>20% off. <a href="https://shop.test/s">Shop</a></p></body>'
    const trackedNoImage = rewriteForTracking(deps, { emailId, html: noImage, trackingEnabled: true })
    expect(trackedNoImage).not.toMatch(/ {2,}/)
    expect(trackedNoImage.length).toBeLessThan(1000)
  })

  test('with tracking off and no footer mailctl adds nothing, so nothing is padded', () => {
    const html = '<body><img src="https://cdn.test/a.png" alt="A"></body>'
    expect(rewriteForTracking(deps, { emailId, html, trackingEnabled: false })).toBe(html)
  })
})
