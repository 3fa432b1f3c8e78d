import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startTestDns } from '../helpers/dns'
import { insertTestDomain } from '../helpers/domains'
import { byDomain, startSink, tempFailThenAccept } from '../helpers/smtp'
import { mxTo, pipelineFor } from '../modules/emails/fixture'
import { decode as decodeQp } from 'libqp'
import { must } from '../helpers/must'
import { Worker } from '../../src/jobs/queue'
import { campaignSendJob } from '../../src/modules/campaigns/jobs'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(90_000)

/**
 * Mail and activity, and Tools, in a real browser (issue 15, pages 7 and 8): a test email sent from the
 * Tools page is delivered to an SMTP sink on loopback that answers 451 once and then 250, so its detail
 * page shows two attempts with their replies; the verify tool; the suppression list; the feed's filters.
 */
const available = chromiumAvailable()
const dns = await startTestDns()
const sink = await startSink({ script: byDomain({
  'grey.test': tempFailThenAccept(1, '451 4.7.1 Greylisted, please try again in 1 seconds'),
  'later.test': (c) => (c.stage === 'data' ? '451 4.7.1 Try again in 300 seconds' : null),
}) })
mxTo(dns, 'grey.test')
mxTo(dns, 'later.test')
mxTo(dns, 'plain.test')

describe.skipIf(!available)('mail and tools pages in Chromium', () => {
  const d = dashboardSuite({ dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
  const SENDER = 'acme-mail.test'

  beforeAll(async () => {
    await insertTestDomain(d.env, d.projectId, SENDER, { verified: true })
    const tracking = await d.api('PATCH', `/users/@me/projects/${d.projectId}`, { trackingEnabled: true })
    expect(tracking.status).toBe(200)
    pipelineFor(d.env).start()
  })

  const page = () => d.page

  test('Tools: a send with a missing recipient highlights To; a test email is queued and links to its delivery', async () => {
    await d.open('/tools')
    const p = page()
    await p.getByRole('heading', { name: 'Send a test email' }).waitFor()
    expect(await p.getByLabel('Sending domain').inputValue()).toBe(SENDER)
    await p.getByLabel('Subject').fill('Hello from the dashboard test')
    await p.getByRole('button', { name: 'Send test' }).click()
    await p.getByRole('alert').first().waitFor()
    expect(await p.getByLabel('To', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    await shot(p, 'mail-01-tools-send-error')
    await p.getByLabel('To', { exact: true }).fill('ada@grey.test')
    await p.getByLabel('From name (optional)').fill('Acme')
    await p.getByLabel('Body (HTML)').fill('<p>Hello Ada, the <a href="https://docs.example.com/start">docs</a> are ready.</p>')
    await p.getByRole('button', { name: 'Send test' }).click()
    await p.getByText('Queued for ada@grey.test').waitFor()
    expect(await p.getByLabel('To', { exact: true }).getAttribute('aria-invalid')).toBeNull()
    await shot(p, 'mail-02-tools-sent')
    await d.a11y('tools')
  })

  test('the email shows in the activity feed; its detail page shows both SMTP replies, the history and the headers', async () => {
    await d.open('/activity')
    const p = page()
    await p.getByRole('heading', { name: 'Activity' }).waitFor()
    const link = p.getByRole('link', { name: 'Hello from the dashboard test' }).first()
    await link.waitFor()
    await shot(p, 'mail-03-activity')
    await d.a11y('activity')
    await link.click()
    await p.getByRole('heading', { name: 'Hello from the dashboard test' }).waitFor()
    // The page follows the delivery: the 451, then the 250 once the retry is accepted.
    const attempts = p.locator('section, .card').filter({ has: p.getByRole('heading', { name: 'Delivery attempts' }) })
    await attempts.getByText(/^250 /).waitFor({ timeout: 60_000 })
    const rows = attempts.locator('tbody tr')
    expect(await rows.count()).toBe(2)
    expect(await rows.nth(0).textContent()).toContain('451 4.7.1')
    expect(await rows.nth(0).textContent()).toContain('Deferred')
    expect(await rows.nth(1).textContent()).toContain('Accepted')
    expect(await rows.nth(1).textContent()).toContain(`mx.grey.test[127.0.0.1]:${sink.port}`)
    await p.getByText('Delivered', { exact: true }).first().waitFor()
    const headers = (await p.locator('pre.code').textContent()) ?? ''
    expect(headers).toContain('Subject: Hello from the dashboard test')
    expect(headers).toContain(`From: Acme <hello@${SENDER}>`)
    expect(headers).toContain('To: ada@grey.test')
    const got = sink.received.filter((m) => m.raw.toString('utf8').includes('Hello from the dashboard test'))
    expect(got).toHaveLength(1)
    // The recipient opens it and follows the link: the tracked pixel and redirect of the delivered HTML.
    const html = decodeQp(got[0].raw.toString('latin1')).toString('utf8')
    const pixel = must(/"(https?:\/\/[^"]*\/t\/o\/[^"]+)"/.exec(html), 'the open pixel')[1]
    const click = must(/href="(https?:\/\/[^"]*\/t\/c\/[^"]+)"/.exec(html), 'the tracked link')[1]
    const local = (u: string) => `${d.base}${new URL(u.replace(/&amp;/g, '&')).pathname}${new URL(u.replace(/&amp;/g, '&')).search}`
    expect((await fetch(local(pixel))).status).toBe(200)
    const hop = await fetch(local(click), { redirect: 'manual' })
    expect(hop.headers.get('location')).toBe('https://docs.example.com/start')
    await p.reload()
    await p.getByText('1 open · 1 click').waitFor()
    expect(await p.locator('.card').filter({ hasText: 'Opens and clicks' }).textContent()).toContain('https://docs.example.com/start')
    await shot(p, 'mail-04-email-detail')
    await d.a11y('email detail')
    await p.setViewportSize({ width: 390, height: 844 })
    await shot(p, 'mail-05-email-detail-phone')
    await d.a11y('email detail, phone width')
    await d.open('/activity')
    await p.getByRole('link', { name: 'Hello from the dashboard test' }).first().waitFor()
    await shot(p, 'mail-05b-activity-phone')
    await p.setViewportSize({ width: 1366, height: 768 })
  })

  test('a deferred email\'s page says it is waiting to retry, and until when (issue 40, item 8)', async () => {
    const sent = await fetch(`${d.base}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: `hello@${SENDER}`, to: 'bob@later.test', subject: 'Deferred for a while', body: '<p>Hi</p>' }),
    })
    expect(sent.status).toBe(200)
    const id = ((await sent.json()) as { data: { emails: Array<{ email: string }> } }).data.emails[0].email
    const deferred = async () => (await d.api('GET', `/emails/${id}`)).body?.deliveryState === 'WAITING_RETRY'
    for (let i = 0; i < 600 && !(await deferred()); i++) await Bun.sleep(50)
    const e = (await d.api('GET', `/emails/${id}`)).body
    expect(e).toMatchObject({ status: 'SENDING', deliveryState: 'WAITING_RETRY' })
    await d.open(`/emails/${id}`)
    const p = page()
    await p.getByRole('heading', { name: 'Deferred for a while' }).waitFor()
    await p.getByText('Waiting to retry', { exact: true }).first().waitFor()
    const note = (await p.getByTestId('delivery-state').textContent()) ?? ''
    expect(note).toContain('Waiting to retry')
    expect(note).toContain('the next attempt is at')
    await p.getByText(/451 4\.7\.1 Try again in 300 seconds/).first().waitFor()
    await shot(p, 'mail-04b-email-waiting-retry')
    await d.a11y('email waiting to retry')
  })

  test('the filters change the feed: type, contact, dates, and back', async () => {
    const second = await d.api('POST', '/v1/send', { from: `hello@${SENDER}`, to: 'bob@plain.test', subject: 'Second message', body: '<p>b</p>' })
    expect(second.status).toBe(200)
    await d.open('/activity')
    const p = page()
    await p.getByRole('link', { name: 'Second message' }).first().waitFor()
    const rows = p.locator('tbody tr')
    // Type: deliveries only (the first email's delivery is there; the second may not be yet).
    await p.getByLabel('Type').selectOption('email.delivery')
    await p.getByText('Delivered', { exact: true }).first().waitFor()
    await expectAll(rows, (t) => t.includes('Delivered'))
    // Contact: Bob's mail only.
    await p.getByLabel('Type').selectOption('')
    await p.getByLabel('Contact (email or id)').fill('bob@plain.test')
    await p.getByRole('button', { name: 'Apply' }).click()
    await p.getByRole('link', { name: 'Second message' }).first().waitFor()
    await p.getByRole('link', { name: 'Hello from the dashboard test' }).waitFor({ state: 'detached' })
    await expectAll(rows, (t) => t.includes('bob@plain.test'))
    await shot(p, 'mail-06-activity-filtered')
    // Dates: from tomorrow, nothing.
    await p.getByRole('button', { name: 'Clear filters' }).click()
    await p.getByRole('link', { name: 'Hello from the dashboard test' }).first().waitFor()
    const tomorrow = new Date(Date.now() + 86_400_000)
    const day = `${tomorrow.getFullYear()}-${String(tomorrow.getMonth() + 1).padStart(2, '0')}-${String(tomorrow.getDate()).padStart(2, '0')}`
    await p.getByLabel('From day').fill(day)
    await p.getByText('Nothing matches these filters').waitFor()
    await shot(p, 'mail-07-activity-empty')
    await d.a11y('activity filtered')
    await p.getByRole('button', { name: 'Clear filters' }).click()
    await p.getByRole('link', { name: 'Second message' }).first().waitFor()
  })

  test('verify tool: the result fields of a deliverable and of a malformed address', async () => {
    await d.open('/tools')
    const p = page()
    await p.getByLabel('Email to verify').fill('ada@grey.test')
    await p.getByRole('button', { name: 'Verify', exact: true }).click()
    await p.getByText('looks deliverable').waitFor()
    const result = p.locator('dl.result')
    expect(await result.textContent()).toContain('Accepts mail (MX records)')
    expect(await result.locator('div').filter({ hasText: 'Accepts mail' }).locator('dd').textContent()).toBe('Yes')
    expect(await result.locator('div').filter({ hasText: 'Disposable address' }).locator('dd').textContent()).toBe('No')
    await shot(p, 'mail-08-verify')
    await d.a11y('verify result')
    // A domain nobody publishes: answered, not deliverable, with the reasons.
    await p.getByLabel('Email to verify').fill('someone@nowhere.test')
    await p.getByRole('button', { name: 'Verify', exact: true }).click()
    await p.getByText('not deliverable').waitFor()
    expect(await result.locator('div').filter({ hasText: 'Domain exists' }).locator('dd').textContent()).toBe('No')
    expect(await p.locator('section').filter({ hasText: 'Verify an address' }).locator('ul li').count()).toBeGreaterThan(0)
    await shot(p, 'mail-09-verify-undeliverable')
    // Spaces are refused by the API: the field is highlighted with its message.
    await p.getByLabel('Email to verify').fill('not an address')
    await p.getByRole('button', { name: 'Verify', exact: true }).click()
    await p.getByRole('alert').waitFor()
    expect(await p.getByLabel('Email to verify').getAttribute('aria-invalid')).toBe('true')
    expect(await p.locator('section').filter({ hasText: 'Verify an address' }).textContent()).toContain('contains spaces')
  })

  test('suppressions: a bad address is refused on its field; add one, find it, remove it', async () => {
    await d.open('/suppressions')
    const p = page()
    await p.getByText('No suppressed addresses').waitFor()
    await shot(p, 'mail-10-suppressions-empty')
    await d.a11y('suppressions empty')
    await p.getByRole('button', { name: 'Add address' }).click()
    await p.getByLabel('Email', { exact: true }).fill('not-an-email')
    await p.getByRole('button', { name: 'Suppress' }).click()
    await p.getByRole('alert').waitFor()
    expect(await p.getByLabel('Email', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    await shot(p, 'mail-11-suppressions-error')
    await p.getByLabel('Email', { exact: true }).fill('carol@plain.test')
    await p.getByLabel('Note (optional)').fill('Asked by phone')
    await p.getByRole('button', { name: 'Suppress' }).click()
    await p.getByText('carol@plain.test is suppressed').waitFor()
    await p.getByRole('cell', { name: 'carol@plain.test' }).waitFor()
    expect(await p.locator('tbody').textContent()).toContain('Asked by phone')
    // The API agrees, and a send to it is reported as suppressed.
    expect((await d.api('GET', '/suppressions/carol%40plain.test')).body).toMatchObject({ reason: 'manual', detail: 'Asked by phone' })
    await p.getByLabel('Search by address').fill('nobody')
    await p.getByText('No suppressed address matches').waitFor()
    await p.getByLabel('Search by address').fill('carol')
    await p.getByRole('cell', { name: 'carol@plain.test' }).waitFor()
    await shot(p, 'mail-12-suppressions')
    await d.a11y('suppressions')
    await p.getByRole('button', { name: 'Remove' }).click()
    await p.getByRole('button', { name: 'Yes, remove' }).click()
    await p.getByText('carol@plain.test was removed').waitFor()
    await p.getByRole('cell', { name: 'carol@plain.test' }).waitFor({ state: 'detached' })
    expect((await d.api('GET', '/suppressions/carol%40plain.test')).status).toBe(404)
  })

  test('the campaign filter shows only that campaign\'s mail', async () => {
    expect((await d.api('POST', '/contacts', { email: 'dora@plain.test', subscribed: true })).status).toBeLessThan(300)
    const c = await d.api('POST', '/campaigns', { name: 'Spring news', subject: 'Spring is here', body: '<p>Spring</p>', from: `hello@${SENDER}`, audienceType: 'ALL' })
    expect(c.status).toBe(200)
    expect((await d.api('POST', `/campaigns/${c.body.data.id}/send`, {})).status).toBe(200)
    await new Worker(d.env.deps, [campaignSendJob({ batchSize: 10 })]).drain()
    await d.open('/activity')
    const p = page()
    await p.getByRole('link', { name: 'Spring is here' }).first().waitFor()
    await p.getByLabel('Campaign').selectOption({ label: 'Spring news' })
    await p.getByRole('link', { name: 'Second message' }).first().waitFor({ state: 'detached' })
    await expectAll(p.locator('tbody tr'), (t) => t.includes('Spring is here') && t.includes('dora@plain.test'))
    await shot(p, 'mail-13-activity-campaign')
    await d.a11y('activity by campaign')
  })

  test('"Load more" follows the cursor until the end of the feed', async () => {
    const many = await d.api('POST', '/v1/send', { from: `hello@${SENDER}`, to: Array.from({ length: 30 }, (_, i) => `reader${i}@plain.test`), subject: 'Newsletter {{n}}', body: '<p>n</p>' })
    expect(many.status).toBe(200)
    await d.open('/activity?type=email')
    const p = page()
    const rows = p.locator('tbody tr')
    await p.getByRole('button', { name: 'Load more' }).waitFor()
    expect(await rows.count()).toBe(25)
    const total = Number(/([\d,]+) items?/.exec((await p.getByText(/ items?$/).textContent()) ?? '')?.[1].replace(/,/g, ''))
    expect(total).toBeGreaterThan(25)
    await p.getByRole('button', { name: 'Load more' }).click()
    await p.getByText('End of the feed').waitFor()
    expect(await rows.count()).toBe(total)
    await shot(p, 'mail-14-activity-load-more')
  })
})

/** Every row's text satisfies `ok` (waits for the table to settle on the new filter first). */
async function expectAll(rows: ReturnType<import('playwright-core').Page['locator']>, ok: (text: string) => boolean) {
  const end = Date.now() + 30_000
  for (;;) {
    const texts = await rows.allInnerTexts()
    if (texts.length > 0 && texts.every(ok)) return
    if (Date.now() > end) expect(texts).toEqual(['every row matching the filter'])
    await Bun.sleep(100)
  }
}
