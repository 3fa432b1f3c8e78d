import { beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ctxFor } from '../../../src/deps'
import { manageUrl, openPixelUrl, signLinkToken, subscribeUrl, unsubscribeUrl } from '../../../src/mail/links'
import { upsertContact } from '../../../src/modules/contacts/service'
import { forEachStore, type TestEnv } from '../../helpers/env'
import { projectWithDomain, startTestDns } from '../emails/fixture'
import { must } from '../../helpers/must'

/** The path of a public URL (the test app is called at http://localhost). */
const path = (url: string) => new URL(url).pathname

function form(body: Record<string, string>) {
  return { raw: new URLSearchParams(body).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } }
}

async function countEvents(env: TestEnv, contactId: string, name: string): Promise<number> {
  const rows = await env.store.rows<{ n: number | string }>(sql`SELECT COUNT(*) AS n FROM events WHERE contact_id = ${contactId} AND name = ${name}`)
  return Number(rows[0].n)
}

forEachStore('subscription pages', (env) => {
  let projectId = ''
  let sk = ''
  beforeAll(async () => {
    const p = await env.project('Acme Newsletter')
    projectId = p.id
    sk = p.secretKey
  })

  async function contact(email: string, subscribed = true): Promise<string> {
    const res = await env.request('POST', '/contacts', { key: sk, body: { email, subscribed } })
    expect(res.status).toBeLessThan(300)
    return res.body.id
  }
  async function state(id: string): Promise<boolean> {
    const res = await env.request('GET', `/contacts/${id}`, { key: sk })
    return res.body.subscribed
  }

  test('GET /unsubscribe shows a confirm page and changes nothing', async () => {
    const id = await contact('reader1@example.org')
    const res = await env.request('GET', path(unsubscribeUrl(env.deps, { projectId, contactId: id })))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.text).toContain('<html lang="en">')
    expect(res.text).toContain('reader1@example.org')
    // A link without an email id cannot tell the sender: a neutral phrase, never the internal project name.
    expect(res.text).toContain('Stop emails from this sender to')
    expect(res.text).not.toContain('Acme Newsletter')
    expect(res.text).toContain('<form method="post">')
    expect(res.text).toContain('name="List-Unsubscribe" value="One-Click"')
    expect(res.text).not.toContain('<script')
    expect(await state(id)).toBe(true)
    expect(await countEvents(env, id, 'contact.unsubscribed')).toBe(0)
  })

  test('RFC 8058 one-click POST unsubscribes without a login and emits contact.unsubscribed once', async () => {
    const id = await contact('reader2@example.org')
    const emailId = Bun.randomUUIDv7()
    const url = path(unsubscribeUrl(env.deps, { projectId, contactId: id, emailId }))
    const res = await env.request('POST', url, form({ 'List-Unsubscribe': 'One-Click' }))
    expect(res.status).toBe(200)
    expect(res.text).toContain('You are unsubscribed')
    expect(await state(id)).toBe(false)
    expect(await countEvents(env, id, 'contact.unsubscribed')).toBe(1)
    // Mail providers may retry; a second click changes nothing.
    const again = await env.request('POST', url, form({ 'List-Unsubscribe': 'One-Click' }))
    expect(again.status).toBe(200)
    expect(await countEvents(env, id, 'contact.unsubscribed')).toBe(1)
    // The GET page now says so and offers to subscribe again.
    const page = await env.request('GET', url)
    expect(page.text).toContain('You are already unsubscribed')
    expect(page.text).toContain(subscribeUrl(env.deps, { projectId, contactId: id, emailId }))
  })

  test('one-click POST as multipart/form-data, or with no body at all, also unsubscribes', async () => {
    const a = await contact('reader3@example.org')
    const fd = new FormData()
    fd.set('List-Unsubscribe', 'One-Click')
    const r1 = await env.app.handle(new Request(`http://localhost${path(unsubscribeUrl(env.deps, { projectId, contactId: a }))}`, { method: 'POST', body: fd }))
    expect(r1.status).toBe(200)
    expect(await state(a)).toBe(false)
    const b = await contact('reader4@example.org')
    const r2 = await env.request('POST', path(unsubscribeUrl(env.deps, { projectId, contactId: b })))
    expect(r2.status).toBe(200)
    expect(await state(b)).toBe(false)
  })

  test('subscribe again: GET confirms, POST subscribes and emits contact.subscribed once', async () => {
    const id = await contact('reader5@example.org', false)
    const url = path(subscribeUrl(env.deps, { projectId, contactId: id }))
    const page = await env.request('GET', url)
    expect(page.status).toBe(200)
    expect(page.text).toContain('Subscribe again')
    expect(await state(id)).toBe(false)
    const res = await env.request('POST', url, form({ subscribe: 'true' }))
    expect(res.status).toBe(200)
    expect(res.text).toContain('You are subscribed again')
    expect(await state(id)).toBe(true)
    await env.request('POST', url, form({ subscribe: 'true' }))
    expect(await countEvents(env, id, 'contact.subscribed')).toBe(1)
  })

  test('manage page: shows address and state, toggles both ways', async () => {
    const id = await contact('reader6@example.org')
    const url = path(manageUrl(env.deps, { projectId, contactId: id }))
    const page = await env.request('GET', url)
    expect(page.status).toBe(200)
    expect(page.text).toContain('reader6@example.org')
    expect(page.text).toContain('<dd class="state" id="state">Subscribed</dd>')
    expect(page.text).toContain('name="subscribed" value="false"')

    const off = await env.request('POST', url, form({ subscribed: 'false' }))
    expect(off.text).toContain('<dd class="state" id="state">Unsubscribed</dd>')
    expect(off.text).toContain('You are unsubscribed.')
    expect(await state(id)).toBe(false)
    const on = await env.request('POST', url, form({ subscribed: 'true' }))
    expect(on.text).toContain('<dd class="state" id="state">Subscribed</dd>')
    expect(await state(id)).toBe(true)
    const fd = new FormData()
    fd.set('subscribed', 'false')
    const multipart = await env.app.handle(new Request(`http://localhost${url}`, { method: 'POST', body: fd }))
    expect(await multipart.text()).toContain('<dd class="state" id="state">Unsubscribed</dd>')
    await env.request('POST', url, form({ subscribed: 'true' }))
    const junk = await env.request('POST', url, form({ subscribed: 'maybe' }))
    expect(junk.status).toBe(200)
    expect(await state(id)).toBe(true)
    expect(await countEvents(env, id, 'contact.unsubscribed')).toBe(2)
    expect(await countEvents(env, id, 'contact.subscribed')).toBe(2)
  })

  test('forged, altered, foreign or stale tokens answer the 404 page and change nothing', async () => {
    const id = await contact('reader7@example.org')
    const good = must(unsubscribeUrl(env.deps, { projectId, contactId: id }).split('/').pop(), 'a token')
    const raw = Buffer.from(good, 'base64url')
    raw[5] ^= 1
    const altered = raw.toString('base64url')
    const otherSecret = signLinkToken({ secret: 'not-the-secret' }, { kind: 'contact', projectId, contactId: id })
    const pixel = must(openPixelUrl(env.deps, Bun.randomUUIDv7()).split('/').pop(), 'a token')
    // A token for this contact but another project (another project's id answers 404).
    const other = await env.project('Other')
    const foreign = signLinkToken(env.deps, { kind: 'contact', projectId: other.id, contactId: id })
    const unknownContact = signLinkToken(env.deps, { kind: 'contact', projectId, contactId: Bun.randomUUIDv7() })
    for (const token of [altered, otherSecret, pixel, foreign, unknownContact, 'garbage', 'A'.repeat(200)]) {
      for (const p of ['/unsubscribe', '/subscribe', '/manage']) {
        for (const method of ['GET', 'POST']) {
          const res = await env.request(method, `${p}/${token}`, method === 'POST' ? form({ 'List-Unsubscribe': 'One-Click', subscribed: 'false' }) : {})
          expect(`${method} ${p} ${res.status}`).toBe(`${method} ${p} 404`)
          expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
          expect(res.text).toContain('This link is not valid')
        }
      }
    }
    expect(await state(id)).toBe(true)
    expect(await countEvents(env, id, 'contact.unsubscribed')).toBe(0)
  })

  test('a deleted contact\'s link answers 404', async () => {
    const id = await contact('reader8@example.org')
    const url = path(manageUrl(env.deps, { projectId, contactId: id }))
    expect((await env.request('DELETE', `/contacts/${id}`, { key: sk })).status).toBeLessThan(300)
    expect((await env.request('GET', url)).status).toBe(404)
  })

  test('HTML in the contact\'s email and data is escaped; the project\'s (internal) name is not shown', async () => {
    const evil = await env.project('<b onmouseover="x()">Evil & Co</b>')
    const ctx = ctxFor(env.deps, evil.id, { kind: 'cli' })
    const { contact: c } = await upsertContact(ctx, {
      email: `<img src=x onerror=alert(1)>"'@evil.test`,
      data: { firstName: '<script>alert(2)</script>', note: '"><svg onload=alert(3)>' },
    }, { defaultSubscribed: true })
    for (const url of [unsubscribeUrl, subscribeUrl, manageUrl].map((f) => f(env.deps, { projectId: evil.id, contactId: c.id }))) {
      for (const method of ['GET', 'POST']) {
        const res = await env.request(method, path(url), method === 'POST' ? form({ subscribed: 'false' }) : {})
        expect(res.status).toBe(200)
        expect(res.text).not.toContain('<img')
        expect(res.text).not.toContain('<script')
        expect(res.text).not.toContain('<svg')
        expect(res.text).not.toContain('<b ')
        expect(res.text).not.toContain('onmouseover="')
        expect(res.text).toContain('&#60;img src&#61;x onerror&#61;alert(1)&#62;&#34;&#39;@evil.test')
        expect(res.text).not.toContain('Evil &#38; Co')
      }
    }
  })
})

const dns = await startTestDns()

forEachStore('subscription pages name the sender of the email', (env) => {
  const rnd = () => Math.random().toString(36).slice(2, 8)

  /** Sends one email whose body holds the three links and returns them (paths) and the email id. */
  async function sendLinks(from: unknown, domain: string, key: string) {
    const to = `reader.${rnd()}@example.org`
    const body = '<a href="{{unsubscribeUrl}}">u</a> <a href="{{subscribeUrl}}">s</a> <a href="{{manageUrl}}">m</a>'
    const res = await env.request('POST', '/v1/send', { key, body: { to, from, subject: 'News', body, subscribed: true } })
    expect(res.status).toBe(200)
    const id = res.body.data.emails[0].email as string
    const { emailContents } = env.store.t
    const [row] = await env.store.db.select().from(emailContents).where(eq(emailContents.emailId, id))
    const links = [...(row.html ?? '').matchAll(/href="([^"]+)"/g)].map((m) => m[1]).filter((h) => h.startsWith(env.config.publicUrl)).map(path)
    expect(links).toHaveLength(3)
    expect(links[0]).toContain(`/unsubscribe/`)
    return { unsubscribe: links[0], subscribe: links[1], manage: links[2], to, domain }
  }

  test('with a From name: the pages say that name, the manage page also the domain; not the project name', async () => {
    const p = await projectWithDomain(env, dns, `news-${rnd()}.test`)
    const l = await sendLinks({ name: 'Acme <Weekly> & Co', email: p.from }, p.domain, p.secretKey)
    const confirm = await env.request('GET', l.unsubscribe)
    expect(confirm.text).toContain(`Stop emails from <strong>Acme &#60;Weekly&#62; &#38; Co</strong> to <strong>${l.to}</strong>?`)
    expect(confirm.text).not.toContain(p.name)
    const done = await env.request('POST', l.unsubscribe, form({ 'List-Unsubscribe': 'One-Click' }))
    expect(done.text).toContain('will no longer receive emails from <strong>Acme &#60;Weekly&#62; &#38; Co</strong>')
    const again = await env.request('GET', l.subscribe)
    expect(again.text).toContain('Receive emails from <strong>Acme &#60;Weekly&#62; &#38; Co</strong>')
    const manage = await env.request('GET', l.manage)
    expect(manage.text).toContain(`<dt>Sender</dt><dd>Acme &#60;Weekly&#62; &#38; Co (${p.domain})</dd>`)
    expect(manage.text).not.toContain(p.name)
  })

  test('without a From name: the domain of the From address', async () => {
    const p = await projectWithDomain(env, dns, `plain-${rnd()}.test`)
    const l = await sendLinks(p.from, p.domain, p.secretKey)
    expect((await env.request('GET', l.unsubscribe)).text).toContain(`Stop emails from <strong>${p.domain}</strong> to`)
    expect((await env.request('GET', l.manage)).text).toContain(`<dt>Sender</dt><dd>${p.domain}</dd>`)
  })
}, { dnsServers: [dns.server] })
