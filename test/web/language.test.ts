import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The dashboard's language (issue 37, item 7): English by default (the browser's language), German once the
 * user picks it; the choice is the user's (kept per user on this browser) and survives a reload; the
 * navigation, the contacts page, the tab's title, and dates and numbers all follow it. Desktop and phone
 * screenshots in German, axe-core on them.
 */
const available = chromiumAvailable()

describe.skipIf(!available)('language in Chromium', () => {
  const d = dashboardSuite()
  const pageErrors: string[] = []

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    for (let i = 0; i < 3; i++) {
      expect((await d.api('POST', '/contacts', { email: `p${i}@example.com`, subscribed: i !== 1 })).status).toBeLessThan(300)
    }
  })

  test('English first; choosing Deutsch draws the app in German, kept for the user across a reload', async () => {
    const { page } = d
    await d.open('/contacts')
    await page.getByRole('heading', { name: 'Contacts', exact: true }).waitFor()
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en')
    expect(await page.getByLabel('Language').inputValue()).toBe('en')

    await page.getByLabel('Language').selectOption('de')
    await page.getByRole('heading', { name: 'Kontakte', exact: true }).waitFor()
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('de')
    expect(await page.title()).toBe('Kontakte · Acme · mailctl')
    const nav = page.getByRole('navigation', { name: 'Bereiche' })
    expect(await nav.getByRole('link').allTextContents()).toEqual(expect.arrayContaining(['Übersicht', 'Kontakte', 'Kampagnen', 'Vorlagen', 'Einstellungen']))
    await page.getByText('3 Kontakte').waitFor()
    expect(await page.getByRole('columnheader').allTextContents()).toEqual(expect.arrayContaining(['E-Mail', 'Abonnement', 'Angelegt']))
    // Dates in the German form (day.month.year).
    const created = await page.locator('tbody tr').first().locator('td').last().textContent()
    expect(created).toMatch(/^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/)
    // The choice is the user's: stored under their id.
    expect(await page.evaluate((id) => localStorage.getItem(`mailctl.lang.${id}`), d.owner.id)).toBe('de')
    await shot(page, 'language-01-contacts-de')
    await d.a11y('contacts in German')

    await page.reload()
    await page.getByRole('heading', { name: 'Kontakte', exact: true }).waitFor()
    await page.getByRole('button', { name: 'Kontakt hinzufügen' }).click()
    await page.getByRole('button', { name: 'Speichern' }).click()
    // The API's own message is English; the form's pointer to the field is German.
    await page.getByRole('alert').first().waitFor()
    expect(await page.getByRole('alert').first().textContent()).toBe('Bitte prüfen Sie das markierte Feld.')
    expect(await page.getByLabel('E-Mail', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await page.getByRole('button', { name: 'Menü' }).click()
      await page.getByRole('navigation', { name: 'Bereiche' }).getByRole('link', { name: 'Kampagnen' }).waitFor()
      await shot(page, 'language-02-phone-de')
      await d.a11y('phone menu in German')
    } finally {
      await page.setViewportSize({ width: 1366, height: 768 })
    }

    await d.open('/campaigns')
    await page.getByRole('heading', { name: 'Kampagnen', exact: true }).waitFor()
    await page.getByText('Noch keine Kampagnen').waitFor()
    expect(await page.getByRole('button', { name: 'Entwurf' }).count()).toBe(1)
    await shot(page, 'language-03-campaigns-de')
    await d.a11y('campaigns in German')

    await page.getByLabel('Sprache').selectOption('en')
    await page.getByRole('heading', { name: 'Campaigns', exact: true }).waitFor()
    expect(await page.evaluate((id) => localStorage.getItem(`mailctl.lang.${id}`), d.owner.id)).toBe('en')
    expect(pageErrors).toEqual([])
  })
})
