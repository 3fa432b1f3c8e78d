import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The contacts page's first view (src/http/dashboard-first-view.ts) in Chromium: drawn from the page alone
 * (no script arrives) with the rows the app then shows, in the user's language and theme; a contact whose
 * data holds a script runs nothing; the app takes its place. Screenshots: first view and app, EN and DE,
 * desktop and phone.
 */
const available = chromiumAvailable()
const EVIL = '</script><script>alert(1)</script>'

describe.skipIf(!available)('the contacts page before its scripts', () => {
  const d = dashboardSuite()
  const dialogs: string[] = []
  const firstViewRows = () => d.page.locator('#first-view tbody tr td:nth-child(2)').allTextContents()
  const noScripts = () => d.page.route('**/app-assets/*.js', (r) => r.abort())
  const scripts = () => d.page.unroute('**/app-assets/*.js')
  // d.open waits for the app; without scripts the page is opened as it is.
  const goto = (path: string) => d.page.goto(`${d.base}/app/p/${d.projectId}${path}`)

  beforeAll(async () => {
    d.page.on('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss() })
    for (let i = 0; i < 8; i++) {
      const res = await d.api('POST', '/contacts', { email: `row${i}@example.com`, subscribed: i % 3 !== 0, data: { note: EVIL, name: `Müller ${i}` } })
      expect(res.status).toBe(201)
    }
    expect((await d.api('PATCH', `/users/@me/projects/${d.projectId}`, { name: `Acme ${EVIL}` })).status).toBe(200)
  })

  test('without scripts: the first rows, the navigation and the page head are drawn from the page', async () => {
    await d.open('/contacts')
    await noScripts()
    await goto('/contacts')
    await d.page.locator('#first-view tbody tr').first().waitFor()
    expect(await firstViewRows()).toEqual(Array.from({ length: 8 }, (_, i) => `row${7 - i}@example.com`))
    expect(await d.page.getByRole('heading', { level: 1 }).textContent()).toBe('Contacts')
    expect(await d.page.getByRole('link', { name: 'Contacts', exact: true }).getAttribute('aria-current')).toBe('page')
    expect(await d.page.title()).toBe(`Contacts · Acme ${EVIL} · mailctl`)
    await d.a11y('contacts first view')
    await shot(d.page, 'first-view-contacts-en')
    // Its links are links: a contact opens without any script of the list.
    expect(await d.page.getByRole('link', { name: 'row7@example.com' }).getAttribute('href')).toMatch(new RegExp(`^/app/p/${d.projectId}/contacts/`))
    await scripts()
  })

  test('the app takes its place with the same rows; nothing of the data runs', async () => {
    await d.open('/contacts')
    const appRows = await d.page.locator('#root tbody tr td:nth-child(2)').allTextContents()
    expect(appRows).toEqual(Array.from({ length: 8 }, (_, i) => `row${7 - i}@example.com`))
    // The app works: a row is selected.
    await d.page.getByLabel('Select row7@example.com').check()
    await d.page.getByText('1 selected').waitFor()
    await shot(d.page, 'first-view-contacts-app-en')
    expect(dialogs).toEqual([])
  })

  test('in German and dark, as the user chose them, on a desktop and a phone', async () => {
    await d.page.evaluate((id) => {
      localStorage.setItem(`mailctl.lang.${id}`, 'de')
      localStorage.setItem('mailctl.lang', 'de')
      localStorage.setItem('mailctl.theme', 'dark')
    }, d.owner.id)
    // The app runs once in German and keeps the choice for the server.
    await d.open('/contacts')
    expect(await d.page.evaluate(() => document.documentElement.lang)).toBe('de')
    await noScripts()
    await goto('/contacts')
    await d.page.locator('#first-view tbody tr').first().waitFor()
    expect(await d.page.getByRole('heading', { level: 1 }).textContent()).toBe('Kontakte')
    expect(await d.page.evaluate(() => [document.documentElement.lang, document.documentElement.dataset.theme])).toEqual(['de', 'dark'])
    expect(await d.page.locator('#first-view tbody tr').first().locator('td').nth(2).textContent()).toMatch(/^(Angemeldet|Abgemeldet)$/)
    await d.a11y('contacts first view (de, dark)')
    await shot(d.page, 'first-view-contacts-de-dark')
    await d.page.setViewportSize({ width: 390, height: 844 })
    await goto('/contacts')
    await d.page.locator('#first-view tbody tr').first().waitFor()
    await shot(d.page, 'first-view-contacts-de-phone')
    await scripts()
    await d.open('/contacts')
    await shot(d.page, 'first-view-contacts-app-de-phone')
    await d.page.setViewportSize({ width: 1366, height: 768 })
    await d.page.evaluate((id) => {
      localStorage.setItem(`mailctl.lang.${id}`, 'en')
      localStorage.setItem('mailctl.lang', 'en')
      localStorage.removeItem('mailctl.theme')
    }, d.owner.id)
    expect(dialogs).toEqual([])
  })

  test('a malformed escape in the address: the app still starts and answers with its own page, no script error', async () => {
    const errors: string[] = []
    const onError = (err: Error) => { errors.push(err.message) }
    d.page.on('pageerror', onError)
    try {
      await d.page.goto(`${d.base}/app/p/%/contacts`)
      await d.page.locator('#root h1').first().waitFor()
      expect(errors).toEqual([])
    } finally {
      d.page.off('pageerror', onError)
    }
  })
})
