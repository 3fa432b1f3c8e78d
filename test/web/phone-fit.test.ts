import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { insertTestDomain } from '../helpers/domains'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The editor pages fit a phone (issue 36: the template page was 481 px wide at a 390 px viewport): at 390 px
 * the document is no wider than the viewport on the template editor (Visual, HTML and the desktop/phone
 * preview) and on the campaign composer and a draft's page. On a failure the message names the elements
 * that reach past the right edge.
 */
const available = chromiumAvailable()
const WIDTH = 390

/** The document's width and the innermost elements sticking out left or right (tag.class#id, their edges). */
async function overflow(page: Page): Promise<{ width: number; offenders: string[] }> {
  return page.evaluate((vw) => {
    const out: string[] = []
    for (const el of document.querySelectorAll<HTMLElement>('body *')) {
      const r = el.getBoundingClientRect()
      // Wholly left of the screen is a way of hiding (the skip link until focused), not an overflow.
      const out_ = (b: DOMRect) => b.width > 0 && b.right > 0 && (b.right > vw + 0.5 || b.left < -0.5)
      if (!out_(r)) continue
      // Only the innermost: a parent that sticks out because a child does says nothing more.
      if ([...el.children].some((c) => out_(c.getBoundingClientRect()))) continue
      // Content scrolled inside a box that clips it (a table's wrapper, the canvas) is no page overflow.
      let clipped = false
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const s = getComputedStyle(p)
        if (s.overflowX !== 'visible' && !out_(p.getBoundingClientRect())) { clipped = true; break }
      }
      if (clipped) continue
      out.push(`${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? `.${el.className.trim().split(/\s+/).join('.')}` : ''}${el.id ? `#${el.id}` : ''} → ${Math.round(r.left)}..${Math.round(r.right)}px`)
    }
    return { width: document.documentElement.scrollWidth, offenders: out.slice(0, 8) }
  }, WIDTH)
}

async function expectFits(page: Page, name: string) {
  // Layout settles after the editor's bundle and its fonts arrive.
  await page.waitForTimeout(300)
  const o = await overflow(page)
  await shot(page, `phone-fit-${name}`)
  expect({ page: name, ...o }).toEqual({ page: name, width: WIDTH, offenders: [] })
}

describe.skipIf(!available)('editor pages on a 390 px phone', () => {
  const d = dashboardSuite()
  const pageErrors: string[] = []
  let templateId = ''
  let campaignId = ''

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    d.page.on('dialog', (dialog) => { dialog.accept() })
    await insertTestDomain(d.env, d.projectId, 'brand.test', { verified: true })
    const tpl = await d.api('POST', '/templates', { name: 'Monthly newsletter', subject: 'News', from: 'hello@brand.test', body: '<p>Hello {{name}}</p>' })
    expect(tpl.status).toBe(201)
    templateId = tpl.body.data?.id ?? tpl.body.id
    const c = await d.api('POST', '/campaigns', { name: 'Autumn news', subject: 'News', body: '<p>Hello</p>', from: 'hello@brand.test', audienceType: 'ALL' })
    expect(c.status).toBe(200)
    campaignId = c.body.data.id
    await d.page.setViewportSize({ width: WIDTH, height: 844 })
  })

  test('the template editor: a starter design in Visual mode, its phone preview, and HTML mode', async () => {
    const { page } = d
    await d.open(`/templates/${templateId}?start=newsletter`)
    await page.getByRole('button', { name: 'Visual', exact: true }).waitFor()
    await page.locator('.mc-block').first().waitFor()
    await expectFits(page, 'template-visual')
    await page.getByRole('button', { name: 'Preview', exact: true }).click()
    await page.locator('iframe[title="Preview of the email"]').waitFor()
    await expectFits(page, 'template-preview')
    await page.getByRole('button', { name: 'Phone', exact: true }).click()
    await expectFits(page, 'template-preview-phone')
    await page.getByRole('button', { name: 'Edit', exact: true }).click()
    await page.locator('.mc-block').first().click()
    await expectFits(page, 'template-block-selected')
    await page.getByRole('button', { name: 'Insert variable' }).first().click()
    await page.getByLabel('Variable', { exact: true }).waitFor()
    await expectFits(page, 'template-variable-picker')
    await page.getByRole('button', { name: 'Insert variable' }).first().click()
    // The contact search of "Preview as a contact" is one line high (it was a 190 px tall box).
    const box = await page.getByLabel('Find a contact by email').boundingBox()
    expect(box?.height ?? 0).toBeLessThan(60)
    await page.getByRole('button', { name: 'HTML', exact: true }).click()
    await page.locator('textarea').first().waitFor()
    await expectFits(page, 'template-html')
    expect(pageErrors).toEqual([])
  })

  test('the template list with its new-template form', async () => {
    await d.open('/templates')
    await d.page.getByRole('link', { name: 'Monthly newsletter' }).waitFor()
    await expectFits(d.page, 'templates-list')
  })

  test('the campaign composer and a draft campaign', async () => {
    const { page } = d
    await d.open('/campaigns/new')
    await page.getByRole('heading', { name: 'New campaign' }).waitFor()
    await page.getByRole('button', { name: 'Visual', exact: true }).waitFor()
    await expectFits(page, 'campaign-new')
    await d.open(`/campaigns/${campaignId}`)
    await page.getByRole('heading', { name: 'Send', exact: true }).waitFor()
    await page.getByRole('button', { name: 'HTML', exact: true }).waitFor()
    await expectFits(page, 'campaign-draft')
    expect(pageErrors).toEqual([])
  })
})
