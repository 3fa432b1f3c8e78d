import { beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { clickUrl, LINK_PATHS, openPixelUrl, signLinkToken, unsubscribeUrl } from '../../../src/mail/links'
import { campaignStats, emailStats } from '../../../src/modules/tracking/repo'
import { decodeAttribute, rewriteForTracking } from '../../../src/mail/render/tracking'
import { recordOpen } from '../../../src/modules/tracking/service'
import { PIXEL_GIF } from '../../../src/modules/tracking/routes'
import { forEachStore } from '../../helpers/env'
import { emailRow, eventsOf, pathOf, queueTestEmail, urlsIn } from './fixture'
import { must } from '../../helpers/must'

const deps = { secret: 'rewrite-secret', config: { publicUrl: 'https://mail.example.net' } }

describe('rewriteForTracking', () => {
  const id = '0190f3a3-1111-7aaa-8bbb-000000000002'

  test('tracking off: the HTML is returned unchanged (no pixel, no rewritten link)', () => {
    const html = '<html><body><a href="https://example.com/">x</a></body></html>'
    expect(rewriteForTracking(deps, { emailId: id, html, trackingEnabled: false })).toBe(html)
    expect(rewriteForTracking(deps, { emailId: id, html: null, trackingEnabled: true })).toBeNull()
  })

  test('absolute http(s) links become signed click URLs carrying the decoded target; the pixel goes before </body>', () => {
    const html = '<html><body><a class="b" href="https://example.com/a?x=1&amp;y=2">A</a> <A HREF=\'http://example.org/b\'>B</A> <area href=https://example.net/c></body></html>'
    const out = rewriteForTracking(deps, { emailId: id, html, trackingEnabled: true })
    const hrefs = urlsIn(out, 'href')
    expect(hrefs).toHaveLength(3)
    expect(hrefs[0]).toBe(clickUrl(deps, id, 'https://example.com/a?x=1&y=2'))
    expect(hrefs[1]).toBe(clickUrl(deps, id, 'http://example.org/b'))
    expect(hrefs[2]).toBe(clickUrl(deps, id, 'https://example.net/c'))
    expect(out).toContain('class="b"')
    expect(out).toContain('>A</a>')
    // No image of its own: the pixel is a cell's background, not the message's only <img> (bench/spam-score.ts).
    const pixel = `background="${openPixelUrl(deps, id)}"`
    expect(out).toContain(pixel)
    expect(out.indexOf(pixel)).toBeLessThan(out.indexOf('</body>'))
    expect(out).not.toContain('<img')
    // With an image of its own, the pixel is a 1x1 <img>.
    const withImage = rewriteForTracking(deps, { emailId: id, html: '<body><IMG SRC="https://example.com/logo.png"></body>', trackingEnabled: true })
    expect(withImage).toContain(`<img src="${openPixelUrl(deps, id)}" width="1" height="1"`)
    expect(withImage).not.toContain('background=')
  })

  test('mailto, tel, anchors, relative links, mailctl\'s own links and data-notrack links are left alone', () => {
    const unsub = unsubscribeUrl(deps, { projectId: id, contactId: id })
    const html = [
      '<a href="mailto:a@b.c">m</a>', '<a href="tel:+1555">t</a>', '<a href="#top">h</a>', '<a href="/rel">r</a>',
      `<a href="${unsub}">u</a>`, '<a data-notrack href="https://example.com/keep">k</a>', '<a name="x">no href</a>',
      '<a href="javascript:alert(1)">j</a>',
    ].join('')
    const out = rewriteForTracking(deps, { emailId: id, html, trackingEnabled: true })
    expect(out.startsWith(html)).toBe(true)
    expect(out).toContain(`background="${openPixelUrl(deps, id)}"`)
  })

  test('a link repeated in an email, or in the next email, gets that email\'s own token each time; a tag is read again under another public URL', () => {
    const other = '0190f3a3-1111-7aaa-8bbb-000000000003'
    const tag = '<a href="https://example.com/shop">Shop</a>'
    const html = `<body>${tag}<p>x</p>${tag}<a class="c" href="https://example.com/shop">Again</a></body>`
    for (const emailId of [id, other, id]) {
      const hrefs = urlsIn(rewriteForTracking(deps, { emailId, html, trackingEnabled: true }), 'href')
      expect(hrefs).toEqual(Array(3).fill(clickUrl(deps, emailId, 'https://example.com/shop')))
    }
    // Under a public URL that is the link's own host, the same tag is mailctl's own link: left alone.
    const own = { secret: deps.secret, config: { publicUrl: 'https://example.com' } }
    const ownTag = '<a href="https://example.com/unsubscribe/abc">u</a>'
    expect(urlsIn(rewriteForTracking(deps, { emailId: id, html: ownTag, trackingEnabled: true }), 'href')).toEqual([clickUrl(deps, id, 'https://example.com/unsubscribe/abc')])
    expect(rewriteForTracking(own, { emailId: id, html: ownTag, trackingEnabled: true }).startsWith(ownTag)).toBe(true)
  })

  test('no </body>: the pixel is appended; a later </body> inside text is not confused with an earlier one', () => {
    const out = rewriteForTracking(deps, { emailId: id, html: '<p>plain</p>', trackingEnabled: true })
    expect(out.startsWith('<p>plain</p><table role="presentation"')).toBe(true)
    const two = rewriteForTracking(deps, { emailId: id, html: '<body>a</body><body>b</body>', trackingEnabled: true })
    expect(two.indexOf('<table')).toBeGreaterThan(two.indexOf('b'))
  })

  test('attribute decoding follows what a browser would open', () => {
    expect(decodeAttribute('a&amp;b&#38;c&#x26;d&quot;&unknown;')).toBe('a&b&c&d"&unknown;')
    // Half of a surrogate pair is U+FFFD (no store can hold it alone); NUL and past U+10FFFF stay as written.
    expect(decodeAttribute('a&#xD800;b&#57343;c&#0;d&#x110000;')).toBe('a\uFFFDb\uFFFDc&#0;d&#x110000;')
  })
})

forEachStore('tracking: open pixel and click redirect', (env) => {
  let projectId = ''
  beforeAll(async () => {
    projectId = (await env.project()).id
  })

  /** The pixel and click URLs the pipeline put into a queued email's HTML. */
  async function tracked() {
    const email = await queueTestEmail(env, projectId)
    const stored = await emailRow(env, email.id)
    const html = must(stored.html, 'the stored HTML')
    const pixel = must([...urlsIn(html, 'src'), ...urlsIn(html, 'background')].find((u) => u.includes(`${LINK_PATHS.open}/`)), 'the open pixel URL')
    const click = must(urlsIn(html, 'href').find((u) => u.includes(`${LINK_PATHS.click}/`)), 'a click URL')
    return { email, pixel, click }
  }

  test('queued mail of a project with tracking on carries the pixel and signed links (queueEmails calls rewriteForTracking)', async () => {
    const { email, pixel, click } = await tracked()
    expect(pixel).toBe(openPixelUrl(env.deps, email.id))
    expect(click).toBe(clickUrl(env.deps, email.id, 'https://example.com/a?x=1&y=2'))
  })

  test('tracking off for the project: no pixel, links untouched', async () => {
    const p = await env.project()
    await env.store.tx((db) => db.update(env.store.t.projects).set({ trackingEnabled: false }).where(eq(env.store.t.projects.id, p.id)))
    const email = await queueTestEmail(env, p.id, { html: '<body><a href="https://example.com/x">x</a></body>' })
    expect((await emailRow(env, email.id)).html).toBe('<body><a href="https://example.com/x">x</a></body>')
  })

  test('GET /t/o/:token answers a never-cached 1x1 GIF; the first open is the only first, counted on the email', async () => {
    const { email, pixel } = await tracked()
    const first = await env.request('GET', pathOf(pixel), { headers: { 'user-agent': 'Mozilla/5.0 TestMail' } })
    expect(first.status).toBe(200)
    expect(first.headers.get('content-type')).toBe('image/gif')
    expect(first.headers.get('cache-control')).toContain('no-store')
    const body = Buffer.from(await (await env.app.handle(new Request(`http://localhost${pathOf(pixel)}`))).arrayBuffer())
    expect(body.equals(PIXEL_GIF)).toBe(true)
    await env.request('GET', pathOf(pixel))
    const opens = await eventsOf(env, email.id, 'email.open')
    expect(opens).toHaveLength(3)
    expect(opens.map((e) => e.data.isFirstOpen)).toEqual([true, false, false])
    expect(opens[0].data).toMatchObject({ emailId: email.id, messageId: email.messageId, subject: 'Welcome', from: 'hello@acme.test', sourceType: 'send', userAgent: 'Mozilla/5.0 TestMail' })
    expect(opens[0].contactId).toBe(email.contactId)
    const row = await emailRow(env, email.id)
    expect(row.status).toBe('OPENED')
    expect(row.openedAt?.toISOString()).toBe(String(opens[0].data.openedAt))
    expect((await emailStats(env.store, projectId, email.id))?.opens).toBe(3)
  })

  test('simultaneous first opens: exactly one is first', async () => {
    const { email } = await tracked()
    const results = await Promise.all(Array.from({ length: 12 }, () => recordOpen(env.deps, email.id)))
    expect(results.filter((r) => r.isFirst)).toHaveLength(1)
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1))
    const opens = await eventsOf(env, email.id, 'email.open')
    expect(opens.filter((e) => e.data.isFirstOpen === true)).toHaveLength(1)
  })

  test('GET /t/c/:token redirects (302) to the signed target and records email.click, first click once; status CLICKED', async () => {
    const { email, click } = await tracked()
    const res = await env.request('GET', pathOf(click))
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('https://example.com/a?x=1&y=2')
    expect(res.headers.get('cache-control')).toContain('no-store')
    await env.request('GET', pathOf(click))
    const clicks = await eventsOf(env, email.id, 'email.click')
    expect(clicks.map((e) => [e.data.link, e.data.isFirstClick])).toEqual([['https://example.com/a?x=1&y=2', true], ['https://example.com/a?x=1&y=2', false]])
    expect((await emailRow(env, email.id)).status).toBe('CLICKED')
    // A later open does not move a clicked email back.
    await recordOpen(env.deps, email.id)
    const row = await emailRow(env, email.id)
    expect(row.status).toBe('CLICKED')
    expect(row.openedAt).not.toBeNull()
  })

  test('security: forged, altered, truncated and wrong-kind tokens answer 404 and never redirect', async () => {
    const { email, pixel, click } = await tracked()
    const token = click.slice(click.lastIndexOf('/') + 1)
    const flip = (t: string, i: number) => t.slice(0, i) + (t[i] === 'A' ? 'B' : 'A') + t.slice(i + 1)
    const evil = signLinkToken({ secret: 'not-the-secret' }, { kind: 'click', emailId: email.id, url: 'https://evil.example/' })
    const bad = [
      `${LINK_PATHS.click}/${flip(token, 3)}`, `${LINK_PATHS.click}/${flip(token, token.length - 2)}`,
      `${LINK_PATHS.click}/${token.slice(0, -4)}`, `${LINK_PATHS.click}/${evil}`, `${LINK_PATHS.click}/x`,
      `${LINK_PATHS.click}/${pixel.slice(pixel.lastIndexOf('/') + 1)}`, // an open token on the click path
      `${LINK_PATHS.open}/${token}`, // a click token on the open path
      `${LINK_PATHS.open}/${flip(pixel.slice(pixel.lastIndexOf('/') + 1), 5)}`,
    ]
    for (const path of bad) {
      const res = await env.request('GET', path)
      expect(res.status).toBe(404)
      expect(res.headers.get('location')).toBeNull()
      expect(res.body.error.code).toBe('NOT_FOUND')
    }
    expect(await eventsOf(env, email.id)).toHaveLength(0)
    expect((await emailRow(env, email.id)).status).toBe('PENDING')
  })

  test('an open after a complaint is recorded but does not move the status back', async () => {
    const email = await queueTestEmail(env, projectId, { status: 'COMPLAINED' })
    const res = await env.request('GET', pathOf(openPixelUrl(env.deps, email.id)))
    expect(res.status).toBe(200)
    expect((await emailRow(env, email.id)).status).toBe('COMPLAINED')
    expect((await eventsOf(env, email.id, 'email.open'))[0].data.isFirstOpen).toBe(true)
  })

  test('a valid token of an email that no longer exists: pixel served, click redirected, nothing recorded', async () => {
    const gone = Bun.randomUUIDv7()
    expect((await env.request('GET', pathOf(openPixelUrl(env.deps, gone)))).status).toBe(200)
    const res = await env.request('GET', pathOf(clickUrl(env.deps, gone, 'https://example.com/kept')))
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('https://example.com/kept')
  })

  test('campaign counters: total and unique opens and clicks', async () => {
    const campaignId = Bun.randomUUIDv7()
    const a = await queueTestEmail(env, projectId, { campaignId })
    const b = await queueTestEmail(env, projectId, { campaignId })
    for (const id of [a.id, a.id, b.id]) await env.request('GET', pathOf(openPixelUrl(env.deps, id)))
    await env.request('GET', pathOf(clickUrl(env.deps, b.id, 'https://example.com/c')))
    await env.request('GET', pathOf(clickUrl(env.deps, b.id, 'https://example.com/d')))
    expect(await campaignStats(env.store, projectId, campaignId)).toMatchObject({ opens: 3, uniqueOpens: 2, clicks: 2, uniqueClicks: 1 })
    expect(await campaignStats(env.store, (await env.project()).id, campaignId)).toBeNull()
  })

  test('the per-email counters belong to the email\'s project only', async () => {
    const { email, pixel } = await tracked()
    await env.request('GET', pathOf(pixel))
    expect((await emailStats(env.store, projectId, email.id))?.opens).toBe(1)
    expect(await emailStats(env.store, (await env.project()).id, email.id)).toBeNull()
  })
})
