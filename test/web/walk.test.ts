import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import * as domainsRepo from '../../src/modules/domains/repo'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(90_000)

/** The fixes from the marketer's walk (issue 37, item 6), in Chromium. */
describe.skipIf(!chromiumAvailable())('fixes from the walk in Chromium', () => {
  const d = dashboardSuite()

  test('the getting-started checklist has verifying a domain', async () => {
    await d.open('/')
    await d.page.getByText('Verify a sending domain').waitFor()
  })

  test('a network error has a Try again button that asks again', async () => {
    let refuse = true
    await d.page.route('**/domains/project/**', (route) => (refuse ? route.abort('connectionrefused') : route.continue()))
    await d.open('/domains')
    const retry = d.page.getByRole('button', { name: 'Try again' })
    await retry.waitFor({ timeout: 30_000 })
    expect(await d.page.getByRole('alert').textContent()).toContain('did not answer')
    await shot(d.page, 'walk-network-error')
    await d.a11y('network error')
    refuse = false
    await retry.click()
    await d.page.getByText('No domains yet').or(d.page.getByRole('table')).first().waitFor()
    expect(await retry.count()).toBe(0)
    await d.page.unroute('**/domains/project/**')
  })

  test('on a phone the domain records table shows the status; the confirmation moves focus in and back', async () => {
    const added = await d.api('POST', '/domains', { projectId: d.projectId, domain: 'walk-example.com' })
    expect(added.status).toBe(201)
    const now = new Date()
    const checks = { DKIM: { status: 'failed' as const, reason: 'missing: no TXT record', checkedAt: now.toISOString() } }
    await d.env.deps.store.tx((db) => domainsRepo.saveCheck(d.env.deps.store, db, d.projectId, added.body.id, { verified: false, checks, lastCheckedAt: now, verifiedAt: null, updatedAt: now }))
    await d.page.setViewportSize({ width: 390, height: 844 })
    await d.open(`/domains/${added.body.id}`)
    const status = d.page.locator('td[data-label="Status: "]').first()
    await status.waitFor()
    await shot(d.page, 'walk-domain-phone')
    const box = await status.boundingBox()
    expect(box).not.toBeNull()
    expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(390)
    expect(await d.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await d.a11y('domain on a phone')
    await d.page.setViewportSize({ width: 1366, height: 768 })
    const remove = d.page.getByRole('button', { name: 'Remove domain' })
    await remove.click()
    expect(await d.page.evaluate(() => document.activeElement?.textContent)).toContain('Remove walk-example.com?')
    await d.a11y('confirmation open')
    await d.page.keyboard.press('Escape')
    expect(await d.page.evaluate(() => document.activeElement?.textContent)).toBe('Remove domain')
    await remove.click()
    await d.page.getByRole('button', { name: 'Cancel' }).click()
    expect(await d.page.evaluate(() => document.activeElement?.textContent)).toBe('Remove domain')
  })
})
