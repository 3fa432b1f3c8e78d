import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { startTestDns } from '../helpers/dns'
import { insertTestDomain } from '../helpers/domains'
import { startSink } from '../helpers/smtp'
import { until } from '../helpers/worker'
import { mxTo, pipelineFor } from '../modules/emails/fixture'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * Preview as a real contact (issue 36, item 3) in Chromium: search a contact in the template editor, see
 * the email as the server renders it for them and which variables come out empty (built-ins never), then
 * send a test to two addresses rendered with that contact's data and read what arrived in an SMTP sink.
 */
const available = chromiumAvailable()
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'inbox.test')

const unfold = (raw: Buffer) => raw.toString('utf8').replace(/=\r?\n/g, '').replace(/=3D/g, '=')
/** Waits until the preview's HTML contains `text` (a function, not a string: the dashboard's CSP refuses eval). */
const previewHas = (page: Page, text: string) =>
  page.waitForFunction((t) => (document.querySelector('iframe[title="Preview of the email"]')?.getAttribute('srcdoc') ?? '').includes(t), text)

describe.skipIf(!available)('preview as a contact in Chromium', () => {
  const d = dashboardSuite({ dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
  const pageErrors: string[] = []
  let templateId = ''

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    await insertTestDomain(d.env, d.projectId, 'brand.test', { verified: true })
    for (const c of [{ email: 'ann@inbox.test', data: { firstName: 'Ann', plan: 'Pro' } }, { email: 'annex@inbox.test', data: {} }]) {
      expect((await d.api('POST', '/contacts', { email: c.email, subscribed: true, data: c.data })).status).toBeLessThan(300)
    }
    const t = await d.api('POST', '/templates', {
      name: 'Plan news', subject: 'Hi {{ firstName | default: "there" }}', from: 'hello@brand.test',
      body: '<p>Hello {{firstName}}, your plan is {{plan}}.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a> · <a href="{{manageUrl}}">Preferences</a></p>',
    })
    expect(t.status).toBe(201)
    templateId = t.body.id
  })

  test('search a contact, preview with their data; variables empty for another contact are named, built-ins never', async () => {
    const { page } = d
    await d.open(`/templates/${templateId}`)
    const find = page.getByLabel('Find a contact by email')
    await find.fill('ann')
    await page.getByRole('list', { name: 'Matching contacts' }).getByRole('button').nth(1).waitFor()
    await shot(page, 'preview-01-search')
    await page.getByRole('button', { name: /^ann@inbox\.test/ }).click()
    await previewHas(page, 'Hello Ann, your plan is Pro.')
    const status = page.getByTestId('preview-as-status')
    await status.getByText('Every variable has a value for this contact.').waitFor()
    expect(await status.textContent()).toContain('Subject: Hi Ann')
    // The contact's own links, made by the server (the sample's are "#unsubscribe").
    expect(await page.locator('iframe[title="Preview of the email"]').getAttribute('srcdoc')).toMatch(/href="http:\/\/127\.0\.0\.1:\d+\/unsubscribe\/[^"#]+"/)
    await shot(page, 'preview-02-as-ann')
    await d.a11y('editor: preview as a contact')

    await page.getByRole('button', { name: 'Back to sample data' }).click()
    await find.fill('annex')
    await page.getByRole('button', { name: /^annex@inbox\.test/ }).click()
    await previewHas(page, 'Hello , your plan is .')
    await status.getByText(/Empty for this contact/).waitFor()
    const text = (await status.textContent()) ?? ''
    expect(text).toContain('{{firstName}}')
    expect(text).toContain('{{plan}}')
    expect(text).not.toContain('unsubscribeUrl')
    expect(text).not.toContain('manageUrl')
    expect(text).toContain('Subject: Hi there')
    await shot(page, 'preview-03-as-annex')
    // On a phone: the page reopened at 390 px, the contact chosen again.
    await page.setViewportSize({ width: 390, height: 844 })
    await d.open(`/templates/${templateId}`)
    await find.fill('annex')
    await page.getByRole('button', { name: /^annex@inbox\.test/ }).click()
    await status.getByText(/Empty for this contact/).waitFor()
    // The contact panel fits the phone's width (the page's own Name/From row is wider: not this panel's).
    expect(await page.getByTestId('preview-as-status').evaluate((el) => el.getBoundingClientRect().width)).toBeLessThanOrEqual(390)
    await shot(page, 'preview-04-as-annex-phone')
    await page.setViewportSize({ width: 1366, height: 768 })
    expect(pageErrors).toEqual([])
  })

  test('a test to two addresses, rendered with the chosen contact\'s data, arrives in the sink', async () => {
    const { page } = d
    await d.open(`/templates/${templateId}`)
    await page.getByLabel('Find a contact by email').fill('ann@')
    await page.getByRole('button', { name: /^ann@inbox\.test/ }).click()
    await page.getByTestId('preview-as-status').getByText('Every variable has a value for this contact.').waitFor()
    const to = page.getByLabel('Send a test as ann@inbox.test to')
    await to.fill('one@inbox.test, two@inbox.test, 3@x.test, 4@x.test, 5@x.test, 6@x.test')
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByRole('alert').filter({ hasText: 'At most 5 addresses per test.' }).waitFor()
    await to.fill('one@inbox.test, two@inbox.test')
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByRole('status').filter({ hasText: 'Test sent to one@inbox.test, two@inbox.test as ann@inbox.test.' }).waitFor()
    await shot(page, 'preview-05-test-sent')
    await pipelineFor(d.env).drain()
    const got = (addr: string) => sink.received.find((m) => m.to.includes(addr))
    await until(() => Boolean(got('one@inbox.test') && got('two@inbox.test')), 60_000, 'both test messages in the sink', 50)
    for (const addr of ['one@inbox.test', 'two@inbox.test']) {
      const raw = unfold(got(addr)?.raw ?? Buffer.alloc(0))
      expect(raw).toContain('Subject: Hi Ann')
      expect(raw).toContain('Hello Ann, your plan is Pro.')
      // Not Ann's unsubscribe link: the test addresses are not contacts, so none is made.
      expect(raw).not.toContain('/unsubscribe/')
    }
    expect(pageErrors).toEqual([])
  })
})
