import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { TestEnv } from '../helpers/env'
import { ownedProject, verifiedUser, type TestUser } from '../helpers/accounts'
import { DASHBOARD_CSP } from '../../src/http/dashboard'

/**
 * The dashboard page with a signed-in user's first answers in it, and the contacts page's first view
 * (src/http/dashboard-boot.ts, dashboard-first-view.ts): only the session's own data, exactly what the API
 * answers, escaped so that no text ends the data block or adds markup, never kept by a cache, under the
 * same CSP. On both stores.
 */
const EVIL = '</script><script>alert(1)</script><!--'

const bootOf = (html: string): unknown => {
  const m = /<script type="application\/json" id="mailctl-boot">([^<]*)<\/script>/.exec(html)
  return m ? JSON.parse(m[1]) : null
}

for (const kind of ['sqlite', 'pg'] as const) {
  describe(`dashboard boot data (${kind})`, () => {
    const env = new TestEnv(kind)
    let owner: TestUser
    let other: TestUser
    let projectId = ''
    let foreignId = ''
    beforeAll(async () => {
      await env.start()
      owner = await verifiedUser(env, 'boot-owner')
      other = await verifiedUser(env, 'boot-other')
      projectId = (await ownedProject(env, owner, `Acme ${EVIL}`)).id
      foreignId = (await ownedProject(env, other, 'Not yours')).id
      for (let i = 0; i < 3; i++) {
        const res = await env.request('POST', '/contacts', { cookie: owner.cookie, headers: { 'x-project-id': projectId }, body: { email: `c${i}@example.com`, subscribed: i !== 1, data: { note: EVIL, name: `Müller & <Söhne> "${i}"` } } })
        expect(res.status).toBe(201)
      }
      await env.request('POST', '/contacts', { cookie: other.cookie, headers: { 'x-project-id': foreignId }, body: { email: 'secret@example.com' } })
    })
    afterAll(() => env.stop())

    const page = (path: string, cookie?: string) => env.app.handle(new Request(`http://localhost${path}`, { headers: cookie ? { cookie } : {} }))

    test('the contacts page carries what the API answers for this session: user, projects, first rows', async () => {
      const res = await page(`/app/p/${projectId}/contacts`, owner.cookie)
      expect(res.status).toBe(200)
      const html = await res.text()
      const boot = bootOf(html) as { me: unknown; projects: unknown; contacts: { projectId: string; page: unknown } }
      const api = async (path: string, project?: string) => (await env.request('GET', path, { cookie: owner.cookie, headers: project ? { 'x-project-id': project } : {} })).body
      expect(boot.me).toEqual(await api('/users/@me'))
      expect(boot.projects).toEqual(await api('/users/@me/projects'))
      expect(boot.contacts.projectId).toBe(projectId)
      expect(boot.contacts.page).toEqual(await api('/contacts?limit=50&total=false', projectId))
      // The first view draws the rows; the other user's contact is nowhere.
      expect(html).toContain('id="first-view"')
      expect(html).toContain('c0@example.com')
      expect(html).not.toContain('secret@example.com')
      expect(html).not.toContain('Not yours')
    })

    test('no text of the data ends the block or adds markup; the data reads back unchanged', async () => {
      const html = await (await page(`/app/p/${projectId}/contacts`, owner.cookie)).text()
      expect(html).not.toContain(EVIL)
      expect(html).not.toContain('<Söhne>')
      // Every script element is the entry (by src) or the one data block; nothing inline runs.
      const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])
      expect(scripts.filter((s) => !s.includes('src=')).length).toBe(1)
      for (const s of scripts) if (!s.includes('src=')) expect(s).toBe('<script type="application/json" id="mailctl-boot">')
      const boot = bootOf(html) as { projects: Array<{ name: string }>; contacts: { page: { data: Array<{ data: { note: string; name: string } }> } } }
      expect(boot.projects[0].name).toBe(`Acme ${EVIL}`)
      expect(boot.contacts.page.data.map((c) => c.data.note)).toEqual([EVIL, EVIL, EVIL])
      // The project's name is escaped in the first view's text and the title.
      expect(html).toContain('Acme &#60;/script&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#60;!--')
    })

    test('the page with personal data is never cached, and keeps the CSP', async () => {
      const res = await page(`/app/p/${projectId}/contacts`, owner.cookie)
      expect(res.headers.get('cache-control')).toBe('private, no-store')
      expect(res.headers.get('content-security-policy')).toBe(DASHBOARD_CSP)
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      // Other pages of a signed-in user carry the user and projects only, no rows, no first view.
      const settings = await page(`/app/p/${projectId}/settings`, owner.cookie)
      expect(settings.headers.get('cache-control')).toBe('private, no-store')
      const html = await settings.text()
      expect(Object.keys(bootOf(html) as object).sort()).toEqual(['me', 'projects'])
      expect(html).not.toContain('first-view"')
    })

    test('another project, an ended or forged session, or none: no data in the page', async () => {
      const foreign = await (await page(`/app/p/${foreignId}/contacts`, owner.cookie)).text()
      const boot = bootOf(foreign) as { contacts?: unknown; projects: Array<{ id: string }> }
      expect(boot.contacts).toBeUndefined()
      expect(boot.projects.map((p) => p.id)).toEqual([projectId])
      expect(foreign).not.toContain('secret@example.com')
      expect(foreign).not.toContain('id="first-view"')
      for (const cookie of [undefined, 'mailctl_session=forged.token.here', `${owner.cookie}x`]) {
        const res = await page(`/app/p/${projectId}/contacts`, cookie)
        expect(res.status).toBe(200)
        expect(res.headers.get('cache-control')).toBe('no-cache')
        const html = await res.text()
        expect(bootOf(html)).toBeNull()
        expect(html).not.toContain('c0@example.com')
      }
      // A session ended by sign-out inlines nothing either.
      const again = await verifiedUser(env, 'boot-out')
      expect((await env.request('GET', '/auth/logout', { cookie: again.cookie })).status).toBeLessThan(300)
      const ended = await (await page('/app/', again.cookie)).text()
      expect(bootOf(ended)).toBeNull()
    })

    test('the first view follows the language and theme the app kept, with escaped text', async () => {
      const cookie = `${owner.cookie}; mailctl_view_lang=${encodeURIComponent('de de-AT Europe/Vienna')}; mailctl_view_theme=${encodeURIComponent('dark system')}`
      const html = await (await page(`/app/p/${projectId}/contacts`, cookie)).text()
      expect(html).toContain('<html lang="de" data-theme="dark">')
      // The German catalogue's chunk is named with the others, fetched with them.
      expect(html).toMatch(/<link rel="modulepreload" crossorigin href="\/app-assets\/de-[a-z0-9]+\.js"><\/head>/)
      expect(html).toContain('<h1>Kontakte</h1>')
      expect(html).toContain(`<title>Kontakte · Acme &#60;/script&#62;`)
      // Dates as the app writes them for de-AT in Vienna.
      const created = (bootOf(html) as { contacts: { page: { data: Array<{ createdAt: string }> } } }).contacts.page.data[0].createdAt
      expect(html).toContain(new Intl.DateTimeFormat('de-AT', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'Europe/Vienna' }).format(new Date(created)))
      // Values that are not a language, locale, zone or theme fall back; nothing of them reaches the page.
      const bad = `${owner.cookie}; mailctl_view_lang=${encodeURIComponent('xx "><b>x Nowhere/Zone')}; mailctl_view_theme=%22%3E%3Cb%3E`
      const plain = await (await page(`/app/p/${projectId}/contacts`, bad)).text()
      expect(plain).toContain('<h1>Contacts</h1>')
      expect(plain).not.toContain('<b>x')
      expect(plain).toContain('<html lang="en">')
      expect(plain).not.toMatch(/app-assets\/de-/)
      // Without the app's cookie, the browser's language decides.
      const german = await (await env.app.handle(new Request(`http://localhost/app/p/${projectId}/contacts`, { headers: { cookie: owner.cookie, 'accept-language': 'de-CH, en;q=0.5' } }))).text()
      expect(german).toContain('<h1>Kontakte</h1>')
    })
  })
}
