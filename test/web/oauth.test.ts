import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { chromiumAvailable, shot } from './browser'
import { dashboardSuite } from './fixture'
import { startFakeProvider } from '../helpers/oauth-provider'

setDefaultTimeout(120_000)

/**
 * OAuth sign-in in Chromium (issue 13 part 6): the sign-in page offers the providers the server has on,
 * a click goes through a fake GitHub on 127.0.0.1 and back, and the visitor lands signed in on the
 * dashboard; a refusal comes back as a message on the sign-in page.
 */
describe.skipIf(!chromiumAvailable())('OAuth sign-in in Chromium', () => {
  const github = startFakeProvider()
  const google = startFakeProvider()
  const d = dashboardSuite({
    oauthGithubId: github.clientId, oauthGithubSecret: github.clientSecret, oauthGithubUrl: github.url,
    oauthGoogleId: google.clientId, oauthGoogleSecret: google.clientSecret, oauthGoogleUrl: google.url,
  })
  afterAll(() => { github.stop(); google.stop() })

  async function signedOut() {
    await d.context.clearCookies()
    await d.page.goto(`${d.base}/app/`)
    await d.page.getByRole('heading', { name: 'Sign in' }).waitFor()
  }

  test('signed out, the sign-in page offers GitHub and Google next to the password form', async () => {
    await signedOut()
    const gh = d.page.getByRole('link', { name: 'Sign in with GitHub' })
    await gh.waitFor()
    expect(await gh.getAttribute('href')).toBe('/auth/oauth/github')
    expect(await d.page.getByRole('link', { name: 'Sign in with Google' }).getAttribute('href')).toBe('/auth/oauth/google')
    await shot(d.page, 'oauth-01-sign-in')
    await d.a11y('oauth sign-in')
    // Keyboard: the provider links are reachable after the form.
    await d.page.getByRole('link', { name: /Forgot your password/ }).focus()
    await d.page.keyboard.press('Tab')
    expect(await d.page.evaluate(() => document.activeElement?.textContent)).toMatch(/Sign in with (GitHub|Google)/)
  })

  test('"Sign in with GitHub" with the owner\'s verified address lands signed in on the owner\'s project', async () => {
    await signedOut()
    github.mode = 'ok'
    github.account = { id: 4242, email: d.owner.email, verified: true, name: 'The Owner' }
    await d.page.getByRole('link', { name: 'Sign in with GitHub' }).click()
    await d.page.waitForURL(new RegExp(`/app/p/${d.projectId}`))
    await d.page.getByRole('link', { name: 'API keys' }).waitFor()
    const me = await d.api('GET', '/users/@me')
    expect(me.body).toMatchObject({ id: d.owner.id, email: d.owner.email })
    const { oauthAccounts } = d.env.store.t
    const [link] = await d.env.store.db.select().from(oauthAccounts).where(eq(oauthAccounts.userId, d.owner.id))
    expect(link).toMatchObject({ provider: 'github', providerUserId: '4242' })
    await shot(d.page, 'oauth-02-signed-in')
    await d.a11y('oauth signed in')
  })

  test('a new address signs up through GitHub and is asked to create its first project', async () => {
    await signedOut()
    github.mode = 'ok'
    github.account = { id: 4343, email: 'newcomer@example.com', verified: true, name: 'New Comer' }
    await d.page.getByRole('link', { name: 'Sign in with GitHub' }).click()
    await d.page.getByRole('heading', { name: 'Create your first project' }).waitFor()
    expect(new URL(d.page.url()).pathname).toBe('/app/projects/new')
    await shot(d.page, 'oauth-03-new-account')
  })

  test('an unverified address comes back to the sign-in page with a message saying what to do', async () => {
    await signedOut()
    github.mode = 'ok'
    github.account = { id: 4444, email: 'unverified@example.com', verified: false }
    await d.page.getByRole('link', { name: 'Sign in with GitHub' }).click()
    const alert = d.page.getByRole('alert')
    await alert.waitFor()
    expect(await alert.textContent()).toContain('GitHub did not confirm an email address')
    const url = new URL(d.page.url())
    expect(url.pathname).toBe('/app/')
    expect(url.searchParams.get('oauth_error')).toBe('unverified_email')
    expect(await d.page.getByRole('link', { name: 'Sign in with GitHub' }).isVisible()).toBe(true)
    await shot(d.page, 'oauth-04-unverified')
    await d.a11y('oauth error')
    // A made-up code shows the dashboard's own generic message, never text from the URL.
    await d.page.goto(`${d.base}/app/?oauth_error=%3Cb%3Eyou%20won%3C%2Fb%3E&provider=evil`)
    await d.page.getByRole('alert').waitFor()
    const text = (await d.page.getByRole('alert').textContent()) ?? ''
    expect(text).toContain('Sign-in with the provider failed')
    expect(text).not.toContain('won')
  })

  test('cancelling at the provider, at phone width', async () => {
    await signedOut()
    await d.page.setViewportSize({ width: 390, height: 844 })
    try {
      github.mode = 'deny'
      await d.page.getByRole('link', { name: 'Sign in with GitHub' }).click()
      await d.page.getByText('Sign-in with GitHub was cancelled').waitFor()
      await shot(d.page, 'oauth-05-cancelled-phone')
      await d.a11y('oauth cancelled')
    } finally {
      github.mode = 'ok'
      await d.page.setViewportSize({ width: 1366, height: 768 })
    }
  })
})
