import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Worker } from '../../src/jobs/queue'
import { insertTestDomain } from '../helpers/domains'
import { workflowJobs } from '../../src/modules/workflows/jobs'
import { en } from '../../web/i18n/en'
import { de } from '../../web/i18n/de'
import { editorDe } from '../../web/i18n/editor-de'
import { editorEn } from '../../web/i18n/editor-en'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(180_000)

/**
 * The pages taken into the message catalogue, drawn in German: each opened with the user's language set to
 * Deutsch shows its German heading, and none of the English messages of its catalogue sections appears in
 * its text (a string left out of the catalogue, or a key used in the wrong place, shows up here). Desktop
 * and phone, light and dark screenshots; axe-core on each. English is what the other page suites check.
 */
const available = chromiumAvailable()

/** The English messages of the sections whose German differs: the text that must not be on a German page. */
function englishOf(prefixes: string[]): string[] {
  const out: string[] = []
  // The dashboard's catalogue and the email editor's part of it.
  const german: Record<string, unknown> = { ...de, ...editorDe }
  for (const [key, m] of [...Object.entries(en), ...Object.entries(editorEn)]) {
    if (!prefixes.some((p) => key.startsWith(p))) continue
    if (JSON.stringify(m) === JSON.stringify(german[key])) continue
    const texts = typeof m === 'string' ? [m] : [m.one, m.other]
    // The parts around placeholders, long enough to be a phrase rather than a shared word.
    for (const text of texts) for (const part of text.split(/\{\w+\}/)) if (part.trim().length >= 8) out.push(part.trim())
  }
  return out
}

describe.skipIf(!available)('the catalogued pages in German', () => {
  const d = dashboardSuite()
  const pageErrors: string[] = []

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    expect((await d.api('POST', '/segments', { name: 'VIP', type: 'STATIC' })).status).toBeLessThan(300)
    expect((await d.api('POST', '/suppressions', { email: 'gone@example.com', note: 'asked' })).status).toBeLessThan(300)
    expect((await d.api('POST', '/domains', { projectId: d.projectId, domain: 'acme.example' })).status).toBeLessThan(300)
    await d.page.evaluate((id) => { localStorage.setItem(`mailctl.lang.${id}`, 'de'); localStorage.setItem('mailctl.lang', 'de') }, d.owner.id)
  })

  const pages: Array<{ path: string; heading?: string; prefixes: string[]; wait?: string }> = [
    { path: '/domains', heading: 'Domains', prefixes: ['domains.'], wait: 'acme.example' },
    { path: '/tools', heading: 'Werkzeuge', prefixes: ['tools.'], wait: 'Eine Adresse prüfen' },
    { path: '/analytics', heading: 'Analysen', prefixes: ['an.', 'metric.', 'rank.'], wait: 'Häufigste Ereignisse' },
    { path: '/security', heading: 'Sicherheit', prefixes: ['sec.'], wait: 'Nie gesperrt' },
    { path: '/usage', heading: 'Verbrauch', prefixes: ['usage.', 'category.'], wait: 'Monatliche Obergrenzen' },
    { path: '/segments', heading: 'Segmente', prefixes: ['seg.'], wait: 'Statisch' },
    { path: '/segments/new', heading: 'Neues Segment', prefixes: ['seg.', 'b.'], wait: 'Bedingung hinzufügen' },
    { path: '/activity', heading: 'Aktivität', prefixes: ['act.', 'type.'], wait: 'Anwenden' },
    { path: '/suppressions', heading: 'Sperrliste', prefixes: ['sup.'], wait: 'gone@example.com' },
    { path: '/', heading: 'Acme', prefixes: ['pulse.', 'proj.'], wait: 'Erste Schritte' },
    { path: '/webhooks', heading: 'Webhooks', prefixes: ['wh.'], wait: 'Noch keine Endpunkte' },
    { path: '/workflows', heading: 'Workflows', prefixes: ['wf.'], wait: 'Noch keine Workflows' },
    { path: '/settings', heading: 'Einstellungen', prefixes: ['proj.'], wait: 'Absender-Voreinstellungen' },
    { path: '/keys', heading: 'API-Schlüssel', prefixes: ['keys.'], wait: 'Geheimer Schlüssel' },
    { path: '/members', heading: 'Mitglieder', prefixes: ['team.'], wait: 'Jemanden einladen' },
  ]

  for (const p of pages) {
    test(`${p.path} in German`, async () => {
      const { page } = d
      await d.open(p.path)
      if (p.heading) await page.getByRole('heading', { name: p.heading, exact: true }).first().waitFor()
      if (p.wait) await page.getByText(p.wait).first().waitFor()
      expect(await page.evaluate(() => document.documentElement.lang)).toBe('de')
      const text = (await page.locator('#main').textContent()) ?? ''
      const left = englishOf(p.prefixes).filter((e) => text.includes(e))
      expect({ page: p.path, english: left }).toEqual({ page: p.path, english: [] })
      const name = `de-${p.path === '/' ? 'overview' : p.path.slice(1)}`
      await shot(page, `${name}-desktop-light`)
      await d.a11y(`${p.path} in German`)
    })
  }

  test('a static segment: an address the API refuses is named on the emails field, in German', async () => {
    const { page } = d
    await d.open('/segments')
    await page.getByRole('link', { name: 'VIP' }).click()
    await page.getByRole('heading', { name: 'Mitglieder hinzufügen oder entfernen' }).waitFor()
    const area = page.getByLabel('E-Mail-Adressen')
    await area.fill('ada@example.com\nnot-an-email')
    await page.getByRole('button', { name: 'Zum Segment hinzufügen' }).click()
    await page.getByText('„not-an-email“:').waitFor()
    expect(await area.getAttribute('aria-invalid')).toBe('true')
    const described = (await area.getAttribute('aria-describedby')) ?? ''
    const errId = described.split(' ').find((x) => x.endsWith('-err')) ?? ''
    expect(await page.locator(`[id="${errId}"]`).textContent()).toStartWith('„not-an-email“: ')
    // The box above points at the field rather than repeating the message.
    expect(await page.getByRole('alert').first().textContent()).toBe('Bitte prüfen Sie das markierte Feld.')
    await shot(page, 'de-segment-members-error-desktop-light')
    await d.a11y('static segment with a field error, German')
    // Fixed and sent again: the error goes, the member is added.
    await area.fill('ada@example.com')
    await page.getByRole('button', { name: 'Zum Segment hinzufügen' }).click()
    await page.getByText('0 hinzugefügt · keine Kontakte').waitFor()
    expect(await area.getAttribute('aria-invalid')).toBeNull()
  })

  test('a webhook endpoint: the form in German, a refused URL shown on its field', async () => {
    const { page } = d
    await d.open('/webhooks')
    await page.getByRole('button', { name: 'Endpunkt hinzufügen' }).click()
    await page.getByLabel('URL').fill('ftp://example.com/hook')
    await page.getByRole('form').or(page.locator('form')).first().getByRole('button', { name: 'Endpunkt hinzufügen' }).click()
    await page.getByLabel('URL').and(page.locator('[aria-invalid="true"]')).waitFor()
    const text = (await page.locator('#main').textContent()) ?? ''
    expect(englishOf(['wh.', 'whe.']).filter((e) => text.includes(e))).toEqual([])
    await shot(page, 'de-webhook-form-error-desktop-light')
    await d.a11y('webhook form with a field error, German')
  })

  test('a workflow: the graph editor, a condition step\'s panel and an execution\'s path in German', async () => {
    const { page } = d
    const wf = (await d.api('POST', '/workflows', { name: 'Onboarding', eventName: 'signup' })).body
    const step = async (type: string, name: string, config: Record<string, unknown>, position: { x: number; y: number }) => {
      const r = await d.api('POST', `/workflows/${wf.id}/steps`, { type, name, config, position })
      expect(r.status).toBe(201)
      return r.body.id as string
    }
    const delay = await step('DELAY', 'Wait a day', { amount: 1, unit: 'days' }, { x: 0, y: 160 })
    const cond = await step('CONDITION', 'Big team?', { field: 'data.seats', operator: 'greaterThanOrEqual', value: 10 }, { x: 0, y: 320 })
    const big = await step('EXIT', 'Big team', { reason: 'big' }, { x: -120, y: 500 })
    const small = await step('EXIT', 'Small team', {}, { x: 120, y: 500 })
    for (const [from, to, branch] of [[wf.steps[0].id, delay], [delay, cond], [cond, big, 'yes'], [cond, small, 'no']]) {
      expect((await d.api('POST', `/workflows/${wf.id}/transitions`, { fromStepId: from, toStepId: to, ...(branch ? { branch } : {}) })).status).toBe(201)
    }
    const prefixes = ['wf.', 'wfe.', 'wfg.', 'wff.', 'wfc.', 'wfx.', 'wfo.']
    await d.open(`/workflows/${wf.id}`)
    await page.getByRole('heading', { name: 'Schritte', exact: true }).waitFor()
    await page.getByText('Bei Ereignis „signup“').waitFor()
    await page.getByText('1 Tag warten').waitFor()
    await page.getByRole('group', { name: /Schritt Bedingung „Big team\?“/ }).click()
    await page.getByTestId('condition-reads').getByText('Liest sich:').waitFor()
    let text = (await page.locator('#main').textContent()) ?? ''
    expect(englishOf(prefixes).filter((e) => text.includes(e))).toEqual([])
    await shot(page, 'de-workflow-editor-desktop-light')
    await d.a11y('workflow editor, a condition selected, German')
    // A test run: it waits at the delay; its path and each step's output read in German.
    expect((await d.api('POST', '/contacts', { email: 'wf-de@example.com' })).status).toBe(201)
    expect((await d.api('POST', `/workflows/${wf.id}/executions`, { email: 'wf-de@example.com' })).status).toBe(201)
    await new Worker(d.env.deps, workflowJobs).drain()
    await d.open(`/workflows/${wf.id}/executions`)
    await page.getByRole('heading', { name: 'Testlauf' }).waitFor()
    await page.getByRole('button', { name: 'Weg zeigen' }).first().click()
    await page.getByText('Von einem Testlauf gestartet').waitFor()
    await page.getByText(/Wartet bis /).first().waitFor()
    text = (await page.locator('#main').textContent()) ?? ''
    expect(englishOf(prefixes).filter((e) => text.includes(e))).toEqual([])
    await shot(page, 'de-workflow-executions-desktop-light')
    await d.a11y('workflow executions, an execution open, German')
  })

  test('the email editor speaks the page\'s language: its bar, the variable picker, preview as a contact and the visual canvas in German', async () => {
    const { page } = d
    await insertTestDomain(d.env, d.projectId, 'brand.test', { verified: true })
    expect((await d.api('POST', '/contacts', { email: 'ann-de@inbox.test', subscribed: true, data: { firstName: 'Ann' } })).status).toBeLessThan(300)
    const tpl = await d.api('POST', '/templates', { name: 'Hallo', subject: 'Hallo {{firstName}}', from: 'hello@brand.test', body: '<p>Hallo {{firstName}}</p>' })
    expect(tpl.status).toBe(201)
    await d.open(`/templates/${tpl.body.id}`)
    await page.getByRole('heading', { name: 'Vorschau als Kontakt' }).waitFor()
    // The HTML mode (a template without a design opens in it): source, sample data, variables.
    await page.getByLabel('HTML-Quelltext').waitFor()
    await page.getByLabel('Beispieldaten eines Kontakts (JSON)').waitFor()
    await page.getByText('Verwendete Variablen').waitFor()
    // The editor's bar: its modes and the variable picker.
    await page.getByRole('group', { name: 'Editormodus' }).getByRole('button', { name: 'Visuell' }).waitFor()
    await page.getByRole('button', { name: 'Variable einfügen' }).click()
    await page.getByLabel('Ersatzwert, wenn der Kontakt keinen Wert hat').waitFor()
    await page.getByLabel('Kontakt per E-Mail suchen').fill('ann-de')
    await page.getByRole('list', { name: 'Passende Kontakte' }).getByRole('button', { name: /^ann-de@inbox\.test/ }).click()
    const status = page.getByTestId('preview-as-status')
    await status.getByText('Jede Variable hat für diesen Kontakt einen Wert.').waitFor()
    expect(await status.textContent()).toContain('Betreff: Hallo Ann')
    const text = (await page.locator('.mc-editor').textContent()) ?? ''
    expect(englishOf(['edp.', 'ed.']).filter((e) => text.includes(e))).toEqual([])
    await shot(page, 'de-editor-preview-as-desktop-light')
    // To the visual editor (confirmed): its bar of blocks and its canvas in German.
    page.once('dialog', (dialog) => { void dialog.accept() })
    await page.getByRole('button', { name: 'Visuell' }).click()
    await page.getByRole('toolbar', { name: 'Einen Block hinzufügen' }).getByRole('button', { name: '+ Überschrift' }).waitFor()
    await page.getByRole('button', { name: 'Block Reines HTML auswählen' }).waitFor()
    const visual = (await page.locator('.mc-editor').textContent()) ?? ''
    expect(englishOf(['edp.', 'ed.']).filter((e) => visual.includes(e))).toEqual([])
    await shot(page, 'de-editor-visual-desktop-light')
    // The settings panels: the raw HTML block's (selected after the switch), then the email's.
    await page.getByText('Wird unverändert in die Tabelle der E-Mail eingefügt: Halten Sie es E-Mail-tauglich.').waitFor()
    await page.locator('.mc-side').getByRole('button', { name: 'E-Mail-Einstellungen' }).click()
    await page.getByLabel('Seitenhintergrund').waitFor()
    await page.getByLabel('Linkfarbe').waitFor()
    await shot(page, 'de-editor-email-settings-desktop-light')
    // A new heading starts with German text; its panel (level, alignment, colours, font) is German.
    await page.getByRole('toolbar', { name: 'Einen Block hinzufügen' }).getByRole('button', { name: '+ Überschrift' }).click()
    await page.getByRole('textbox', { name: 'Text der Überschrift' }).filter({ hasText: 'Eine Überschrift' }).waitFor()
    expect(await page.getByLabel('Ebene').locator('option').allTextContents()).toEqual(['Groß (H1)', 'Mittel (H2)', 'Klein (H3)'])
    await page.getByRole('group', { name: 'Ausrichtung' }).getByRole('button', { name: 'mittig' }).waitFor()
    await page.getByLabel('Schriftgröße (px)').waitFor()
    const panel = (await page.locator('.mc-side').textContent()) ?? ''
    expect(englishOf(['ed.']).filter((e) => panel.includes(e))).toEqual([])
    await shot(page, 'de-editor-settings-desktop-light')
    // A starter design is written in the language in effect when it is made (its text is then the design's own).
    let asked = ''
    page.once('dialog', (dialog) => { asked = dialog.message(); void dialog.accept() })
    await page.getByLabel('Mit einem Design beginnen').selectOption('welcome')
    await page.getByRole('textbox', { name: 'Text der Überschrift' }).filter({ hasText: 'Willkommen an Bord' }).waitFor()
    expect(asked).toBe('Mit „Willkommen“ beginnen? Das ersetzt die Blöcke dieser E-Mail.')
    await page.getByText('Danke für Ihre Anmeldung.').first().waitFor()
    const starter = (await page.locator('.mc-editor').textContent()) ?? ''
    expect(englishOf(['ed.']).filter((e) => starter.includes(e))).toEqual([])
    await shot(page, 'de-editor-starter-desktop-light')
  })

  test('the domain page on a phone in the dark, and the tools page, in German', async () => {
    const { page } = d
    await page.emulateMedia({ colorScheme: 'dark' })
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await d.open('/domains')
      await page.getByRole('link', { name: 'acme.example' }).click()
      await page.getByRole('heading', { name: 'Zu veröffentlichende DNS-Einträge' }).waitFor()
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark')
      await shot(page, 'de-domain-phone-dark')
      await d.a11y('domain detail, phone, dark, German')
      await d.open('/tools')
      await page.getByRole('heading', { name: 'Eine Adresse prüfen' }).waitFor()
      await shot(page, 'de-tools-phone-dark')
      await d.a11y('tools, phone, dark, German')
      await d.open('/analytics')
      await page.getByRole('heading', { name: 'Häufigste Ereignisse' }).waitFor()
      await shot(page, 'de-analytics-phone-dark')
      await d.a11y('analytics, phone, dark, German')
      await d.open('/segments/new')
      await page.getByRole('button', { name: 'Bedingung hinzufügen' }).first().waitFor()
      await shot(page, 'de-segment-new-phone-dark')
      await d.a11y('new segment, phone, dark, German')
    } finally {
      await page.setViewportSize({ width: 1366, height: 768 })
      await page.emulateMedia({ colorScheme: 'light' })
    }
    expect(pageErrors).toEqual([])
  })

  // Last: it signs the browser out.
  test('signed out: the sign-in, sign-up and reset pages in German (the last language chosen on this browser)', async () => {
    const { page } = d
    await d.context.clearCookies()
    await page.goto(`${d.base}/app/`)
    await page.getByRole('heading', { name: 'Anmelden' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('de')
    const english = englishOf(['auth.'])
    const left = async () => { const text = (await page.locator('main').textContent()) ?? ''; return english.filter((e) => text.includes(e)) }
    expect(await left()).toEqual([])
    await page.getByLabel('E-Mail').fill(d.owner.email)
    await page.getByLabel('Passwort').fill('wrong password 1')
    await page.getByRole('button', { name: 'Anmelden' }).click()
    await page.getByRole('alert').first().waitFor()
    await shot(page, 'de-signin-desktop-light')
    await d.a11y('sign-in in German')
    await page.getByRole('link', { name: 'Passwort vergessen?' }).click()
    await page.getByRole('heading', { name: 'Passwort zurücksetzen' }).waitFor()
    expect(await left()).toEqual([])
    await page.setViewportSize({ width: 390, height: 844 })
    await page.emulateMedia({ colorScheme: 'dark' })
    try {
      await page.getByRole('link', { name: 'Zurück zur Anmeldung' }).click()
      await page.getByRole('heading', { name: 'Anmelden' }).waitFor()
      await shot(page, 'de-signin-phone-dark')
      await d.a11y('sign-in, phone, dark, German')
    } finally {
      await page.setViewportSize({ width: 1366, height: 768 })
      await page.emulateMedia({ colorScheme: 'light' })
    }
  })
})
