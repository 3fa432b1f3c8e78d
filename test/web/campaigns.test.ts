import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startTestDns } from '../helpers/dns'
import { insertTestDomain } from '../helpers/domains'
import { startSink } from '../helpers/smtp'
import { until } from '../helpers/worker'
import { Worker } from '../../src/jobs/queue'
import { campaignSendJob } from '../../src/modules/campaigns/jobs'
import { mxTo, pipelineFor } from '../modules/emails/fixture'
import { chromiumAvailable, previewShows, shot } from './browser'
import { dashboardSuite } from './fixture'
import { zonedToUtc } from '../../web/pages/campaigns/schedule'

setDefaultTimeout(120_000)

/**
 * The campaign pages in Chromium (issue 16, Campaigns): compose a FILTERED campaign, send it to an SMTP
 * sink on loopback (direct delivery, MX records on a loopback DNS server), follow it live, and see its
 * results move when a sunk message's open pixel and a tracked link are fetched; schedule in a time zone
 * and cancel; duplicate; a validation error on its field; axe-core and a screenshot on every page.
 */
const available = chromiumAvailable()
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')

/** A sunk message's body with quoted-printable soft breaks and `=3D` undone (enough to find its URLs). */
const unfold = (raw: Buffer) => raw.toString('utf8').replace(/=\r?\n/g, '').replace(/=3D/g, '=')

test('scheduling: a wall-clock time in a zone becomes the right UTC instant, across summer time and half-hour zones', () => {
  const at = (date: string, time: string, zone: string) => zonedToUtc(date, time, zone)?.toISOString() ?? null
  expect(at('2027-01-15', '09:00', 'Europe/Paris')).toBe('2027-01-15T08:00:00.000Z')
  expect(at('2027-07-15', '09:00', 'Europe/Paris')).toBe('2027-07-15T07:00:00.000Z')
  // New York moves to summer time at 02:00 on 2027-03-14: 03:30 is then UTC-4.
  expect(at('2027-03-14', '03:30', 'America/New_York')).toBe('2027-03-14T07:30:00.000Z')
  expect(at('2027-03-13', '03:30', 'America/New_York')).toBe('2027-03-13T08:30:00.000Z')
  expect(at('2027-05-01', '10:00', 'Asia/Kolkata')).toBe('2027-05-01T04:30:00.000Z')
  expect(at('2027-05-01', '10:00', 'UTC')).toBe('2027-05-01T10:00:00.000Z')
  expect(at('2027-05-01', '', 'UTC')).toBeNull()
  expect(at('tomorrow', '10:00', 'UTC')).toBeNull()
})

describe.skipIf(!available)('campaign pages in Chromium', () => {
  const d = dashboardSuite({ dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
  let campaignId = ''
  const pageErrors: string[] = []

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    await insertTestDomain(d.env, d.projectId, 'shop.test', { verified: true })
    const people = [
      { email: 'ann@dest.test', plan: 'pro', subscribed: true },
      { email: 'bob@dest.test', plan: 'pro', subscribed: true },
      { email: 'cat@dest.test', plan: 'pro', subscribed: true },
      { email: 'dan@dest.test', plan: 'pro', subscribed: false },
      { email: 'eve@dest.test', plan: 'pro', subscribed: true },
      { email: 'fay@dest.test', plan: 'basic', subscribed: true },
    ]
    for (const p of people) {
      const r = await d.api('POST', '/contacts', { email: p.email, subscribed: p.subscribed, data: { plan: p.plan, name: p.email.split('@')[0] } })
      expect(r.status).toBeLessThan(300)
    }
    expect((await d.api('POST', '/suppressions', { email: 'eve@dest.test' })).status).toBeLessThan(300)
  })

  test('the empty list says what to do; compose a FILTERED campaign with the live count; a bad field is highlighted', async () => {
    const { page } = d
    await d.open('/campaigns')
    await page.getByText('No campaigns yet').waitFor()
    await shot(page, 'campaigns-01-empty')
    await d.a11y('campaigns: empty list')

    await page.getByRole('link', { name: 'New campaign' }).first().click()
    await page.getByRole('heading', { name: 'New campaign' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Pro launch')
    await page.getByLabel('Subject', { exact: true }).fill('Hello {{name}}, the pro plan grew')
    expect(await page.getByLabel('Sender domain').inputValue()).toBe('shop.test')
    await page.getByLabel('Sender name').fill('Shop')
    await page.getByLabel('Contacts matching a filter').check()
    await page.getByLabel('Field 1', { exact: true }).selectOption('data.plan')
    expect(pageErrors).toEqual([])
    await page.getByLabel('Condition 1', { exact: true }).selectOption('equals')
    await page.getByLabel('Value 1', { exact: true }).fill('pro')
    // 5 contacts on the pro plan: one not subscribed and one suppressed are skipped.
    await page.getByTestId('audience-count').filter({ hasText: '3 recipients now' }).waitFor()
    expect(await page.getByTestId('audience-count').textContent()).toContain('5 matching, 1 skipped as unsubscribed, 1 skipped as suppressed')
    // A new campaign opens the visual editor on a blank design; its preview is a sandboxed iframe filled
    // from the sample data.
    await page.getByRole('button', { name: 'Preview', exact: true }).click()
    expect(await previewShows(page, '">Hello Ada,</h1>')).toBe('')
    await shot(page, 'campaigns-02-composer')
    await d.a11y('campaigns: composer')

    // An empty subject is refused by the API on that field; the form points at it.
    await page.getByLabel('Subject', { exact: true }).fill('')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('alert').filter({ hasText: 'highlighted' }).waitFor()
    expect(await page.getByLabel('Subject', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    expect(await page.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBeNull()
    await shot(page, 'campaigns-03-validation')
    await page.getByLabel('Subject', { exact: true }).fill('Hello {{name}}, the pro plan grew')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('heading', { name: 'Send', exact: true }).waitFor()
    campaignId = new URL(page.url()).pathname.split('/').pop() ?? ''
    const saved = await d.api('GET', `/campaigns/${campaignId}`)
    expect(saved.body).toMatchObject({
      name: 'Pro launch', status: 'DRAFT', from: 'hello@shop.test', fromName: 'Shop', audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    })
    await page.getByText('3 recipients now; 1 unsubscribed and 1 suppressed are skipped.').waitFor()
    await shot(page, 'campaigns-04-draft')
    await d.a11y('campaigns: draft')
  })

  test('a test send, then send now: the live view while SENDING, the results once SENT, and the counts move with an open and a click', async () => {
    const { page } = d
    await page.getByLabel('Send a test to').fill('tester@dest.test')
    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByText('Test email queued for tester@dest.test').waitFor()

    await page.getByRole('button', { name: 'Send now' }).click()
    await page.getByText('Send to 3 recipients now?').waitFor()
    await page.getByRole('button', { name: 'Yes, send now' }).click()
    // No worker runs in this server: the campaign waits in SENDING, with the live view, until the test drains one.
    await page.getByRole('heading', { name: 'Sending now' }).waitFor()
    await page.getByText('messages per second').waitFor()
    await shot(page, 'campaigns-05-sending')
    await d.a11y('campaigns: sending')

    // The fan-out in batches of 2, held after its first batch: the page shows the progress so far.
    let release = () => {}
    const gate = new Promise<void>((resolve) => { release = resolve })
    const fanOut = new Worker(d.env.deps, [campaignSendJob({ batchSize: 2, afterBatch: async (b) => { if (b.index === 1) await gate } })]).drain()
    await page.getByText('Audience handled: 2 of 5').waitFor()
    await page.getByText('Mail out: 0 of 2 queued').waitFor()
    await shot(page, 'campaigns-05b-sending-progress')
    release()
    await fanOut
    await pipelineFor(d.env).drain()
    const mine = () => sink.received.filter((m) => m.to.some((t) => ['ann@dest.test', 'bob@dest.test', 'cat@dest.test'].includes(t)))
    await until(() => mine().length === 3, 60_000, 'the three campaign messages in the sink', 50)
    expect(sink.received.filter((m) => m.to.includes('tester@dest.test')).length).toBe(1)
    expect(sink.received.some((m) => m.to.includes('dan@dest.test') || m.to.includes('eve@dest.test') || m.to.includes('fay@dest.test'))).toBe(false)

    // The page follows the campaign to SENT and shows its results.
    await page.getByTestId('tile-delivered').filter({ hasText: /Delivered3\s/ }).waitFor({ timeout: 60_000 })
    expect(await page.getByTestId('tile-opened').textContent()).toMatch(/^Opened0/)

    const body = unfold(mine()[0].raw)
    const pixel = /https?:\/\/[^"'\s<>]+\/t\/o\/[^"'\s<>]+/.exec(body)?.[0]
    const click = /https?:\/\/[^"'\s<>]+\/t\/c\/[^"'\s<>]+/.exec(body)?.[0]
    expect(pixel).toBeDefined()
    expect(click).toBeDefined()
    expect((await fetch(`${d.base}${new URL(pixel ?? '').pathname}`)).status).toBe(200)
    const redirect = await fetch(`${d.base}${new URL(click ?? '').pathname}${new URL(click ?? '').search}`, { redirect: 'manual' })
    expect(redirect.status).toBeGreaterThanOrEqual(300)
    expect(redirect.headers.get('location')).toBe('https://example.com')

    await page.getByTestId('tile-opened').filter({ hasText: /Opened1\s/ }).waitFor({ timeout: 30_000 })
    await page.getByTestId('tile-clicked').filter({ hasText: /Clicked1\s/ }).waitFor({ timeout: 30_000 })
    expect(await page.getByTestId('tile-opened').textContent()).toContain('33.3% of delivered')
    await page.getByRole('cell', { name: 'https://example.com', exact: true }).waitFor({ timeout: 30_000 })
    await page.getByRole('img', { name: /Delivered, opened, clicked/ }).waitFor({ timeout: 30_000 })
    await shot(page, 'campaigns-06-results')
    await d.a11y('campaigns: results')

    await page.getByRole('link', { name: 'Results page' }).click()
    await page.getByRole('heading', { name: 'Pro launch: results' }).waitFor()
    await page.getByTestId('tile-delivered').filter({ hasText: /Delivered3\s/ }).waitFor()
    await shot(page, 'campaigns-07-results-page')
    await d.a11y('campaigns: results page')
  })

  test('schedule in a chosen time zone (a past time is refused on the date), then cancel; duplicate', async () => {
    const { page } = d
    const created = await d.api('POST', '/campaigns', { name: 'Weekly digest', subject: 'Digest', body: '<p>News</p>', from: 'news@shop.test', audienceType: 'ALL' })
    expect(created.status).toBe(200)
    const id = created.body.data.id as string
    await d.open(`/campaigns/${id}`)
    await page.getByRole('heading', { name: 'Or schedule it' }).waitFor()
    await page.getByLabel('Date', { exact: true }).fill('2020-01-01')
    await page.getByRole('button', { name: 'Schedule' }).click()
    await page.getByText('Pick a time at least a minute from now').waitFor()
    expect(await page.getByLabel('Date', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    expect((await d.api('GET', `/campaigns/${id}`)).body.status).toBe('DRAFT')

    const year = new Date().getUTCFullYear() + 1
    await page.getByLabel('Date', { exact: true }).fill(`${year}-07-01`)
    await page.getByLabel('Time', { exact: true }).fill('09:30')
    await page.getByLabel('Time zone', { exact: true }).selectOption('Europe/Paris')
    // The checks before sending warn (no preheader): scheduling asks first (issue 36).
    page.once('dialog', (dialog) => { expect(dialog.message()).toContain('check above is not met'); dialog.accept() })
    await page.getByRole('button', { name: 'Schedule' }).click()
    await page.getByText('scheduled for').waitFor()
    // 09:30 in Paris in July is 07:30 UTC (summer time).
    expect((await d.api('GET', `/campaigns/${id}`)).body).toMatchObject({ status: 'SCHEDULED', scheduledFor: `${year}-07-01T07:30:00.000Z` })
    await shot(page, 'campaigns-08-scheduled')
    await d.a11y('campaigns: scheduled')

    await page.getByRole('button', { name: 'Cancel campaign' }).click()
    await page.getByRole('button', { name: 'Yes, cancel campaign' }).click()
    await page.getByText('CANCELLED').first().waitFor()
    expect((await d.api('GET', `/campaigns/${id}`)).body.status).toBe('CANCELLED')

    await page.getByRole('button', { name: 'Duplicate' }).click()
    await page.getByRole('heading', { name: 'Weekly digest (copy)' }).waitFor()
    const copyId = new URL(page.url()).pathname.split('/').pop() ?? ''
    expect(copyId).not.toBe(id)
    expect((await d.api('GET', `/campaigns/${copyId}`)).body).toMatchObject({ status: 'DRAFT', subject: 'Digest', audienceType: 'ALL' })
    await shot(page, 'campaigns-09-duplicate')
  })

  test('the composer starts from a template: its subject, body and sender fill the form', async () => {
    const { page } = d
    const t = await d.api('POST', '/templates', { name: 'Monthly news', subject: 'News for {{name}}', body: '<h2>This month</h2><p>Hi {{name}}</p>', from: 'letters@shop.test', fromName: 'Shop letters' })
    expect(t.status).toBeLessThan(300)
    // Nothing is written yet, so choosing a template must not ask to replace it. A question is recorded and
    // dismissed (a listener must answer it, or the page waits), which leaves the form empty: the messages say why.
    const asked: string[] = []
    const onDialog = (dl: { message(): string; dismiss(): Promise<void> }) => { asked.push(dl.message()); void dl.dismiss() }
    page.on('dialog', onDialog)
    const subject = page.getByLabel('Subject', { exact: true })
    try {
      await d.open('/campaigns/new')
      await page.getByLabel('Start from a template').selectOption({ label: 'Monthly news' })
      // The form fills once the template is read (a render or two later): wait for it, then check every field.
      for (let i = 0; i < 200 && (await subject.inputValue()) === ''; i++) await Bun.sleep(25)
    } finally {
      page.off('dialog', onDialog)
    }
    expect({ subject: await subject.inputValue(), asked }).toEqual({ subject: 'News for {{name}}', asked: [] })
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Monthly news')
    expect(await page.getByLabel('Sender address').inputValue()).toBe('letters')
    expect(await page.getByLabel('Sender name').inputValue()).toBe('Shop letters')
    expect(await previewShows(page, '<h2>This month</h2>')).toBe('')
    expect(await page.getByLabel('HTML source').inputValue()).toBe('<h2>This month</h2><p>Hi {{name}}</p>')
  })

  test('the list filters by status and searches', async () => {
    const { page } = d
    await d.open('/campaigns')
    await page.getByRole('link', { name: 'Pro launch' }).waitFor()
    expect(await page.locator('tbody tr').count()).toBe(3)
    await shot(page, 'campaigns-10-list')
    await d.a11y('campaigns: list')
    await page.getByRole('button', { name: 'Sent', exact: true }).click()
    await page.getByText('1 campaign', { exact: true }).waitFor()
    expect(await page.locator('tbody tr').first().textContent()).toContain('Pro launch')
    await page.getByRole('button', { name: 'All', exact: true }).click()
    await page.getByLabel('Search').fill('copy')
    await page.getByText('1 campaign', { exact: true }).waitFor()
    expect(await page.locator('tbody tr').first().textContent()).toContain('Weekly digest (copy)')
    await page.getByLabel('Search').fill('no such campaign')
    await page.getByText('No campaign matches').waitFor()
    await page.setViewportSize({ width: 390, height: 844 })
    await page.getByLabel('Search').fill('')
    await page.getByRole('link', { name: 'Pro launch' }).waitFor()
    await shot(page, 'campaigns-11-phone-list')
    await d.open(`/campaigns/${campaignId}`)
    await page.getByTestId('tile-delivered').waitFor()
    await shot(page, 'campaigns-12-phone-results')
    await d.open('/campaigns/new')
    await page.getByLabel('Contacts matching a filter').check()
    await page.getByLabel('Field 1', { exact: true }).waitFor()
    await shot(page, 'campaigns-13-phone-composer')
    await d.a11y('campaigns: composer on a phone')
    await page.setViewportSize({ width: 1366, height: 768 })
  })
})
