import { beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createUser } from '../../src/modules/users/service'
import { lastMail, tokenIn } from '../helpers/accounts'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'

setDefaultTimeout(90_000)

/**
 * Issue 35, item 4 in a real browser: an invitation is answered by the invitee, in the dashboard's
 * invitations list or through the emailed link; a project's name (the inviter's text) is shown as text.
 */
const available = chromiumAvailable()

describe.skipIf(!available)('invitations in Chromium', () => {
  const d = dashboardSuite()
  const pageErrors: string[] = []
  let ownerCookie = ''
  const hostileName = 'Acme <img src=x onerror="window.__pwned=1">'

  beforeAll(async () => {
    d.page.on('pageerror', (e) => { pageErrors.push(e.message) })
    ownerCookie = await d.cookieHeader()
  })

  async function signInAt(path: string, who: { email: string; password: string }) {
    await d.context.clearCookies()
    await d.page.goto(`${d.base}${path}`)
    await d.page.getByLabel('Email').fill(who.email)
    await d.page.getByLabel('Password').fill(who.password)
    await d.page.getByRole('button', { name: 'Sign in' }).click()
  }

  async function invite(projectId: string, email: string, role: 'ADMIN' | 'MEMBER') {
    const res = await d.env.request('POST', `/projects/${projectId}/members`, { cookie: ownerCookie, body: { email, role } })
    expect(res.status).toBe(201)
    expect(res.body.status).toBe('invited')
  }

  test('the invitations list: decline one, accept another; the accepted project opens with its role', async () => {
    const invitee = { email: 'invitee@example.com', password: 'invitee password 1' }
    await createUser(d.env.deps, invitee, { verified: true })
    const other = await d.env.request('POST', '/users/@me/projects', { cookie: ownerCookie, body: { name: hostileName } })
    expect(other.status).toBe(201)
    await invite(other.body.id, invitee.email, 'MEMBER')
    await invite(d.projectId, invitee.email, 'ADMIN')

    await signInAt('/app/invitations', invitee)
    await d.page.getByRole('heading', { name: 'Invitations', level: 1 }).waitFor()
    await d.page.getByRole('cell', { name: hostileName, exact: true }).waitFor()
    await d.page.getByRole('cell', { name: 'Acme', exact: true }).waitFor()
    expect(await d.page.getByRole('cell', { name: 'owner@example.com' }).count()).toBe(2)
    expect(await d.page.evaluate(() => 'pwned' in window || '__pwned' in window)).toBe(false)
    await shot(d.page, 'invitations-list')
    await d.a11y('invitations')

    await d.page.getByRole('button', { name: `Decline the invitation to ${hostileName}` }).click()
    await d.page.getByRole('cell', { name: hostileName, exact: true }).waitFor({ state: 'detached' })
    await d.page.getByRole('button', { name: 'Accept the invitation to Acme' }).click()
    await d.page.waitForURL(`**/app/p/${d.projectId}`)
    await d.page.getByText('Your role: ADMIN').waitFor()
    await shot(d.page, 'invitations-accepted')

    const team = (await d.env.request('GET', `/projects/${d.projectId}/members`, { cookie: ownerCookie })).body
    expect(team.map((m: { email: string; role: string; status: string }) => `${m.email}:${m.role}:${m.status}`)).toEqual(['owner@example.com:OWNER:active', 'invitee@example.com:ADMIN:active'])
    const declined = (await d.env.request('GET', `/projects/${other.body.id}/members`, { cookie: ownerCookie })).body
    expect(declined.map((m: { email: string }) => m.email)).toEqual(['owner@example.com'])
    expect(pageErrors).toEqual([])
  })

  test('the emailed link: signed out, sign in on the link, accept; the project opens', async () => {
    const invitee = { email: 'linked@example.com', password: 'linked password 1' }
    await createUser(d.env.deps, invitee, { verified: true })
    await invite(d.projectId, invitee.email, 'MEMBER')
    const mail = await lastMail(d.env, invitee.email, 'invitation')
    const link = new URL((mail?.text ?? '').match(/https?:\/\/\S+\/app\/invitations\?token=\S+/)?.[0] ?? '')
    expect(tokenIn(link.search)).toBeTruthy()

    await signInAt(`${link.pathname}${link.search}`, invitee)
    await d.page.getByRole('heading', { name: 'The invitation from your email' }).waitFor()
    await shot(d.page, 'invitations-link')
    await d.page.getByRole('button', { name: 'Accept the invitation from the link' }).click()
    await d.page.waitForURL(`**/app/p/${d.projectId}`)
    await d.page.getByText('Your role: MEMBER').waitFor()
    expect(pageErrors).toEqual([])
  })
})
