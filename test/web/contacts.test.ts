import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Worker } from '../../src/jobs/queue'
import { contactJobs } from '../../src/modules/contacts/jobs'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The contacts pages of issue 37 in Chromium: columns from the project's fields (remembered), search over
 * the email and the text fields, conditions from the segment builder and "save as segment", bulk actions
 * on a selection and on every match with the job's progress, CSV export of the filtered list, the import's
 * preview and column mapping, and the fields page (rename, change type with its misfit count, delete);
 * axe-core on each state, screenshots on a desktop and a phone.
 */
const available = chromiumAvailable()

describe.skipIf(!available)('contacts at scale in Chromium', () => {
  const d = dashboardSuite()
  const byKey = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${d.base}${path}`, {
      method, headers: { authorization: `Bearer ${d.secretKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  const label = (name: string) => d.page.getByLabel(name, { exact: true })
  const button = (name: string) => d.page.getByRole('button', { name, exact: true })
  const drain = () => new Worker(d.env.deps, contactJobs).drain()
  let vip = ''

  beforeAll(async () => {
    for (const [email, data, subscribed] of [
      ['anna@example.com', { name: 'Anna Müller', plan: 'pro', age: '31' }, true],
      ['bert@example.com', { name: 'Bert', plan: 'free', age: '19' }, true],
      ['carla@example.com', { name: 'CARLA MÜLLER', plan: 'pro', age: 'forty' }, true],
      ['dieter@example.com', { name: 'Dieter', plan: 'free', age: '52' }, false],
      ['emil@example.com', { name: 'Emil', plan: 'pro', age: '17' }, true],
    ] as const) {
      expect((await byKey('POST', '/contacts', { email, data, subscribed })).status).toBe(201)
    }
    vip = (await byKey('POST', '/segments', { name: 'VIP', type: 'STATIC' })).body.id
  })

  test('columns picked from the fields, remembered after a reload', async () => {
    await d.open('/contacts')
    await d.page.getByRole('cell', { name: 'anna@example.com', exact: true }).waitFor()
    await d.page.getByText('5 contacts').waitFor()
    await d.page.getByText('Columns', { exact: true }).click()
    await label('name').check()
    await label('plan').check()
    await d.page.getByRole('columnheader', { name: 'plan' }).waitFor()
    await d.page.getByRole('cell', { name: 'Anna Müller' }).waitFor()
    await d.a11y('contacts, column picker open')
    await d.page.getByText('Columns (2)').click()
    await d.page.reload()
    await d.page.getByRole('columnheader', { name: 'name' }).waitFor()
    expect(await d.page.getByRole('columnheader').allTextContents()).toEqual(['', 'Email', 'Subscription', 'name', 'plan', 'Created'])
    await shot(d.page, 'contacts37-01-columns')
  })

  test('search finds "Müller" in a text field whatever the case and accents', async () => {
    await label('Search email and fields').fill('muller')
    await d.page.getByText('2 contacts').waitFor()
    expect((await d.page.locator('tbody tr td:nth-child(2)').allTextContents()).sort()).toEqual(['anna@example.com', 'carla@example.com'])
    await shot(d.page, 'contacts37-02-search')
    await d.a11y('contacts, search')
    await label('Search email and fields').fill('')
    await d.page.getByText('5 contacts').waitFor()
  })

  test('conditions from the segment builder filter the list and save as a segment', async () => {
    await button('Conditions').click()
    await label('Group 1, condition 1: field').selectOption('data.plan')
    await label('Group 1, condition 1: operator').selectOption('equals')
    await label('Group 1, condition 1: value').fill('pro')
    await button('Apply conditions').click()
    await d.page.getByText('3 contacts').waitFor()
    await label('Segment name').fill('Pro plan')
    await button('Save as segment').click()
    await d.page.getByRole('status').filter({ hasText: 'Saved as' }).waitFor()
    const segs = (await byKey('GET', '/segments')).body as Array<{ name: string; type: string; memberCount: number }>
    expect(segs.find((s) => s.name === 'Pro plan')).toMatchObject({ type: 'DYNAMIC', memberCount: 3 })
    await shot(d.page, 'contacts37-03-conditions')
    await d.a11y('contacts, conditions')
  })

  test('bulk: every match of the filter into a static segment, with the job\'s progress', async () => {
    await label('Select the contacts of this page').check()
    await d.page.getByText('3 selected.').waitFor()
    await label('Action on 3 contacts').selectOption('addToSegment')
    await label('Segment').selectOption(vip)
    await button('Apply').click()
    await d.page.getByText('Add 3 contacts to VIP?').waitFor()
    await shot(d.page, 'contacts37-04-bulk-confirm')
    await d.a11y('contacts, bulk confirmation')
    await button('Yes, add to a static segment').click()
    await d.page.getByText(/Add to a static segment: working|Add to a static segment: done/).waitFor()
    await drain()
    await d.page.getByText('Add to a static segment: done, 3 of 3').waitFor()
    await d.page.getByRole('status').filter({ hasText: '3 changed · 0 already so · 0 not found' }).waitFor()
    expect((await byKey('GET', `/segments/${vip}`)).body.memberCount).toBe(3)
    await button('Done').click()
    // Every match (not only the page): unsubscribe the pro plan with the filter.
    await button('Clear the selection').click()
    await label('Select emil@example.com').check()
    await button('Select all 3 matching').click()
    await d.page.getByText('All 3 matching contacts are selected.').waitFor()
    await label('Action on 3 contacts').selectOption('unsubscribe')
    await button('Apply').click()
    await button('Yes, unsubscribe').click()
    await drain()
    await d.page.getByText('Unsubscribe: done, 3 of 3').waitFor()
    expect((await byKey('POST', '/contacts/query/count', { subscribed: false })).body.total).toBe(4)
    await shot(d.page, 'contacts37-05-bulk-done')
  })

  test('an estimated count reads "about N", and a selection of every match names no number', async () => {
    // The server estimates only past a third of a second of counting (a million contacts); here the
    // answer it gives then is served in its place, to see how the page words it.
    await d.page.route('**/contacts/query/count', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ total: 330_000, estimated: true }) }))
    try {
      await label('Search email and fields').fill('example')
      await d.page.getByText('about 330,000 contacts').waitFor()
      await label('Select emil@example.com').check()
      await button('Select every matching contact (about 330,000)').click()
      await d.page.getByText('Every matching contact (about 330,000) is selected.').waitFor()
      await label('Action on every matching contact').waitFor()
      await shot(d.page, 'contacts37-05b-estimated')
      await d.a11y('contacts, estimated count')
      await button('Clear the selection').click()
    } finally {
      await d.page.unroute('**/contacts/query/count')
    }
    await label('Search email and fields').fill('')
    await d.page.getByText('3 contacts').waitFor()
  })

  test('CSV export of the filtered list', async () => {
    const download = d.page.waitForEvent('download')
    await button('Export CSV').click()
    const file = await download
    const text = await Bun.file(await file.path()).text()
    const lines = text.trim().split('\n')
    expect(lines[0]).toContain('id,email,subscribed')
    expect(lines.length).toBe(4)
    expect(text).toContain('carla@example.com')
    expect(text).not.toContain('bert@example.com')
  })

  test('import: preview, an existing field matched, a type chosen with its misfits, per-row errors', async () => {
    await d.open('/contacts')
    await button('Import CSV').click()
    const csv = 'Email Address,Plan,Signup Date,Notes\nfritz@example.com,pro,2024-02-01,x\ngerd@example.com,free,soon,y\nnot-an-email,free,2024-02-03,z\n'
    await label('CSV file').setInputFiles({ name: 'mailchimp.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) })
    await button('Preview').click()
    await d.page.getByRole('heading', { name: 'Columns' }).waitFor()
    expect(await label('Email Address: goes to').inputValue()).toBe('email')
    expect(await label('Plan: field name').inputValue()).toBe('plan')
    await d.page.getByText('existing field').first().waitFor()
    expect(await label('Signup Date: field name').inputValue()).toBe('signup_date')
    await label('Signup Date: read as').selectOption('date')
    await d.page.getByText('1 value does not fit').waitFor()
    await label('Notes: goes to').selectOption('ignore')
    await d.page.getByText('2 would not be imported').waitFor()
    await shot(d.page, 'contacts37-06-import-mapping')
    await d.a11y('contacts, import mapping')
    await button('Import 1 row').click()
    await d.page.getByText('Waiting for a worker').waitFor()
    await drain()
    await d.page.getByText('Done: ').waitFor()
    await d.page.getByRole('cell', { name: 'Column signup_date: "soon" is not a date' }).waitFor()
    const fritz = (await byKey('POST', '/contacts/query', { search: 'fritz' })).body.data[0]
    expect(fritz.data).toEqual({ plan: 'pro', signup_date: '2024-02-01' })
    await shot(d.page, 'contacts37-07-import-report')
  })

  test('fields page: rename, change type with the misfits counted first, delete', async () => {
    await d.open('/contacts/fields')
    await d.page.getByRole('rowheader', { name: 'age' }).waitFor()
    const row = (name: string) => d.page.getByRole('row').filter({ has: d.page.getByRole('rowheader', { name, exact: true }) })
    await row('name').getByRole('button', { name: 'Rename' }).click()
    await label('New name of name').fill('plan')
    await row('name').getByRole('button', { name: 'Rename', exact: true }).last().click()
    await d.page.getByText('contacts already have a field plan').waitFor()
    await d.a11y('fields, rename error')
    await label('New name of name').fill('fullName')
    await row('name').getByRole('button', { name: 'Rename', exact: true }).last().click()
    await d.page.getByRole('rowheader', { name: 'fullName' }).waitFor()
    await row('age').getByRole('button', { name: 'Change type' }).click()
    await label('New type of age').selectOption('number')
    await d.page.getByText('4 values fit; 1 does not and stays as it is (for example "forty")').waitFor()
    await shot(d.page, 'contacts37-08-fields-retype')
    await d.a11y('fields, change type')
    await row('age').getByRole('button', { name: 'Convert' }).click()
    await d.page.getByText('Converted 4 values.').waitFor()
    const anna = (await byKey('POST', '/contacts/query', { search: 'anna@' })).body.data[0]
    expect(anna.data).toMatchObject({ fullName: 'Anna Müller', age: 31 })
    await row('signup_date').getByRole('button', { name: 'Delete' }).click()
    await row('signup_date').getByRole('button', { name: 'Yes, delete' }).click()
    await d.page.getByRole('rowheader', { name: 'signup_date' }).waitFor({ state: 'detached' })
    await shot(d.page, 'contacts37-09-fields')
  })

  test('phone: the list, the bulk bar and the fields page fit', async () => {
    await d.page.setViewportSize({ width: 390, height: 844 })
    await d.open('/contacts')
    await d.page.getByRole('cell', { name: 'anna@example.com', exact: true }).waitFor()
    await label('Select anna@example.com').check()
    await d.page.getByText('1 selected.').waitFor()
    await shot(d.page, 'contacts37-10-phone-list')
    await d.a11y('contacts, phone')
    await d.open('/contacts/fields')
    await d.page.getByRole('rowheader', { name: 'age' }).waitFor()
    await shot(d.page, 'contacts37-11-phone-fields')
    await d.page.setViewportSize({ width: 1366, height: 768 })
  })
})
