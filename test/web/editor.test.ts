import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startTestDns } from '../helpers/dns'
import { insertTestDomain } from '../helpers/domains'
import { solidPng } from '../helpers/png'
import { startSink } from '../helpers/smtp'
import { until } from '../helpers/worker'
import { Worker } from '../../src/jobs/queue'
import { campaignSendJob } from '../../src/modules/campaigns/jobs'
import { mxTo, pipelineFor } from '../modules/emails/fixture'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The email editor in Chromium (issue 36): build an email from blocks (a heading, a text with a merge tag
 * and its fallback, a button, an uploaded image), save it, reopen it, send it as a campaign to an SMTP
 * sink on loopback and read the HTML that arrived; the HTML and Markdown modes; a starter design; a
 * template chosen over written content asks first. Screenshots of each state.
 */
const available = chromiumAvailable()
const dns = await startTestDns()
const sink = await startSink()
mxTo(dns, 'inbox.test')

/** A sunk message's body with quoted-printable soft breaks and `=3D` undone. */
const unfold = (raw: Buffer) => raw.toString('utf8').replace(/=\r?\n/g, '').replace(/=3D/g, '=')
/** A logo-sized image: visible in the screenshots, so a broken one shows. */
const PNG = solidPng(240, 60, [37, 99, 235])

describe.skipIf(!available)('email editor in Chromium', () => {
  const d = dashboardSuite({ dnsServers: [dns.server], mxPort: sink.port, outbound: 'direct' })
  const pageErrors: string[] = []
  let templateId = ''

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    d.page.on('dialog', (dialog) => { dialog.accept() })
    await insertTestDomain(d.env, d.projectId, 'brand.test', { verified: true })
    for (const c of [{ email: 'ann@inbox.test', data: { firstName: 'Ann' } }, { email: 'bob@inbox.test', data: {} }]) {
      expect((await d.api('POST', '/contacts', { email: c.email, subscribed: true, data: c.data })).status).toBeLessThan(300)
    }
  })

  test('build an email from blocks: heading, text with a merge tag and fallback, button, uploaded image; save', async () => {
    const { page } = d
    await d.open('/templates')
    await page.getByLabel('Name', { exact: true }).fill('Welcome email')
    await page.getByLabel('Subject', { exact: true }).fill('Welcome, {{ firstName | default: "friend" }}')
    await page.getByLabel('From', { exact: true }).fill('hello@brand.test')
    await page.getByLabel('Start from').selectOption('blank')
    await page.getByRole('button', { name: 'Create' }).click()
    // The editor's own bundle loads on this page only.
    await page.getByRole('button', { name: 'Visual', exact: true }).waitFor()
    expect(await page.getByRole('button', { name: 'Visual', exact: true }).getAttribute('aria-pressed')).toBe('true')

    const heading = page.getByRole('textbox', { name: 'Heading text' })
    await heading.click()
    await page.keyboard.press('Control+A')
    await page.keyboard.type('Welcome aboard')

    const text = page.getByRole('textbox', { name: 'Text', exact: true })
    await text.click()
    await page.keyboard.press('Control+A')
    await page.keyboard.type('Thanks for joining, ')
    await page.getByRole('button', { name: 'Insert variable' }).click()
    await page.getByLabel('Variable', { exact: true }).selectOption('firstName')
    await page.getByLabel('Fallback when the contact has no value').fill('there')
    await shot(page, 'editor-01-variable-picker')
    await page.getByRole('button', { name: 'Insert', exact: true }).click()
    await text.filter({ hasText: 'Thanks for joining, {{ firstName | default: "there" }}' }).waitFor()
    await text.click()
    await page.keyboard.press('End')
    await page.keyboard.type('!')

    await page.getByRole('button', { name: '+ Button' }).click()
    await page.getByLabel('Button label').fill('Open the app')
    await page.getByLabel('Button link').fill('https://example.com/app')
    await page.getByRole('button', { name: '+ Image' }).click()
    await page.getByLabel('Upload an image').setInputFiles({ name: 'brand-logo.png', mimeType: 'image/png', buffer: PNG })
    await page.locator('.mc-block[data-block="image"] img').waitFor()
    // The uploaded image loads in the editor (it showed as broken, alt text only, before).
    await page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>('.mc-block[data-block="image"] img')
      return Boolean(img?.complete)
    })
    const img = page.locator('.mc-block[data-block="image"] img')
    expect(await img.evaluate((el: HTMLImageElement) => el.naturalWidth)).toBe(240)
    expect(await img.getAttribute('src')).toStartWith(`${d.base}/uploads/`)
    // An address that does not load says so, with the setting that builds upload addresses.
    const uploaded = await page.getByLabel('Image address').inputValue()
    await page.getByLabel('Image address').fill('http://127.0.0.1:9/missing.png')
    await page.getByRole('alert').filter({ hasText: 'This image does not load from http://127.0.0.1:9/missing.png' }).waitFor()
    expect(await page.getByRole('alert').filter({ hasText: 'MAILCTL_PUBLIC_URL' }).count()).toBe(1)
    await page.getByLabel('Image address').fill(uploaded)
    await page.waitForFunction(() => (document.querySelector<HTMLImageElement>('.mc-block[data-block="image"] img')?.naturalWidth ?? 0) > 0)
    expect(await page.getByRole('alert').filter({ hasText: 'does not load' }).count()).toBe(0)
    await page.getByLabel('Alt text').fill('The Brand logo')
    await shot(page, 'editor-02-blocks')
    await d.a11y('editor: visual')

    await page.getByRole('button', { name: 'Preview', exact: true }).click()
    await page.waitForFunction(() => document.querySelector('iframe[title="Preview of the email"]')?.getAttribute('srcdoc')?.includes('Thanks for joining, Ada!') ?? false)
    await page.getByRole('button', { name: 'Phone', exact: true }).click()
    await shot(page, 'editor-03-preview-phone')
    await page.getByLabel('Contact without data').check()
    await page.waitForFunction(() => document.querySelector('iframe[title="Preview of the email"]')?.getAttribute('srcdoc')?.includes('Thanks for joining, there!') ?? false)
    await page.getByRole('button', { name: 'Edit', exact: true }).click()

    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    templateId = new URL(page.url()).pathname.split('/').pop() ?? ''
    const saved = (await d.api('GET', `/templates/${templateId}`)).body
    expect(saved.design.mode).toBe('visual')
    expect(saved.design.blocks.map((b: { type: string }) => b.type)).toEqual(['heading', 'text', 'button', 'image', 'footer'])
    expect(saved.body).toContain('Thanks for joining, {{ firstName | default: "there" }}!')
    expect(saved.body).toContain('<table role="presentation" class="mc-container" width="600"')
    expect(pageErrors).toEqual([])
  })

  test('reopening the template re-opens the blocks', async () => {
    const { page } = d
    await d.open(`/templates/${templateId}`)
    await page.getByRole('textbox', { name: 'Heading text' }).filter({ hasText: 'Welcome aboard' }).waitFor()
    await page.getByRole('textbox', { name: 'Text', exact: true }).filter({ hasText: 'Thanks for joining, {{ firstName | default: "there" }}!' }).waitFor()
    expect(await page.locator('.mc-paper > .mc-block').evaluateAll((els) => els.map((e) => e.getAttribute('data-block')))).toEqual(['heading', 'text', 'button', 'image', 'footer'])
    expect(await page.locator('.mc-block[data-block="image"] img').getAttribute('alt')).toBe('The Brand logo')
    await shot(page, 'editor-04-reopened')
  })

  test('a campaign from the template goes to the sink: table layout, inline styles, the merge tag and its fallback', async () => {
    const { page } = d
    await d.open('/campaigns/new')
    await page.getByRole('button', { name: 'Visual', exact: true }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Welcome wave')
    // Nothing written yet: choosing the template does not ask.
    let asked = 0
    const count = () => { asked++ }
    page.on('dialog', count)
    await page.getByLabel('Start from a template').selectOption({ label: 'Welcome email' })
    await page.getByRole('textbox', { name: 'Heading text' }).filter({ hasText: 'Welcome aboard' }).waitFor()
    expect(asked).toBe(0)
    expect(await page.getByLabel('Subject', { exact: true }).inputValue()).toBe('Welcome, {{ firstName | default: "friend" }}')
    // Now something is written: choosing it again asks first.
    await page.getByRole('textbox', { name: 'Heading text' }).click()
    await page.keyboard.type(' again')
    await page.getByLabel('Start from a template').selectOption({ label: 'Welcome email' })
    expect(asked).toBe(1)
    page.off('dialog', count)
    await page.getByRole('textbox', { name: 'Heading text' }).filter({ hasText: /^Welcome aboard$/ }).waitFor()
    await shot(page, 'editor-05-campaign-composer')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('heading', { name: 'Send', exact: true }).waitFor()
    const id = new URL(page.url()).pathname.split('/').pop() ?? ''
    expect((await d.api('GET', `/campaigns/${id}`)).body.design.blocks).toHaveLength(5)

    await page.getByRole('button', { name: 'Send now' }).click()
    await page.getByRole('button', { name: 'Yes, send now' }).click()
    await page.getByRole('heading', { name: 'Sending now' }).waitFor()
    await new Worker(d.env.deps, [campaignSendJob({ batchSize: 10 })]).drain()
    await pipelineFor(d.env).drain()
    const to = (addr: string) => sink.received.find((m) => m.to.includes(addr))
    await until(() => Boolean(to('ann@inbox.test') && to('bob@inbox.test')), 60_000, 'both campaign messages in the sink', 50)
    const ann = unfold(to('ann@inbox.test')?.raw ?? Buffer.alloc(0))
    const bob = unfold(to('bob@inbox.test')?.raw ?? Buffer.alloc(0))
    expect(ann).toContain('Subject: Welcome, Ann')
    expect(bob).toContain('Subject: Welcome, friend')
    expect(ann).toContain('Thanks for joining, Ann!')
    expect(bob).toContain('Thanks for joining, there!')
    for (const html of [ann, bob]) {
      expect(html).not.toContain('default:')
      expect(html).toMatch(/<table role="presentation" class="mc-container" width="600" [^>]*style="width:600px;max-width:600px/)
      expect(html).toMatch(/<h1 style="margin:0;font-family:[^"]*font-size:28px[^"]*">Welcome aboard<\/h1>/)
      expect(html).toMatch(/<td align="center" bgcolor="#2563eb" style="border-radius:6px;background-color:#2563eb"><a href="[^"]+" target="_blank" style="display:block;padding:12px 24px;[^"]*">Open the app<\/a>/)
      expect(html).toMatch(/<img src="http:\/\/[^"]+\/uploads\/[^"]+" alt="The Brand logo" width="\d+" style="display:block;/)
      expect(html).not.toContain('class="mc-editable"')
      // The button's fill is the button's, not its row's.
      expect(html).not.toMatch(/<td align="center" style="background-color:#2563eb/)
    }
  })

  test('HTML and Markdown modes; a starter design', async () => {
    const { page } = d
    await d.open(`/templates/${templateId}`)
    await page.getByRole('button', { name: 'Markdown', exact: true }).click()
    const md = page.getByLabel('Markdown', { exact: true })
    await md.fill('# News for {{ firstName | default: "you" }}\n\n**Big** things. [Read]({{ url | default: "https://example.com" }})')
    await page.waitForFunction(() => document.querySelector('iframe[title="Preview of the email"]')?.getAttribute('srcdoc')?.includes('News for Ada') ?? false)
    await shot(page, 'editor-06-markdown')
    await d.a11y('editor: markdown')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const md1 = (await d.api('GET', `/templates/${templateId}`)).body
    expect(md1.design.mode).toBe('markdown')
    expect(md1.body).toContain('News for {{ firstName | default: "you" }}</h1>')
    expect(md1.body).toContain('<strong>Big</strong>')
    expect(md1.body).toContain('href="{{ url | default: \'https://example.com\' }}"')

    await page.getByRole('button', { name: 'HTML', exact: true }).click()
    const source = page.getByLabel('HTML source')
    expect(await source.inputValue()).toContain('<table role="presentation"')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    expect((await d.api('GET', `/templates/${templateId}`)).body.design).toBeNull()
    await shot(page, 'editor-07-html')

    await page.getByRole('button', { name: 'Visual', exact: true }).click()
    await page.getByLabel('Start from a design').selectOption('newsletter')
    await page.getByRole('textbox', { name: 'Heading text' }).filter({ hasText: 'The monthly digest' }).waitFor()
    await shot(page, 'editor-08-starter-newsletter')
    // Reorder: drag the social links onto the first block, then the Up/Down buttons (the keyboard's way).
    const top = () => page.locator('.mc-paper > .mc-block').evaluateAll((els) => els.map((e) => e.getAttribute('data-block')))
    expect((await top()).slice(0, 2)).toEqual(['heading', 'image'])
    // The drag events themselves (a synthetic mouse drag across the scrolling canvas is not reliable headless).
    const dt = await page.evaluateHandle(() => new DataTransfer())
    await page.locator('.mc-paper > .mc-block[data-block="social"]').dispatchEvent('dragstart', { dataTransfer: dt })
    const target = page.locator('.mc-paper > .mc-block[data-block="heading"]').first()
    await target.dispatchEvent('dragover', { dataTransfer: dt })
    await target.dispatchEvent('drop', { dataTransfer: dt })
    await page.waitForFunction(() => document.querySelector('.mc-paper > .mc-block')?.getAttribute('data-block') === 'social')
    await page.getByRole('button', { name: 'Move Social links down' }).click()
    expect((await top()).slice(0, 3)).toEqual(['heading', 'social', 'image'])
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const types = (await d.api('GET', `/templates/${templateId}`)).body.design.blocks.map((b: { type: string }) => b.type)
    expect(types.slice(0, 3)).toEqual(['heading', 'social', 'image'])
    expect(types).toContain('columns')
    expect(pageErrors).toEqual([])
  })
  test('campaign traps (item 8): an error clears once its field is fixed; Unschedule; the segment\'s name in the list', async () => {
    const { page } = d
    const seg = await d.api('POST', '/segments', { name: 'Trial users', condition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: '@inbox.test' }] }] } })
    expect(seg.status).toBeLessThan(300)
    await d.open('/campaigns/new')
    await page.getByRole('button', { name: 'Visual', exact: true }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Trial nudge')
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('alert').filter({ hasText: 'highlighted' }).waitFor()
    expect(await page.getByLabel('Subject', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    await shot(page, 'editor-09-error')
    // Typing a subject clears its error and the summary at once, before saving again.
    await page.getByLabel('Subject', { exact: true }).fill('Your trial')
    expect(await page.getByLabel('Subject', { exact: true }).getAttribute('aria-invalid')).toBeNull()
    expect(await page.getByRole('alert').filter({ hasText: 'highlighted' }).count()).toBe(0)
    await page.getByLabel('A segment').check()
    await page.getByLabel('Segment', { exact: true }).selectOption(seg.body.id)
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByRole('heading', { name: 'Send', exact: true }).waitFor()
    const id = new URL(page.url()).pathname.split('/').pop() ?? ''

    const later = new Date(Date.now() + 7 * 86_400_000).toISOString()
    expect((await d.api('POST', `/campaigns/${id}/send`, { scheduledFor: later })).body.data.status).toBe('SCHEDULED')
    await d.open(`/campaigns/${id}`)
    await page.getByRole('button', { name: 'Unschedule' }).click()
    await page.getByText('Unscheduled: the campaign is a draft again').waitFor()
    expect((await d.api('GET', `/campaigns/${id}`)).body).toMatchObject({ status: 'DRAFT', scheduledFor: null })
    await page.getByRole('heading', { name: 'Send', exact: true }).waitFor()
    await shot(page, 'editor-10-unscheduled')

    await d.open('/campaigns')
    const row = page.locator('tbody tr').filter({ hasText: 'Trial nudge' })
    await row.getByText('Segment: Trial users').waitFor()
    await shot(page, 'editor-11-list-segment')
    await d.a11y('campaigns: list with a segment')
    expect(pageErrors).toEqual([])
  })
  test('checks before sending (item 4): empty variables counted over the audience, relative links, images without alt, a long subject, no preheader; sending still works', async () => {
    const { page } = d
    const subject = `A very long subject line that goes on and on about our spring sale, {{ firstName | default: "friend" }}`
    const created = await d.api('POST', '/campaigns', {
      name: 'Checked', subject, from: 'news@brand.test', audienceType: 'ALL',
      body: '<p>Your plan: {{plan}}. Hi {{ firstName | default: "there" }}, <a href="/pricing">pricing</a> <a href="{{unsubscribeUrl}}">unsubscribe</a> <a href="https://brand.test/a">ok</a></p><img src="https://brand.test/x.png">',
    })
    expect(created.status).toBe(200)
    const id = created.body.data.id as string
    await d.open(`/campaigns/${id}`)
    const checks = page.getByTestId('pre-send-checks')
    await checks.getByText('2 recipients would get an empty {{plan}}').waitFor()
    const text = await checks.textContent()
    expect(text).toContain('1 link is not an absolute http(s) address: /pricing')
    expect(text).toContain('1 image has no alt text')
    expect(text).toContain(`The subject is ${subject.length} characters`)
    expect(text).toContain('No preheader')
    expect(text).not.toContain('firstName')
    await shot(page, 'editor-12-checks')
    await d.a11y('campaign: checks before sending')

    // A preheader saved in the form clears that check.
    await page.getByLabel('Preheader').fill('Spring sale: 30% off everything')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    await page.waitForFunction(() => !document.querySelector('[data-testid="pre-send-checks"]')?.textContent?.includes('No preheader'))
    expect((await d.api('GET', `/campaigns/${id}`)).body.preheader).toBe('Spring sale: 30% off everything')

    await page.getByRole('button', { name: 'Send now' }).click()
    await page.getByText('4 checks above are not met.').waitFor()
    await page.getByRole('button', { name: 'Yes, send now' }).click()
    await page.getByRole('heading', { name: 'Sending now' }).waitFor()
    expect((await d.api('GET', `/campaigns/${id}`)).body.status).toBe('SENDING')
    expect(pageErrors).toEqual([])
  })
})
