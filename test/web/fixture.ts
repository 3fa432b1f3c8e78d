/**
 * A signed-in dashboard for one browser test file: a server on loopback with a fresh SQLite store, Debian's
 * Chromium (browser.ts), an owner with a project, and the session cookie already in the browser. The
 * sign-in flow itself is tested in dashboard.test.ts; the other page suites start here.
 *
 *   const d = dashboardSuite()          // inside describe.skipIf(!chromiumAvailable())
 *   test('…', async () => { await d.open('/campaigns'); … await d.a11y('campaigns') })
 */
import { afterAll, beforeAll, expect } from 'bun:test'
import type { BrowserContext, Page } from 'playwright-core'
import { TestEnv, type JsonBody } from '../helpers/env'
import { createUser } from '../../src/modules/users/service'
import { createMyProject } from '../../src/modules/projects/service'
import { axeSerious, launch } from './browser'
import type { Config } from '../../src/config'

export interface DashboardSuite {
  env: TestEnv
  base: string
  page: Page
  context: BrowserContext
  projectId: string
  secretKey: string
  owner: { id: string; email: string; password: string }
  /** Opens a page of the project: `open('/contacts')` is /app/p/<projectId>/contacts. */
  open(path: string): Promise<void>
  /** The API as the dashboard calls it (cookie + X-Project-Id); the body is parsed JSON (or null). */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: JsonBody }>
  cookieHeader(): Promise<string>
  /** Fails the test with the list of axe-core's serious or critical violations on the page as it is. */
  a11y(name: string): Promise<void>
}

export function dashboardSuite(overrides: Partial<Config> = {}): DashboardSuite {
  const s = { owner: { id: '', email: 'owner@example.com', password: 'owner password 1' } } as DashboardSuite
  let browser: Awaited<ReturnType<typeof launch>> | undefined
  beforeAll(async () => {
    s.env = new TestEnv('sqlite', overrides)
    await s.env.start()
    s.env.app.listen({ port: 0, hostname: '127.0.0.1' })
    s.base = `http://127.0.0.1:${s.env.app.server?.port}`
    // MAILCTL_PUBLIC_URL is where browsers reach this server: uploaded images, links and OAuth callbacks are
    // built from it (the default, localhost:3000, is another port: the editor's uploaded image was broken).
    s.env.config.publicUrl = s.base
    const user = await createUser(s.env.deps, s.owner, { verified: true })
    s.owner.id = user.id
    const project = await createMyProject(s.env.deps, user.id, { name: 'Acme' })
    s.projectId = project.id
    s.secretKey = project.secretKey
    browser = await launch()
    s.context = browser.context
    s.page = await s.context.newPage()
    const res = await s.page.request.post(`${s.base}/auth/login`, { data: { email: s.owner.email, password: s.owner.password } })
    if (!res.ok()) throw new Error(`sign-in for the suite failed: ${res.status()} ${await res.text()}`)
    // The first page load bundles the dashboard (once per server): done here so no test pays for it.
    await s.page.goto(`${s.base}/app/p/${s.projectId}`)
    await s.page.locator('#main').waitFor({ timeout: 120_000 })
  }, 180_000)
  afterAll(async () => {
    await browser?.close()
    await s.env?.app.stop()
    await s.env?.stop()
  })
  s.open = async (path) => {
    await s.page.goto(`${s.base}/app/p/${s.projectId}${path}`)
    // The contacts list is first drawn by the server (web/first-view.ts): the page is the app's once that is gone.
    await s.page.waitForFunction(() => !document.getElementById('first-view'))
  }
  s.cookieHeader = async () => (await s.context.cookies(s.base)).map((c) => `${c.name}=${c.value}`).join('; ')
  s.api = async (method, path, body) => {
    const res = await fetch(`${s.base}${path}`, {
      method,
      headers: { cookie: await s.cookieHeader(), 'x-project-id': s.projectId, ...(body === undefined ? {} : { 'content-type': 'application/json', origin: s.base }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  s.a11y = async (name) => {
    expect({ page: name, violations: await axeSerious(s.page) }).toEqual({ page: name, violations: [] })
  }
  return s
}
