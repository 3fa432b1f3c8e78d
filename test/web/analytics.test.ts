import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { rollup } from '../../src/modules/analytics/service'
import { acceptInvitation, invite } from '../../src/modules/members/service'
import { createMyProject } from '../../src/modules/projects/service'
import * as securityRepo from '../../src/modules/security/repo'
import { createUser } from '../../src/modules/users/service'
import type { TestEnv } from '../helpers/env'
import { queueTestEmail } from '../modules/tracking/fixture'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(90_000)

/**
 * Analytics, security, usage and the overview's figures in Chromium (issue 16, parts 3 and 4). The mail is
 * queued through the sending pipeline's own verb (queueEmails, as the analytics module's tests do), its
 * events written at chosen times of the last 30 days, tracked events go through POST /v1/track, and the
 * `analytics.rollup` job's verb runs before the pages are read, so the charts read the rolled-up hours.
 */
const available = chromiumAvailable()
const H = 3_600_000

describe.skipIf(!available)('analytics, security and usage in Chromium', () => {
  // A bounce rate of 1 in 14 (7.1%) is a warning (5%) and under the suspension threshold (10%) once 10 are sent.
  const d = dashboardSuite({ securityThresholds: { bounceWarning: 0.05, bounceSuspend: 0.1, complaintWarning: 0.001, complaintSuspend: 0.003, minimumSent: 10 } })
  const member = { email: 'member@example.com', password: 'member password 1' }
  let quietId = ''
  let now = 0

  async function campaign(env: TestEnv, projectId: string, name: string, status = 'SENT', scheduledFor: Date | null = null): Promise<string> {
    const id = Bun.randomUUIDv7()
    const at = new Date()
    await env.store.tx((db) => db.insert(env.store.t.campaigns).values({
      id, projectId, name, subject: 'S', body: '<p>b</p>', fromEmail: 'hello@acme.test', type: 'MARKETING', audienceType: 'ALL',
      status, scheduledFor, totalRecipients: 0, sentCount: 0, skippedUnsubscribed: 0, skippedSuppressed: 0, createdAt: at, updatedAt: at,
    }))
    return id
  }

  /** One email sent `hoursAgo` (10 minutes before that hour mark), delivered unless it bounced, with its opens, clicks, bounce or complaint. */
  async function mail(env: TestEnv, projectId: string, hoursAgo: number, o: { campaignId?: string; open?: boolean; click?: boolean; bounce?: boolean; complaint?: boolean } = {}) {
    const e = await queueTestEmail(env, projectId, { campaignId: o.campaignId ?? null })
    const t0 = now - hoursAgo * H - 10 * 60_000
    const ev = (name: string, minutes: number, data: Record<string, unknown> = {}) => ({
      id: Bun.randomUUIDv7(), projectId, contactId: e.contactId, name, data, emailId: e.id, createdAt: new Date(t0 + minutes * 60_000),
    })
    const list = [ev('email.sent', 0)]
    if (o.bounce) list.push(ev('email.bounce', 2, { bounceType: 'hard' }))
    else list.push(ev('email.delivery', 1))
    if (o.open) list.push(ev('email.open', 3, { isFirstOpen: true }))
    if (o.click) list.push(ev('email.click', 4, { isFirstClick: true, link: 'https://example.com/a' }))
    if (o.complaint) list.push(ev('email.complaint', 5))
    await env.store.tx((db) => db.insert(env.store.t.events).values(list))
  }

  beforeAll(async () => {
    const env = d.env
    now = Date.now()
    const spring = await campaign(env, d.projectId, 'Spring sale')
    const autumn = await campaign(env, d.projectId, 'Autumn news')
    await campaign(env, d.projectId, 'Winter launch', 'SCHEDULED', new Date(now + 2 * 24 * H))
    // The last 24 hours: 4 sent and delivered, 2 opened, 1 clicked.
    await mail(env, d.projectId, 1, { campaignId: spring, open: true, click: true })
    await mail(env, d.projectId, 3, { campaignId: spring, open: true })
    await mail(env, d.projectId, 5)
    await mail(env, d.projectId, 20)
    // The days before (within 5 days): 10 more sent, one of them bounced.
    for (const [h, o] of [[30, { campaignId: autumn, open: true }], [40, { campaignId: autumn }], [50, { bounce: true }], [60, { open: true }], [72, {}],
      [80, { open: true, click: true }], [90, {}], [100, {}], [110, { campaignId: spring }], [118, {}]] as const) {
      await mail(env, d.projectId, h, o)
    }
    // Ten days ago, out of the 7-day windows: one complaint.
    await mail(env, d.projectId, 240, { complaint: true })
    for (const event of ['signup', 'signup', 'signup', 'purchase']) {
      const r = await fetch(`${d.base}/v1/track`, {
        method: 'POST', headers: { authorization: `Bearer ${d.secretKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: `t.${Math.random().toString(36).slice(2, 8)}@dest.test`, event }),
      })
      expect(r.status).toBeLessThan(300)
    }
    const added = await d.api('POST', '/domains', { projectId: d.projectId, domain: 'news.acme.test' })
    expect(added.status).toBe(201)
    // The rollup job counts the hours that ended; the last one is read from the events.
    const r = await rollup(env.deps, new Date())
    expect(r.rows).toBeGreaterThan(0)

    quietId = (await createMyProject(env.deps, d.owner.id, { name: 'Quiet' })).id
    const m = await createUser(env.deps, member, { verified: true })
    // Membership needs the invitee's consent: the member accepts the invitation.
    const invitation = await invite(env.deps, d.owner.id, d.projectId, { email: m.email, role: 'MEMBER' })
    await acceptInvitation(env.deps, m.id, invitation.id)
  }, 120_000)

  /** The figure of one tile (Sent, Delivered...) under `scope`. */
  const tile = (scope: string, name: string) => d.page.locator(`${scope} .tiles > div`).filter({ has: d.page.locator('dt', { hasText: new RegExp(`^${name}$`) }) }).locator('dd .n')
  /** Waits until the tile shows `value` (the page refetches after a range change). */
  const tileShows = (scope: string, name: string, value: string) => d.page.waitForFunction(([sc, n, v]) => [...document.querySelectorAll(`${sc} .tiles > div`)]
    .some((t) => t.querySelector('dt')?.textContent === n && t.querySelector('dd .n')?.textContent === v), [scope, name, value])

  test('analytics: the charts draw the seeded mail by day and by hour, with the figures as a table and the top lists', async () => {
    const page = d.page
    await d.open('/analytics')
    await page.getByRole('heading', { name: 'Sent and delivered per day' }).waitFor()
    expect(await page.getByText(/Times in your time zone, /).textContent()).toContain(await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone))
    // Last 7 days (the default): 14 sent, 13 delivered, 1 bounced; the complaint of 10 days ago is not in it.
    expect(await tile('main', 'Sent').textContent()).toBe('14')
    expect(await tile('main', 'Delivered').textContent()).toBe('13')
    expect(await tile('main', 'Bounced').textContent()).toBe('1')
    expect(await tile('main', 'Complained').textContent()).toBe('0')
    // Three charts, each a canvas with its lines drawn in the series' colour (the sent line: #2952cc).
    await page.locator('.chart canvas').nth(2).waitFor()
    const drawn = await page.evaluate(() => {
      const c = document.querySelector('.chart canvas') as HTMLCanvasElement
      const px = c.getContext('2d')?.getImageData(0, 0, c.width, c.height).data ?? new Uint8ClampedArray()
      let n = 0
      for (let i = 0; i < px.length; i += 4) if (Math.abs(px[i] - 41) < 12 && Math.abs(px[i + 1] - 82) < 12 && Math.abs(px[i + 2] - 204) < 12 && px[i + 3] > 200) n++
      return n
    })
    expect(drawn).toBeGreaterThan(20)
    expect(await page.getByRole('img', { name: /Sent and delivered per day/ }).count()).toBe(1)
    // The table for screen readers: one row per day and a total.
    await page.getByText('The figures per day, as a table').click()
    const rows = page.locator('details.figures tbody tr')
    expect(await rows.count()).toBe(7)
    expect(await page.locator('details.figures tfoot td').first().textContent()).toBe('14')
    // Top campaigns over the range, by sent then by opens; top events from POST /v1/track.
    const top = page.getByRole('region', { name: 'Top campaigns' })
    await top.getByRole('cell', { name: 'Spring sale' }).first().waitFor()
    expect(await top.locator('tbody tr').allTextContents()).toEqual(['Spring sale · sent3', 'Autumn news · sent2'])
    await page.getByLabel('Ranked by').selectOption('opened')
    await top.getByRole('columnheader', { name: 'Opens' }).waitFor()
    // The previous ranking stays on screen until the new one arrives.
    await page.waitForFunction(() => document.querySelector('[aria-labelledby="an-top-campaigns"] tbody tr td:last-child')?.textContent === '2')
    expect(await top.locator('tbody tr').allTextContents()).toEqual(['Spring sale · sent2', 'Autumn news · sent1'])
    const events = page.getByRole('region', { name: 'Top events' })
    await events.getByRole('cell', { name: 'signup' }).waitFor()
    expect(await events.locator('tbody tr').first().textContent()).toBe('signup3')
    await shot(page, 'analytics-01-week-by-day')
    await d.a11y('analytics by day')

    // Last 24 hours by hour: 4 sent.
    await page.getByLabel('Range').selectOption('24h')
    await page.getByRole('heading', { name: 'Sent and delivered per hour' }).waitFor()
    await tileShows('main', 'Sent', '4')
    expect(await tile('main', 'Opened').textContent()).toBe('2')
    expect(await tile('main', 'Clicked').textContent()).toBe('1')
    await shot(page, 'analytics-02-day-by-hour')
    await d.a11y('analytics by hour')

    // Last 30 days: the complaint is in.
    await page.getByLabel('Range').selectOption('30d')
    await tileShows('main', 'Sent', '15')
    expect(await tile('main', 'Complained').textContent()).toBe('1')

    // A custom range with the days the wrong way round is refused on the form; a right one is shown.
    await page.getByLabel('Range').selectOption('custom')
    await page.getByLabel('First day').fill('2026-02-10')
    await page.getByLabel('Last day').fill('2026-02-01')
    await page.getByRole('button', { name: 'Show' }).click()
    await page.getByRole('alert').filter({ hasText: 'must not be before' }).waitFor()
    expect(await page.getByLabel('First day').getAttribute('aria-invalid')).toBe('true')
    await page.getByLabel('Last day').fill('2026-02-20')
    await page.getByRole('button', { name: 'Show' }).click()
    await page.getByText('No mail in this range').waitFor()
    expect(await page.locator('details.figures').count()).toBe(0)
    await shot(page, 'analytics-03-custom-empty')
    await d.a11y('analytics custom range')
  })

  test('analytics: the browser\'s time zone goes to the API, and the days are that zone\'s days', async () => {
    const page = d.page
    const cdp = await d.context.newCDPSession(page)
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Tokyo' })
    const asked: string[] = []
    const seen = (r: { url(): string }) => { if (r.url().includes('/analytics/timeseries')) asked.push(r.url()) }
    page.on('request', seen)
    try {
      await d.open('/analytics')
      await page.getByText('Times in your time zone, Asia/Tokyo.').waitFor()
      await page.getByRole('heading', { name: 'Sent and delivered per day' }).waitFor()
      expect(asked.some((u) => new URL(u).searchParams.get('timezone') === 'Asia/Tokyo')).toBe(true)
      // The first day of "Last 7 days" is the local midnight of 6 days ago in Tokyo, and its label is that date.
      await page.getByText('The figures per day, as a table').click()
      const first = await page.locator('details.figures tbody tr th').first().textContent()
      const tokyoDay = new Intl.DateTimeFormat('sv-SE', { timeZone: 'Asia/Tokyo', year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(Date.now() - 6 * 24 * H))
      expect(first).toBe(tokyoDay)
      expect(await tile('main', 'Sent').textContent()).toBe('14')
    } finally {
      page.off('request', seen)
      await cdp.send('Emulation.setTimezoneOverride', { timezoneId: '' })
      await cdp.detach()
    }
  })

  test('analytics: a project without mail shows the empty state, not blank charts', async () => {
    const page = d.page
    await page.goto(`${d.base}/app/p/${quietId}/analytics`)
    await page.getByText('No mail in this range').waitFor()
    expect(await page.locator('.chart canvas').count()).toBe(0)
    await page.getByText('No campaign in this range').waitFor()
    await page.getByText('No events in this range').waitFor()
    await page.setViewportSize({ width: 390, height: 844 })
    await shot(page, 'analytics-04-empty-phone')
    await d.a11y('analytics empty')
    await page.setViewportSize({ width: 1366, height: 768 })
  })

  test('security: the warning state with the rates against the thresholds; a suspension shown, then lifted by the owner', async () => {
    const page = d.page
    await d.open('/security')
    await page.getByRole('heading', { name: 'Security' }).waitFor()
    await page.locator('.badge.warning').filter({ hasText: 'Warning' }).waitFor()
    expect(await page.getByTestId('bounce-rate').textContent()).toBe('7.1%')
    expect(await page.getByTestId('complaint-rate').textContent()).toBe('0%')
    expect(await page.getByRole('status').filter({ hasText: 'close to being suspended' }).textContent()).toContain('bounce rate 7.1% (warning at 5.0%, suspension at 10.0%)')
    expect(await page.getByRole('meter', { name: 'Bounce rate' }).getAttribute('aria-valuetext')).toBe('7.1% (1 of 14 sent); warning at 5.0%, suspension at 10.0%')
    expect(await page.locator('.meter-mark').count()).toBe(4)
    await page.getByText('Never suspended').waitFor()
    await shot(page, 'analytics-05-security-warning')
    await d.a11y('security warning')

    // The quiet project: a suspension lifted 2 days ago, and one open now.
    await d.env.store.tx((db) => securityRepo.suspend(d.env.store, db, quietId, 'bounce rate 12.0% over 7 days (12 of 100 sent) reached the suspension threshold of 10.0%', new Date(now - 72 * H)))
    await d.env.store.tx((db) => securityRepo.lift(d.env.store, db, quietId, 'cli', new Date(now - 48 * H)))
    await d.env.store.tx((db) => securityRepo.suspend(d.env.store, db, quietId, 'complaint rate 0.5% over 7 days (1 of 200 sent) reached the suspension threshold of 0.3%', new Date(now - H)))
    await page.goto(`${d.base}/app/p/${quietId}/security`)
    await page.locator('.badge.suspended').filter({ hasText: 'Suspended' }).first().waitFor()
    const history = page.locator('tbody tr')
    expect(await history.count()).toBe(2)
    expect(await history.first().textContent()).toContain('Still suspended')
    expect(await history.nth(1).textContent()).toContain('bounce rate 12.0%')
    await shot(page, 'analytics-06-security-suspended')
    await d.a11y('security suspended')
    await page.getByRole('button', { name: 'Lift the suspension' }).click()
    await page.getByRole('button', { name: 'Yes, lift the suspension' }).click()
    await page.locator('.badge.ok').filter({ hasText: 'Good standing' }).waitFor()
    expect(await page.locator('tbody tr').first().textContent()).not.toContain('Still suspended')
  })

  test('usage: consumption against the caps; an owner edits them (a bad value is shown on its field); a MEMBER only reads', async () => {
    const page = d.page
    await d.open('/usage')
    await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor()
    expect(await page.getByTestId('used-transactional').textContent()).toBe('15')
    expect(await page.getByTestId('cap-transactional').textContent()).toBe('No cap')
    await page.getByLabel('Transactional cap').fill('-5')
    await page.getByRole('button', { name: 'Save caps' }).click()
    await page.getByRole('alert').waitFor()
    expect(await page.getByLabel('Transactional cap').getAttribute('aria-invalid')).toBe('true')
    await page.getByText('transactional: expected a whole number of emails, 0 or more, or null for no cap').waitFor()
    await shot(page, 'analytics-07-usage-error')
    await d.a11y('usage error')
    await page.getByLabel('Transactional cap').fill('20')
    await page.getByLabel('Campaigns cap').fill('0')
    await page.getByRole('button', { name: 'Save caps' }).click()
    await page.getByText('Caps saved.').waitFor()
    await page.getByTestId('cap-transactional').filter({ hasText: '20' }).waitFor()
    expect(await page.getByRole('meter', { name: 'Transactional usage' }).getAttribute('aria-valuetext')).toBe('15 of 20 emails')
    expect(await page.getByText('75% · 5 left').count()).toBe(1)
    expect((await d.api('GET', `/users/@me/projects/${d.projectId}/billing-limits`)).body).toEqual({ transactional: 20, campaigns: 0, workflows: null, inbound: null })
    await shot(page, 'analytics-08-usage-owner')
    await d.a11y('usage owner')

    // The member: the same figures, no form, and the API refuses the change.
    const res = await page.request.post(`${d.base}/auth/login`, { data: member })
    expect(res.ok()).toBe(true)
    try {
      await d.open('/usage')
      await page.getByText('can see the caps but not change them').waitFor()
      expect(await page.getByTestId('cap-transactional').textContent()).toBe('20')
      expect(await page.getByRole('button', { name: 'Save caps' }).count()).toBe(0)
      expect((await d.api('PUT', `/users/@me/projects/${d.projectId}/billing-limits`, { transactional: null })).status).toBe(403)
      await shot(page, 'analytics-09-usage-member')
      await d.a11y('usage member')
    } finally {
      const back = await page.request.post(`${d.base}/auth/login`, { data: { email: d.owner.email, password: d.owner.password } })
      expect(back.ok()).toBe(true)
    }
  })

  test('overview: the last 24 hours and 30 days, an alert for the unverified domain and the warning, what is scheduled, recent activity', async () => {
    const page = d.page
    await d.open('/')
    await page.getByRole('heading', { name: 'Getting started' }).waitFor()
    await page.getByRole('heading', { name: 'Last 24 hours' }).waitFor()
    await tileShows('[data-testid="last-24h"]', 'Sent', '4')
    await tileShows('[data-testid="last-30d"]', 'Sent', '15')
    expect(await tile('[data-testid="last-24h"]', 'Opened').textContent()).toBe('2')
    expect(await tile('[data-testid="last-30d"]', 'Complained').textContent()).toBe('1')
    const alerts = page.locator('.alerts')
    await alerts.getByText('news.acme.test').waitFor()
    expect(await alerts.textContent()).toContain('Domain news.acme.test is not verified yet')
    expect(await alerts.textContent()).toContain('Deliverability warning: bounce rate 7.1%')
    await alerts.getByRole('link', { name: 'Check its DNS records' }).waitFor()
    const scheduled = page.getByRole('region', { name: 'Scheduled' })
    await scheduled.getByText('Winter launch').waitFor()
    const recent = page.getByRole('region', { name: 'Recent activity' })
    await recent.locator('li').first().waitFor()
    expect(await recent.locator('li').count()).toBe(8)
    await page.locator('.chart canvas').first().waitFor()
    await shot(page, 'analytics-10-overview')
    await d.a11y('overview')
    await page.setViewportSize({ width: 390, height: 844 })
    await shot(page, 'analytics-11-overview-phone')
    await page.setViewportSize({ width: 1366, height: 768 })
    // The links of the navigation reach the new pages.
    await page.getByRole('link', { name: 'Analytics', exact: true }).click()
    await page.getByRole('heading', { name: 'Analytics' }).waitFor()
  })
})
