import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(90_000)

/**
 * The dashboard's shell (issue 37, item 7): pages loaded as chunks of their own, a tab title per page, the
 * grouped navigation that folds behind a Menu button on a phone, and the dark theme (the system's setting
 * or the switch). Screenshots: desktop and phone, light and dark.
 */
describe.skipIf(!chromiumAvailable())('dashboard shell in Chromium', () => {
  const d = dashboardSuite()

  test('each page has its own tab title; a page\'s code is fetched when it is first opened', async () => {
    const scripts: string[] = []
    d.page.on('request', (r) => { if (r.resourceType() === 'script') scripts.push(new URL(r.url()).pathname) })
    await d.open('/')
    await d.page.getByRole('heading', { level: 1 }).first().waitFor()
    await d.page.waitForFunction(() => document.title.startsWith('Overview'))
    expect(await d.page.title()).toBe('Overview · Acme · mailctl')
    const before = new Set(scripts)
    for (const [link, title] of [['Contacts', 'Contacts'], ['Workflows', 'Workflows'], ['Suppressions', 'Suppressions'], ['Members', 'Members']]) {
      await d.page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: link, exact: true }).click()
      await d.page.waitForFunction((t) => document.title.startsWith(t), title)
      expect(await d.page.title()).toBe(`${title} · Acme · mailctl`)
    }
    // The workflow page's chunk (the graph library) was not part of the first load.
    expect(scripts.filter((s) => !before.has(s)).length).toBeGreaterThan(0)
    for (const s of scripts) expect(s).toStartWith('/app-assets/')
    await d.open('/segments/new')
    await d.page.waitForFunction(() => document.title.startsWith('New segment'))
    await d.open('/nowhere')
    await d.page.waitForFunction(() => document.title.startsWith('Page not found'))
  })

  test('the navigation is grouped; on a phone it folds behind Menu and closes after a link', async () => {
    await d.page.setViewportSize({ width: 1366, height: 768 })
    await d.open('/')
    const nav = d.page.getByRole('navigation', { name: 'Sections' })
    await nav.waitFor()
    for (const group of ['Audience', 'Messages', 'Delivery', 'Reports', 'Project']) await expect(nav.getByText(group, { exact: true }).isVisible()).resolves.toBe(true)
    expect(await d.page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false)
    await d.page.setViewportSize({ width: 390, height: 844 })
    const menu = d.page.getByRole('button', { name: 'Menu' })
    await menu.waitFor()
    expect(await menu.getAttribute('aria-expanded')).toBe('false')
    expect(await nav.isVisible()).toBe(false)
    await shot(d.page, 'shell-phone-closed')
    await menu.click()
    expect(await menu.getAttribute('aria-expanded')).toBe('true')
    await nav.getByRole('link', { name: 'Campaigns' }).waitFor()
    await shot(d.page, 'shell-phone-open')
    await d.a11y('shell phone, menu open')
    await nav.getByRole('link', { name: 'Campaigns' }).click()
    await d.page.waitForFunction(() => document.title.startsWith('Campaigns'))
    expect(await nav.isVisible()).toBe(false)
    expect(await menu.getAttribute('aria-expanded')).toBe('false')
    await d.page.setViewportSize({ width: 1366, height: 768 })
  })

  test('the theme follows the system until the switch picks one; the choice stays', async () => {
    const theme = () => d.page.evaluate(() => document.documentElement.dataset.theme)
    await d.page.emulateMedia({ colorScheme: 'dark' })
    await d.open('/')
    await d.page.getByLabel('Theme').waitFor()
    expect(await theme()).toBe('dark')
    const bg = await d.page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)
    await shot(d.page, 'shell-desktop-dark')
    await d.a11y('overview, dark')
    await d.page.emulateMedia({ colorScheme: 'light' })
    await d.page.waitForFunction(() => document.documentElement.dataset.theme === 'light')
    expect(await d.page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).not.toBe(bg)
    await shot(d.page, 'shell-desktop-light')
    await d.page.getByLabel('Theme').selectOption('dark')
    expect(await theme()).toBe('dark')
    await d.page.reload()
    await d.page.getByLabel('Theme').waitFor()
    expect(await theme()).toBe('dark')
    expect(await d.page.getByLabel('Theme').inputValue()).toBe('dark')
    await d.page.setViewportSize({ width: 390, height: 844 })
    await d.open('/contacts')
    await d.page.getByRole('heading', { name: 'Contacts' }).waitFor()
    await shot(d.page, 'shell-phone-dark-contacts')
    await d.a11y('contacts on a phone, dark')
    await d.page.getByLabel('Theme').selectOption('system')
    expect(await theme()).toBe('light')
    await d.page.setViewportSize({ width: 1366, height: 768 })
  })
})
