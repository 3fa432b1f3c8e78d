import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startTestDns } from '../helpers/dns'
import { insertTestDomain } from '../helpers/domains'
import { startSink } from '../helpers/smtp'
import { until } from '../helpers/worker'
import { Worker } from '../../src/jobs/queue'
import { campaignJobs } from '../../src/modules/campaigns/jobs'
import { mxTo, pipelineFor } from '../modules/emails/fixture'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * A/B tests and local-time sends in the dashboard (issue 36, items 5 and 6), on a test clock that the
 * server's campaign code and the job worker share: an A/B campaign composed in the page, its test group
 * delivered to an SMTP sink on loopback, opens on variant B, the wait passed, and the winner sent to the
 * rest; and a send at 09:00 in each recipient's zone across Tokyo, Paris and New York, wave by wave.
 */
const available = chromiumAvailable()
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'dest.test')

const unfold = (raw: Buffer) => raw.toString('utf8').replace(/=\r?\n/g, '').replace(/=3D/g, '=')
const subjectOf = (raw: Buffer) => /^Subject: (.*)$/m.exec(raw.toString('utf8'))?.[1]?.trim() ?? ''

describe.skipIf(!available)('A/B and local-time campaigns in Chromium', () => {
  const d = dashboardSuite({ dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
  const pageErrors: string[] = []
  /** Runs the campaign jobs due on the test clock, then delivers what they queued. */
  async function run() {
    const w = new Worker(d.env.deps, campaignJobs)
    await w.ensureRecurring()
    await w.drain()
    await pipelineFor(d.env).drain()
  }
  const received = (prefix: string) => sink.received.filter((m) => m.to.some((to) => to.startsWith(prefix)))

  beforeAll(async () => {
    d.env.clock.set(Date.parse('2030-03-03T12:00:00Z'))
    // The suite signed in on the real time, whose session has expired by the test clock's 2030: again on it.
    const login = await d.page.request.post(`${d.base}/auth/login`, { data: { email: d.owner.email, password: d.owner.password } })
    expect(login.ok()).toBe(true)
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    await insertTestDomain(d.env, d.projectId, 'shop.test', { verified: true })
    for (let i = 0; i < 12; i++) {
      const r = await d.api('POST', '/contacts', { email: `ab${i}@dest.test`, data: { group: 'ab', name: `Reader${i}` } })
      expect(r.status).toBeLessThan(300)
    }
  })

  test('an A/B campaign through to the winner', async () => {
    const { page } = d
    await d.open('/campaigns/new')
    await page.getByRole('heading', { name: 'New campaign' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Spring A/B')
    await page.getByLabel('Subject', { exact: true }).fill('Spring is here, {{name}}')
    await page.getByLabel('Test 2 to 4 subjects on part of the audience, then send the winner to the rest').check()
    expect(await page.getByLabel('Subject A').inputValue()).toBe('Spring is here, {{name}}')
    await page.getByLabel('Subject B').fill('{{name}}, 20% off this spring')
    await page.getByLabel('Test group (% of the audience)').fill('50')
    await page.getByLabel('Wait before choosing (minutes)').fill('5')
    await page.getByRole('button', { name: 'Save draft' }).click()
    // 5 minutes is refused on its field.
    await page.getByText('abTest.waitMinutes must be an integer from 10 to 1440').first().waitFor()
    expect(await page.getByLabel('Wait before choosing (minutes)').getAttribute('aria-invalid')).toBe('true')
    await shot(page, 'campaigns-ab-01-composer-error')
    await page.getByLabel('Wait before choosing (minutes)').fill('60')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('heading', { name: 'Send', exact: true }).waitFor()
    const id = new URL(page.url()).pathname.split('/').pop() ?? ''
    const saved = (await d.api('GET', `/campaigns/${id}`)).body
    expect(saved.abTest).toEqual({ variants: [{ subject: 'Spring is here, {{name}}' }, { subject: '{{name}}, 20% off this spring' }], testPercent: 50, metric: 'opens', waitMinutes: 60 })
    // No local-time send for an A/B test.
    await page.getByText('An A/B test is sent at one time').waitFor()
    await d.a11y('campaigns: A/B draft')

    await page.getByRole('button', { name: 'Send now' }).click()
    await page.getByRole('button', { name: 'Yes, send now' }).click()
    await page.getByRole('heading', { name: 'Sending now' }).waitFor()
    await run()
    // The test group: half of 12, three per variant.
    await until(() => received('ab').length === 6, 60_000, 'the test group in the sink', 50)
    const group = received('ab')
    const bs = group.filter((m) => subjectOf(m.raw).includes('20% off'))
    expect(bs.length).toBe(3)
    await page.getByTestId('ab-phase').filter({ hasText: 'Waiting for results' }).waitFor({ timeout: 30_000 })
    // Two readers of B open it.
    for (const m of bs.slice(0, 2)) {
      const pixel = /https?:\/\/[^"'\s<>]+\/t\/o\/[^"'\s<>]+/.exec(unfold(m.raw))?.[0]
      expect((await fetch(`${d.base}${new URL(pixel ?? '').pathname}`)).status).toBe(200)
    }
    await page.getByTestId('variant-B').filter({ hasText: '66.7%' }).waitFor({ timeout: 30_000 })
    await shot(page, 'campaigns-ab-02-waiting')
    await d.a11y('campaigns: A/B waiting')

    // Before the wait ends nothing more goes; after it, the winner goes to the six others.
    d.env.clock.advance(30 * 60_000)
    await run()
    expect(received('ab').length).toBe(6)
    d.env.clock.advance(31 * 60_000)
    await run()
    await until(() => received('ab').length === 12, 60_000, 'the winner to the rest', 50)
    const all = received('ab')
    expect(new Set(all.map((m) => m.to[0])).size).toBe(12)
    const rest = all.filter((m) => !group.includes(m))
    for (const m of rest) expect(subjectOf(m.raw)).toContain('20% off')
    await page.getByTestId('ab-phase').filter({ hasText: 'Winner chosen' }).waitFor({ timeout: 30_000 })
    await page.getByTestId('variant-B').filter({ hasText: 'Winner' }).waitFor({ timeout: 30_000 })
    expect(await page.getByTestId('ab-phase').textContent()).toContain('Variant B: open rate 66.7%')
    await shot(page, 'campaigns-ab-03-winner')
    await d.a11y('campaigns: A/B winner')
    expect(pageErrors).toEqual([])
  })

  test('a time-zone send across three zones with a test clock', async () => {
    const { page } = d
    d.env.clock.set(Date.parse('2030-03-03T12:00:00Z'))
    const zones: Array<[string, string]> = [['tokyo', 'Asia/Tokyo'], ['paris', 'Europe/Paris'], ['ny', 'America/New_York']]
    for (const [who, zone] of zones) {
      for (let i = 0; i < 2; i++) expect((await d.api('POST', '/contacts', { email: `tz-${who}${i}@dest.test`, data: { group: 'tz', timezone: zone } })).status).toBeLessThan(300)
    }
    // One with a zone that is not one: it gets the fallback (New York as well).
    expect((await d.api('POST', '/contacts', { email: 'tz-nowhere@dest.test', data: { group: 'tz', timezone: 'Atlantis/Capital' } })).status).toBeLessThan(300)
    const created = await d.api('POST', '/campaigns', {
      name: 'Morning news', subject: 'Good morning', body: '<p>Coffee time</p>', from: 'news@shop.test', audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: 'tz' }] }] },
    })
    const id = created.body.data.id as string
    await d.open(`/campaigns/${id}`)
    const form = page.getByRole('form', { name: 'Send in each recipient\'s time zone' })
    await form.getByLabel('Local date').fill('2030-03-04')
    await form.getByLabel('Local time').fill('09:00')
    await form.getByLabel('Zone for contacts without one').selectOption('America/New_York')
    await shot(page, 'campaigns-tz-01-form')
    await d.a11y('campaigns: local-time form')
    // The checks before sending (no preheader) ask first.
    page.once('dialog', (dialog) => { void dialog.accept() })
    await form.getByRole('button', { name: 'Send at local time' }).click()
    await page.getByTestId('local-send').waitFor()
    expect(await page.getByTestId('local-send').textContent()).toContain('09:00 on Mar 4, 2030')
    expect((await d.api('GET', `/campaigns/${id}`)).body).toMatchObject({ status: 'SCHEDULED', scheduledFor: '2030-03-04T00:00:00.000Z', nextWaveAt: '2030-03-04T00:00:00.000Z' })
    await shot(page, 'campaigns-tz-02-scheduled')

    const waves: Array<[string, string[], string]> = [
      ['2030-03-04T00:00:00Z', ['tz-tokyo0', 'tz-tokyo1'], 'SENDING'],
      ['2030-03-04T08:00:00Z', ['tz-paris0', 'tz-paris1'], 'SENDING'],
      ['2030-03-04T14:00:00Z', ['tz-nowhere', 'tz-ny0', 'tz-ny1'], 'SENT'],
    ]
    let seen = 0
    for (const [at, who, status] of waves) {
      // A minute before the wave: nothing.
      d.env.clock.set(Date.parse(at) - 60_000)
      await run()
      expect(received('tz-').length).toBe(seen)
      d.env.clock.set(Date.parse(at))
      await run()
      seen += who.length
      await until(() => received('tz-').length === seen, 60_000, `the wave of ${at}`, 50)
      const names = received('tz-').slice(-who.length).map((m) => m.to[0].split('@')[0]).sort()
      expect(names).toEqual(who)
      expect((await d.api('GET', `/campaigns/${id}`)).body.status).toBe(status)
      if (status === 'SENDING' && at.startsWith('2030-03-04T00')) {
        await page.reload()
        await page.getByTestId('local-send').filter({ hasText: 'next wave' }).waitFor()
        await shot(page, 'campaigns-tz-03-between-waves')
      }
    }
    await page.reload()
    await page.getByText('SENT', { exact: true }).first().waitFor()
    await shot(page, 'campaigns-tz-04-sent')
    expect(pageErrors).toEqual([])
  })
})
