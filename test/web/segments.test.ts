import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(120_000)

/**
 * The segments pages in Chromium (issue 15, page 5): the filter builder with nested groups and its live
 * count, the members, a static segment's member editing, the tracked-membership switch, a validation error
 * shown on the right condition, delete; axe-core on every page and a screenshot of each.
 */
const available = chromiumAvailable()

describe.skipIf(!available)('segments in Chromium', () => {
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
  const membersSay = (text: string, exact = false) => d.page.locator('section[aria-labelledby="members-title"]').getByText(text, { exact }).waitFor()
  const liveCount = (text: string) => d.page.getByRole('status').filter({ hasText: text }).waitFor()
  let engagedId = ''

  beforeAll(async () => {
    for (const [email, subscribed, data, purchases] of [
      ['ann@example.com', true, { plan: 'pro', age: 31 }, 0],
      ['ben@example.com', false, { plan: 'free', age: 19 }, 0],
      ['cat@example.com', true, { plan: 'pro', age: 45 }, 1],
      ['dan@example.com', true, { plan: 'free', age: 52 }, 2],
      ['eve@example.com', true, { plan: 'pro', age: 17 }, 1],
      ['gus@example.com', true, { plan: 'free', age: 40 }, 1],
      ['fay@example.com', false, {}, 0],
    ] as const) {
      expect((await byKey('POST', '/contacts', { email, subscribed, data })).status).toBe(201)
      for (let i = 0; i < purchases; i++) expect((await byKey('POST', '/v1/track', { email, event: 'purchase' })).status).toBe(200)
    }
  })

  test('the list starts empty and says what to do', async () => {
    await d.open('/')
    await d.page.getByRole('link', { name: 'Segments', exact: true }).click()
    await d.page.getByText('No segments yet').waitFor()
    await shot(d.page, 'segments-01-empty')
    await d.a11y('segments, empty list')
  })

  test('a segment with nested groups: AND of an OR group, a data field and an event; live count, then the right members', async () => {
    await d.page.getByRole('link', { name: 'New segment' }).first().click()
    await d.page.getByRole('heading', { name: 'New segment' }).waitFor()
    await label('Name').fill('Engaged buyers')
    await label('Group 1, condition 1: field').selectOption('data.age')
    await label('Group 1, condition 1: operator').selectOption('greaterThan')
    await label('Group 1, condition 1: value').fill('18')
    // ann, ben, cat, dan, gus are older than 18.
    await liveCount('5 contacts match now')

    await button('Add condition to group 1').click()
    await label('Group 1, condition 2: field').selectOption('event.purchase')
    expect(await label('Group 1, condition 2: operator').inputValue()).toBe('triggered')
    await liveCount('3 contacts match now')

    await button('Add nested groups to group 1').click()
    expect(await label('Group 1, match').inputValue()).toBe('OR')
    await label('Group 1, nested group 1, condition 1: field').selectOption('data.plan')
    await label('Group 1, nested group 1, condition 1: operator').selectOption('equals')
    await label('Group 1, nested group 1, condition 1: value').fill('pro')
    await liveCount('1 contact matches now')
    await button('Add a nested group to group 1').click()
    await label('Group 1, nested group 2, condition 1: field').selectOption('email')
    await label('Group 1, nested group 2, condition 1: operator').selectOption('contains')
    await label('Group 1, nested group 2, condition 1: value').fill('dan')
    // (pro OR email contains "dan") AND age > 18 AND purchased: cat and dan.
    await liveCount('2 contacts match now')
    await shot(d.page, 'segments-02-builder')
    await d.a11y('segments, new dynamic segment')

    await button('Create segment').click()
    await d.page.getByRole('heading', { name: 'Engaged buyers' }).waitFor()
    await membersSay('2 members now')
    const members = await d.page.locator('section[aria-labelledby="members-title"] tbody td:first-child').allTextContents()
    expect(members.sort()).toEqual(['cat@example.com', 'dan@example.com'])
    const list = await byKey('GET', '/segments')
    expect(list.body).toHaveLength(1)
    engagedId = list.body[0].id
    expect(list.body[0]).toMatchObject({ name: 'Engaged buyers', type: 'DYNAMIC', memberCount: 2, trackMembership: false })
    expect(list.body[0].condition).toEqual({
      logic: 'AND',
      groups: [{
        filters: [{ field: 'data.age', operator: 'greaterThan', value: 18 }, { field: 'event.purchase', operator: 'triggered' }],
        conditions: { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }, { filters: [{ field: 'email', operator: 'contains', value: 'dan' }] }] },
      }],
    })
    // The saved tree comes back into the builder as it was built.
    await liveCount('2 contacts match now')
    expect(await label('Group 1, nested group 2, condition 1: value').inputValue()).toBe('dan')
    await shot(d.page, 'segments-03-detail')
    await d.a11y('segments, dynamic segment')
  })

  test('an event count and a date window with units; a validation error is shown on the condition at fault', async () => {
    await d.open(`/segments/${engagedId}`)
    await liveCount('2 contacts match now')
    // "purchased more than once": only dan.
    await label('Group 1, condition 2: operator').selectOption('triggeredMoreThan')
    await label('Group 1, condition 2: times').fill('1')
    await liveCount('1 contact matches now')
    // "purchased within the last 7 days": cat and dan again.
    await label('Group 1, condition 2: operator').selectOption('triggeredWithin')
    await label('Group 1, condition 2: how many').fill('7')
    await label('Group 1, condition 2: unit').selectOption('days')
    await liveCount('2 contacts match now')
    // A date field with units: created within the last hour (everyone), then more than a day ago (nobody).
    await button('Add condition to group 1').click()
    await label('Group 1, condition 3: field').selectOption('createdAt')
    expect(await label('Group 1, condition 3: operator').inputValue()).toBe('within')
    await liveCount('Fix the highlighted conditions')
    await label('Group 1, condition 3: how many').fill('1')
    await label('Group 1, condition 3: unit').selectOption('hours')
    await liveCount('2 contacts match now')
    await label('Group 1, condition 3: operator').selectOption('olderThan')
    await label('Group 1, condition 3: unit').selectOption('days')
    await liveCount('0 contacts match now')
    await button('Remove group 1, condition 3').click()
    await liveCount('2 contacts match now')

    // A number comparison with a word: the API's 422 names condition.groups.0.conditions.groups.0.filters.0.value.
    await label('Group 1, nested group 1, condition 1: operator').selectOption('greaterThan')
    await label('Group 1, nested group 1, condition 1: value').fill('pro')
    await liveCount('Fix the highlighted conditions')
    await button('Save').click()
    await d.page.getByRole('alert').filter({ hasText: 'Check the highlighted field' }).waitFor()
    const bad = d.page.getByRole('group', { name: 'Group 1, nested group 1, condition 1', exact: true })
    expect(await bad.getByText('value is a number or an ISO-8601 date').count()).toBe(1)
    expect(await label('Group 1, nested group 1, condition 1: value').getAttribute('aria-invalid')).toBe('true')
    for (const other of ['Group 1, condition 1: value', 'Group 1, nested group 2, condition 1: value', 'Group 1, condition 2: how many']) {
      expect(await label(other).getAttribute('aria-invalid')).toBeNull()
    }
    await shot(d.page, 'segments-04-validation-error')
    await d.a11y('segments, validation error')
    // Nothing was saved.
    expect((await byKey('GET', `/segments/${engagedId}`)).body.condition.groups[0].filters[1].operator).toBe('triggered')

    await label('Group 1, nested group 1, condition 1: operator').selectOption('equals')
    await liveCount('2 contacts match now')
    // Fixed: the highlight and the save's message go.
    expect(await label('Group 1, nested group 1, condition 1: value').getAttribute('aria-invalid')).toBeNull()
    expect(await d.page.getByText('Check the highlighted field').count()).toBe(0)
    await button('Save').click()
    await d.page.getByText('Saved.').waitFor()
    const saved = (await byKey('GET', `/segments/${engagedId}`)).body
    expect(saved.condition.groups[0].filters[1]).toEqual({ field: 'event.purchase', operator: 'triggeredWithin', value: 7, unit: 'days' })
    expect(saved.memberCount).toBe(2)
  })

  test('the tracked-membership switch turns the entry and exit events on', async () => {
    await d.open(`/segments/${engagedId}`)
    const sw = d.page.getByRole('switch', { name: 'Track membership' })
    expect(await sw.isChecked()).toBe(false)
    await sw.click()
    await d.page.getByText('segment.engaged-buyers.entry').first().waitFor()
    await button('Compute membership now').waitFor()
    expect(await sw.getAttribute('aria-checked')).toBe('true')
    expect((await byKey('GET', `/segments/${engagedId}`)).body.trackMembership).toBe(true)
    await button('Compute membership now').click()
    await button('Compute membership now').waitFor()
    await d.a11y('segments, tracked')
  })

  test('a static segment: add members by email (and create missing ones), remove them, then delete it', async () => {
    await d.open('/segments/new')
    await label('Name').fill('Hand picked')
    await d.page.getByRole('radio', { name: /^Static/ }).check()
    await button('Create segment').click()
    await d.page.getByRole('heading', { name: 'Hand picked' }).waitFor()
    await d.page.getByText('No members yet').waitFor()
    await d.a11y('segments, empty static segment')

    await label('Emails').fill('ann@example.com, ben@example.com\nnobody@example.com')
    await button('Add to segment').click()
    await d.page.getByText('Added 2').waitFor()
    await d.page.getByText('nobody@example.com', { exact: false }).first().waitFor()
    expect(await label('Emails').inputValue()).toBe('nobody@example.com')
    await membersSay('2 members')
    await label('Create contacts for addresses that are not contacts yet').check()
    await button('Add to segment').click()
    await d.page.getByText('1 contact created').waitFor()
    await membersSay('3 members')
    await shot(d.page, 'segments-05-static')
    await d.a11y('segments, static segment with members')

    await d.page.getByRole('button', { name: 'Remove ann@example.com from the segment' }).click()
    await membersSay('2 members')
    await label('Emails').fill('nobody@example.com')
    await button('Remove from segment').click()
    await d.page.getByText('Removed 1').waitFor()
    await membersSay('1 member', true)
    const seg = (await byKey('GET', '/segments')).body.find((s: { name: string }) => s.name === 'Hand picked')
    const members = await byKey('GET', `/segments/${seg.id}/contacts`)
    expect(members.body.data.map((c: { email: string }) => c.email)).toEqual(['ben@example.com'])
    expect((await byKey('GET', '/contacts?search=nobody')).body.total).toBe(1)

    await button('Delete segment').click()
    await button('Yes, delete segment').click()
    await d.page.getByRole('heading', { name: 'Segments' }).waitFor()
    await d.page.getByRole('link', { name: 'Engaged buyers' }).waitFor()
    expect(await d.page.getByRole('link', { name: 'Hand picked' }).count()).toBe(0)
    expect((await byKey('GET', `/segments/${seg.id}`)).status).toBe(404)
    await shot(d.page, 'segments-06-list')
    await d.a11y('segments, list')
  })

  test('the builder at phone width', async () => {
    const phone = await d.context.newPage()
    await phone.setViewportSize({ width: 390, height: 844 })
    await phone.goto(`${d.base}/app/p/${d.projectId}/segments/${engagedId}`)
    await phone.getByRole('status').filter({ hasText: '2 contacts match now' }).waitFor()
    await shot(phone, 'segments-07-phone-builder')
    await phone.close()
  })
})
