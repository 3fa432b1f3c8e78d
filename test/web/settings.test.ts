import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Dispatcher } from '../../src/modules/hooks/dispatcher'
import { insertTestDomain } from '../helpers/domains'
import { settleEvents } from '../helpers/events'
import { startReceiver, verified } from '../modules/hooks/receiver'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The settings that were only in the API (issue 37, item 4) in Chromium: the campaign sending rate and
 * tracking on the settings page; customer webhooks: an endpoint added with its events chosen in words, its
 * secret shown once and verified by a receiver on loopback, a 410 Gone that turns it off (said on the page),
 * turning it on again, sending a failed delivery again (one, then all failed since a time), the attempt log,
 * rotating the secret (both secrets sign for a day) and deleting. Desktop and phone, light and dark; axe-core
 * on each state.
 */
describe.skipIf(!chromiumAvailable())('settings and webhooks pages in Chromium', () => {
  const d = dashboardSuite({ webhookAllowHosts: ['127.0.0.1'] })
  let answer = 410
  const rx = startReceiver(() => new Response(answer === 200 ? 'ok' : 'gone away', { status: answer }))
  afterAll(() => rx.stop())
  const deliver = async () => { await settleEvents(d.env.deps); await new Dispatcher(d.env.deps).drain() }
  const track = async (event: string, email: string) => {
    const r = await fetch(`${d.base}/v1/track`, {
      method: 'POST', headers: { authorization: `Bearer ${d.secretKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ email, event, data: { plan: 'pro' } }),
    })
    expect(r.status).toBe(200)
  }
  let endpointId = ''
  let secret = ''

  test('settings: the sending rate is checked by the API at its field, saved, and cleared back to the default; tracking too', async () => {
    await d.open('/settings')
    const rate = d.page.getByLabel('Campaign sending rate (emails per second)')
    await rate.waitFor()
    expect(await rate.inputValue()).toBe('')
    await rate.fill('0')
    await d.page.getByRole('button', { name: 'Save' }).click()
    // The API names the field; the page says it in words at the field.
    await d.page.getByText('A whole number from 1 to 1,000,000, or empty for the server’s default.').waitFor()
    expect(await rate.getAttribute('aria-invalid')).toBe('true')
    await shot(d.page, 'settings-01-rate-error')
    await d.a11y('settings, rate error')
    await rate.fill('40')
    await d.page.getByLabel("Track opens and clicks in this project's mail").uncheck()
    await d.page.getByRole('button', { name: 'Save' }).click()
    await d.page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const mine = async () => (await d.api('GET', '/users/@me/projects')).body.find((p: { id: string }) => p.id === d.projectId)
    expect(await mine()).toMatchObject({ sendRatePerSecond: 40, trackingEnabled: false })
    await d.page.reload()
    await rate.waitFor()
    expect(await rate.inputValue()).toBe('40')
    expect(await d.page.getByLabel("Track opens and clicks in this project's mail").isChecked()).toBe(false)
    await shot(d.page, 'settings-02-saved')
    await rate.fill('')
    await d.page.getByLabel("Track opens and clicks in this project's mail").check()
    await d.page.getByRole('button', { name: 'Save' }).click()
    await d.page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    expect(await mine()).toMatchObject({ sendRatePerSecond: null, trackingEnabled: true })
  })

  test('sender defaults: an unverified domain is refused at its field; saved defaults fill a new template and a new campaign', async () => {
    await insertTestDomain(d.env, d.projectId, 'acme-mail.test', { verified: true })
    await d.open('/settings')
    const from = d.page.getByLabel('From address')
    await from.waitFor()
    await from.fill('news@elsewhere.test')
    await d.page.getByLabel('From name').fill('Acme news')
    await d.page.getByLabel('Reply-to address').fill('help@acme-mail.test')
    await d.page.getByRole('button', { name: 'Save' }).click()
    await d.page.getByText('news@elsewhere.test is not on a verified domain of this project: verify its domain first').waitFor()
    expect(await from.getAttribute('aria-invalid')).toBe('true')
    await shot(d.page, 'settings-04-sender-error')
    await d.a11y('settings, sender default refused')
    await from.fill('news@acme-mail.test')
    await d.page.getByRole('button', { name: 'Save' }).click()
    await d.page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const mine = (await d.api('GET', '/users/@me/projects')).body.find((p: { id: string }) => p.id === d.projectId)
    expect(mine).toMatchObject({ defaultFrom: 'news@acme-mail.test', defaultFromName: 'Acme news', defaultReplyTo: 'help@acme-mail.test' })
    await shot(d.page, 'settings-05-sender-saved')

    await d.open('/templates')
    await d.page.getByRole('heading', { name: 'New template' }).waitFor()
    expect(await d.page.getByLabel('From', { exact: true }).inputValue()).toBe('news@acme-mail.test')
    await d.page.getByLabel('Name', { exact: true }).fill('Welcome')
    await d.page.getByLabel('Subject', { exact: true }).fill('Hello')
    await d.page.getByRole('button', { name: /^Create/ }).click()
    await d.page.waitForURL(/\/templates\/[^/]+/)
    const tpl = (await d.api('GET', '/templates')).body.data[0]
    expect(tpl).toMatchObject({ from: 'news@acme-mail.test', fromName: 'Acme news', replyTo: 'help@acme-mail.test' })

    await d.open('/campaigns/new')
    await d.page.getByLabel('Sender address').waitFor()
    expect(await d.page.getByLabel('Sender address').inputValue()).toBe('news')
    expect(await d.page.getByLabel('Sender domain').inputValue()).toBe('acme-mail.test')
    expect(await d.page.getByLabel('Sender name').inputValue()).toBe('Acme news')
    expect(await d.page.getByLabel('Reply-to').inputValue()).toBe('help@acme-mail.test')
  })

  test('webhooks: an endpoint is added with its events chosen in words; the secret is shown once and signs what the receiver gets', async () => {
    await track('signup', 'ada@example.org')
    await settleEvents(d.env.deps)
    await d.open('/webhooks')
    await d.page.getByText('No endpoints yet').waitFor()
    expect(await d.page.title()).toBe('Webhooks · Acme · mailctl')
    await shot(d.page, 'webhooks-01-empty')
    await d.a11y('webhooks, empty')
    await d.page.getByRole('button', { name: 'Add endpoint' }).click()
    // The API's refusal shows at the URL field.
    await d.page.getByLabel('URL').fill('ftp://example.com/')
    await d.page.getByRole('button', { name: 'Add endpoint' }).last().click()
    await d.page.getByRole('alert').first().waitFor()
    expect(await d.page.getByLabel('URL').getAttribute('aria-invalid')).toBe('true')
    await d.page.getByLabel('URL').fill(rx.url)
    // Its error goes once the field is changed.
    expect(await d.page.getByLabel('URL').getAttribute('aria-invalid')).toBeNull()
    await d.page.getByLabel('Description (optional)').fill('CRM sync')
    await d.page.getByLabel('Only the events chosen below').check()
    // Nothing chosen: said before anything is sent.
    await d.page.getByRole('button', { name: 'Add endpoint' }).last().click()
    await d.page.getByText('Choose at least one event, or every event.').waitFor()
    // The project's tracked event is offered by its name; a family's "every" covers its events.
    await d.page.getByLabel('signup', { exact: true }).check()
    await d.page.getByLabel('Unsubscribed', { exact: true }).check()
    await d.page.getByLabel('Every email event').check()
    expect(await d.page.getByLabel('Bounced', { exact: true }).isDisabled()).toBe(true)
    expect(await d.page.getByLabel('Bounced', { exact: true }).isChecked()).toBe(true)
    await d.page.getByLabel('Another event name').fill('purchase')
    await d.page.getByRole('button', { name: 'Add', exact: true }).click()
    expect(await d.page.getByLabel('purchase', { exact: true }).isChecked()).toBe(true)
    await shot(d.page, 'webhooks-02-new-form')
    await d.a11y('webhooks, new endpoint form')
    await d.page.getByRole('button', { name: 'Add endpoint' }).last().click()
    secret = (await d.page.getByTestId('signing-secret').textContent()) ?? ''
    expect(secret).toMatch(/^whsec_/)
    const list = await d.api('GET', '/webhooks/endpoints')
    expect(list.body.data).toHaveLength(1)
    endpointId = list.body.data[0].id
    expect(list.body.data[0]).toMatchObject({ url: rx.url, description: 'CRM sync', enabled: true })
    expect([...list.body.data[0].eventTypes].sort()).toEqual(['contact.unsubscribed', 'email.*', 'purchase', 'signup'])
    const row = d.page.getByRole('row', { name: /CRM sync/ })
    await row.getByText('Every email event').waitFor()
    await row.getByText('On', { exact: true }).waitFor()
    await shot(d.page, 'webhooks-03-created')
    await d.a11y('webhooks, created, secret shown')
  })

  test('a 410 Gone turns the endpoint off, as the page says; on again, a failed delivery is sent again, then every failed one since a time', async () => {
    await track('signup', 'bob@example.org')
    await track('purchase', 'cy@example.org')
    await track('pageview', 'cy@example.org') // not chosen: never delivered
    await deliver()
    expect(rx.received.length).toBeGreaterThanOrEqual(1)
    // The receiver verifies with the secret the page showed.
    expect(['signup', 'purchase']).toContain(verified(secret, rx.received[0]).type as string)
    await d.page.getByRole('link', { name: rx.url }).click()
    await d.page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor()
    expect(await d.page.title()).toBe('Webhook endpoint · Acme · mailctl')
    await d.page.getByText(/mailctl turned this endpoint off: The endpoint answered 410 Gone/).waitFor()
    await d.page.getByText('Turned off by mailctl').first().waitFor()
    const log = d.page.getByRole('region', { name: 'Deliveries' })
    await log.locator('tbody .badge.failed').first().waitFor()
    expect(await log.getByRole('row').filter({ hasText: 'pageview' }).count()).toBe(0)
    // While it is off, nothing can be sent again.
    expect(await log.getByRole('button', { name: /^Send again/ }).first().isDisabled()).toBe(true)
    await shot(d.page, 'webhooks-04-turned-off')
    await d.a11y('webhook endpoint, turned off')

    answer = 200
    await d.page.getByLabel('Send events to this endpoint').check()
    await d.page.getByRole('button', { name: 'Save', exact: true }).click()
    await d.page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await d.page.getByText('On', { exact: true }).first().waitFor()
    expect(await d.page.getByText(/mailctl turned this endpoint off/).count()).toBe(0)

    // One delivery sent again, with its attempts shown.
    const failedRows = log.getByRole('row').filter({ hasText: 'Failed' })
    const total = await failedRows.count()
    expect(total).toBe(2)
    await failedRows.first().getByRole('button', { name: /^Send again/ }).click()
    await log.getByText(/delivery is queued again/).waitFor()
    await deliver()
    await log.getByRole('button', { name: 'Refresh' }).click()
    await log.locator('tbody .badge.ok').first().waitFor()
    const delivered = log.getByRole('row').filter({ hasText: 'Delivered' }).first()
    await delivered.getByRole('button', { name: /^Details/ }).click()
    await log.getByRole('heading', { name: 'Sent body' }).waitFor()
    await log.getByText('HTTP 200').first().waitFor()
    const attempts = await d.api('GET', `/webhooks/endpoints/${endpointId}/attempts?limit=100`)
    expect(attempts.body.data.map((a: { status: number }) => a.status)).toContain(410)
    await shot(d.page, 'webhooks-05-delivery-detail')
    await d.a11y('webhook endpoint, a delivery opened')

    // Every failed one since a day ago.
    await log.getByRole('button', { name: 'Send failed deliveries again' }).click()
    await log.getByText('1 failed delivery is queued again.').waitFor()
    await deliver()
    await log.getByRole('button', { name: 'Refresh' }).click()
    await d.page.waitForFunction(() => document.querySelectorAll('[aria-labelledby="wh-log"] table.stacked > tbody > tr:not(.wh-detail) > td > .badge.ok').length === 2)
    const r = await d.api('GET', `/webhooks/endpoints/${endpointId}/deliveries?status=failed`)
    expect(r.body.data).toEqual([])
    // The status filter.
    await log.getByLabel('Status').selectOption('failed')
    await log.getByText('No failed deliveries').waitFor()
  })

  test('rotating the secret shows the new one once; both secrets sign for a day; on a phone and in dark the page still fits', async () => {
    await d.page.getByRole('button', { name: 'Rotate secret' }).click()
    await d.page.getByRole('button', { name: 'Yes, rotate secret' }).click()
    const fresh = (await d.page.getByTestId('signing-secret').textContent()) ?? ''
    expect(fresh).toMatch(/^whsec_/)
    expect(fresh).not.toBe(secret)
    await d.page.getByText(/The previous secret also signs until/).waitFor()
    const before = rx.received.length
    await track('purchase', 'dee@example.org')
    await deliver()
    expect(rx.received.length).toBe(before + 1)
    const last = rx.received[rx.received.length - 1]
    expect(verified(fresh, last).type).toBe('purchase')
    expect(verified(secret, last).type).toBe('purchase')

    await d.page.emulateMedia({ colorScheme: 'dark' })
    await d.page.setViewportSize({ width: 390, height: 844 })
    await d.page.reload()
    await d.page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor()
    await d.page.locator('tbody .badge.ok').first().waitFor()
    const overflow = await d.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
    expect(overflow).toBeLessThanOrEqual(0)
    await shot(d.page, 'webhooks-06-phone-dark')
    await d.a11y('webhook endpoint, phone, dark')
    await d.open('/webhooks')
    await d.page.getByRole('row', { name: /CRM sync/ }).waitFor()
    await shot(d.page, 'webhooks-07-list-phone-dark')
    await d.a11y('webhooks list, phone, dark')
    await d.open('/settings')
    await d.page.getByLabel('Campaign sending rate (emails per second)').waitFor()
    await shot(d.page, 'settings-03-phone-dark')
    await d.a11y('settings, phone, dark')
    await d.page.emulateMedia({ colorScheme: 'light' })
    await d.page.setViewportSize({ width: 1366, height: 768 })
  })

  test('deleting the endpoint asks first, then lists none', async () => {
    await d.open(`/webhooks/${endpointId}`)
    await d.page.getByRole('button', { name: 'Delete endpoint' }).click()
    await d.page.getByRole('button', { name: 'Yes, delete endpoint' }).click()
    await d.page.getByText('No endpoints yet').waitFor()
    expect((await d.api('GET', '/webhooks/endpoints')).body.data).toEqual([])
  })
})
