import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chromiumAvailable } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(60_000)

/**
 * Issue 35, item 9: the dashboard's browser headers, in Chromium. The dashboard works under its policy (it
 * renders, calls the API, shows a template with a sandboxed preview), an injected inline script or
 * handler does not run, and another site cannot frame it.
 */
const available = chromiumAvailable()

describe.skipIf(!available)('the dashboard under its Content-Security-Policy', () => {
  const d = dashboardSuite()

  test('the dashboard works: pages render and call the API, with no CSP violation', async () => {
    const violations: string[] = []
    d.page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()) })
    const created = await d.api('POST', '/contacts', { email: 'csp@example.com', data: { plan: 'pro' } })
    expect(created.status).toBe(201)
    await d.open('/contacts')
    await d.page.getByText('csp@example.com').waitFor()
    await d.open('/templates')
    await d.page.locator('#main').waitFor()
    await d.open('/settings')
    await d.page.locator('#main').waitFor()
    expect(violations).toEqual([])
  })

  test('an injected inline script, event handler or javascript: URL does not run', async () => {
    await d.open('/contacts')
    await d.page.locator('#main').waitFor()
    const ran = await d.page.evaluate(async () => {
      const w = window as unknown as Record<string, unknown>
      const blocked: string[] = []
      document.addEventListener('securitypolicyviolation', (e) => blocked.push(e.violatedDirective))
      const s = document.createElement('script')
      s.textContent = 'window.__inline = 1'
      document.body.append(s)
      const holder = document.createElement('div')
      holder.innerHTML = '<img src="data:," onload="window.__handler = 1" onerror="window.__handler = 1"><a id="js" href="javascript:window.__url=1">x</a>'
      document.body.append(holder)
      ;(document.getElementById('js') as HTMLAnchorElement).click()
      await new Promise((r) => setTimeout(r, 300))
      return { inline: w.__inline ?? null, handler: w.__handler ?? null, url: w.__url ?? null, blocked }
    })
    expect(ran.inline).toBeNull()
    expect(ran.handler).toBeNull()
    expect(ran.url).toBeNull()
    expect(ran.blocked.some((v) => v.startsWith('script-src'))).toBe(true)
  })

  test('another site cannot frame the dashboard', async () => {
    const page = await d.context.newPage()
    try {
      let refused = false
      page.on('console', (m) => { if (/frame-ancestors|X-Frame-Options/i.test(m.text())) refused = true })
      await page.setContent(`<iframe id="f" src="${d.base}/app/p/${d.projectId}/contacts" width="800" height="600"></iframe>`)
      await page.waitForTimeout(1500)
      const frame = page.frames().find((f) => f !== page.mainFrame())
      const inside = frame ? await frame.evaluate(() => document.querySelector('#main') !== null).catch(() => false) : false
      expect(inside).toBe(false)
      expect(refused).toBe(true)
    } finally {
      await page.close()
    }
  })
})
