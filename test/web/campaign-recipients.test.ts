import { readFileSync } from 'node:fs'
import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { insertTestDomain } from '../helpers/domains'
import { Worker } from '../../src/jobs/queue'
import { campaignSendJob } from '../../src/modules/campaigns/jobs'
import { advanceEmail } from '../../src/modules/tracking/repo'
import { recordClick, recordOpen } from '../../src/modules/tracking/service'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The per-recipient report of a campaign in Chromium (issue 36, item 7): who opened, who clicked which link,
 * who bounced or unsubscribed; the filters and the link filter narrow the list (and live in the address);
 * the CSV export downloads the filtered list; reached from the results page; desktop and phone, axe-core.
 */
const available = chromiumAvailable()

describe.skipIf(!available)('campaign recipients report in Chromium', () => {
  const d = dashboardSuite()
  let id = ''
  const pageErrors: string[] = []

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    await insertTestDomain(d.env, d.projectId, 'shop.test', { verified: true })
    for (const n of ['ann', 'bob', 'cy', 'di', 'ed']) {
      expect((await d.api('POST', '/contacts', { email: `${n}@dest.test`, subscribed: true })).status).toBeLessThan(300)
    }
    const made = await d.api('POST', '/campaigns', {
      name: 'Autumn news', subject: 'News', body: '<p><a href="https://a.test/sale">Sale</a> <a href="https://a.test/blog">Blog</a></p>',
      from: 'news@shop.test', audienceType: 'ALL',
    })
    expect(made.status).toBe(200)
    id = made.body.data.id
    expect((await d.api('POST', `/campaigns/${id}/send`, {})).status).toBe(200)
    await new Worker(d.env.deps, [campaignSendJob({ batchSize: 2 })]).drain()
    const { emails, campaignUnsubscribes } = d.env.store.t
    const rows = await d.env.store.db.select().from(emails).where(and(eq(emails.campaignId, id), eq(emails.sourceType, 'campaign')))
    const of = (n: string) => rows.find((r) => r.toAddress === `${n}@dest.test`) ?? rows[0]
    const now = new Date()
    for (const n of ['ann', 'bob', 'di', 'ed']) {
      await d.env.store.tx((db) => advanceEmail(d.env.store, db, d.projectId, of(n).id, { status: 'DELIVERED', deliveredAt: now }, now))
    }
    await recordOpen(d.env.deps, of('ann').id)
    await recordOpen(d.env.deps, of('ann').id)
    await recordClick(d.env.deps, of('ann').id, 'https://a.test/sale')
    await recordClick(d.env.deps, of('bob').id, 'https://a.test/blog')
    await recordOpen(d.env.deps, of('ed').id)
    await d.env.store.tx((db) => advanceEmail(d.env.store, db, d.projectId, of('cy').id, { status: 'BOUNCED', bouncedAt: now, bounceType: 'hard' }, now))
    await d.env.store.tx((db) => db.insert(campaignUnsubscribes).values({ projectId: d.projectId, campaignId: id, contactId: of('di').contactId ?? '', emailId: of('di').id, createdAt: now }))
  })

  const listed = async () => (await d.page.getByTestId('recipients').locator('tbody tr td:first-child a:first-child').allTextContents()).map((e) => e.split('@')[0]).sort()

  test('from the results to everyone, then who opened, who clicked which link, who bounced or unsubscribed', async () => {
    const { page } = d
    await d.open(`/campaigns/${id}/stats`)
    await page.getByRole('heading', { name: 'Results', exact: true }).waitFor()
    await page.getByRole('link', { name: 'Recipients', exact: true }).click()
    await page.getByRole('heading', { name: 'Autumn news: recipients' }).waitFor()
    await page.getByTestId('recipients').waitFor()
    expect(await listed()).toEqual(['ann', 'bob', 'cy', 'di', 'ed'])
    expect(await page.title()).toBe('Campaign recipients · Acme · mailctl')
    const ann = page.getByTestId('recipients').locator('tr', { hasText: 'ann@dest.test' })
    expect(await ann.textContent()).toContain('2 times')
    expect(await ann.textContent()).toContain('https://a.test/sale')
    await shot(page, 'recipients-01-everyone')
    await d.a11y('recipients: everyone')

    await page.getByRole('button', { name: 'Opened', exact: true }).click()
    await page.waitForURL(/filter=opened/)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 3)
    // A click counts as an open (the pixel is often blocked).
    expect(await listed()).toEqual(['ann', 'bob', 'ed'])

    await page.getByLabel('Clicked link').selectOption('https://a.test/blog')
    await page.waitForURL(/filter=clicked&link=/)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 1)
    expect(await listed()).toEqual(['bob'])
    expect(await page.getByRole('button', { name: 'Clicked', exact: true }).getAttribute('aria-pressed')).toBe('true')
    await shot(page, 'recipients-02-clicked-link')

    await page.getByRole('button', { name: 'Bounced', exact: true }).click()
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 1)
    expect(await listed()).toEqual(['cy'])
    expect(await page.getByTestId('recipients').textContent()).toContain('hard')
    // Another filter than clicked drops the link.
    expect(await page.getByLabel('Clicked link').inputValue()).toBe('')

    await page.getByRole('button', { name: 'Unsubscribed', exact: true }).click()
    await page.waitForFunction(() => document.querySelector('[data-testid=recipients] tbody')?.textContent?.includes('di@dest.test') && document.querySelectorAll('[data-testid=recipients] tbody tr').length === 1)
    expect(await listed()).toEqual(['di'])

    await page.getByRole('button', { name: 'Complained', exact: true }).click()
    await page.getByText('No recipient matches').waitFor()
    expect(pageErrors).toEqual([])
  })

  test('the CSV export downloads the filtered list; the top links lead to who clicked them', async () => {
    const { page } = d
    await d.open(`/campaigns/${id}/recipients?filter=clicked`)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 2)
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()])
    const path = await download.path()
    const lines = readFileSync(path, 'utf8').trim().split('\r\n')
    expect(lines[0]).toStartWith('email,status,deliveredAt,openedAt,clickedAt,opens,clicks,links')
    expect(lines.slice(1).map((l) => l.split(',')[0]).sort()).toEqual(['ann@dest.test', 'bob@dest.test'])
    expect(download.suggestedFilename()).toEndWith('-clicked.csv')

    await d.open(`/campaigns/${id}/stats`)
    const row = page.locator('tr', { hasText: 'https://a.test/sale' })
    await row.getByRole('link', { name: 'Who clicked' }).click()
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 1)
    expect(await listed()).toEqual(['ann'])
    expect(await page.getByLabel('Clicked link').inputValue()).toBe('https://a.test/sale')
    // The tiles of the results lead to the same report, filtered.
    await d.open(`/campaigns/${id}/stats`)
    await page.getByTestId('tile-bounced').getByRole('link', { name: 'Bounced' }).click()
    await page.waitForURL(/filter=bounced/)
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 1)
    expect(await listed()).toEqual(['cy'])
  })

  test('on a phone the rows stack and nothing overflows sideways', async () => {
    const { page } = d
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await d.open(`/campaigns/${id}/recipients`)
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=recipients] tbody tr').length === 5)
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
      await shot(page, 'recipients-03-phone')
      await d.a11y('recipients: phone')
    } finally {
      await page.setViewportSize({ width: 1366, height: 768 })
    }
  })
})
