/**
 * Chromium for the browser suite: Debian's `chromium` package, driven by playwright-core. No browser is
 * ever downloaded. Without /usr/bin/chromium the suite says so loudly, with the command that installs it,
 * and fails under CI (it never skips silently).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = process.env.MAILCTL_CHROMIUM ?? '/usr/bin/chromium'
export const SCREENSHOTS = process.env.MAILCTL_SCREENSHOTS ?? resolve(import.meta.dir, 'screenshots')

export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true
  const line = '!'.repeat(78)
  console.warn(`\n${line}\n!! The dashboard's browser suite needs Chromium at ${CHROMIUM}, which is missing.\n!! Install it with:  apt-get install -y chromium\n!! (.ci/run installs it; no browser is downloaded by npm.)\n${line}\n`)
  if (process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: run "apt-get install -y chromium"`)
  return false
}

export async function launch(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'mailctl-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1366, height: 768 },
  })
  return {
    context,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/** A full-page screenshot into the suite's folder (look at them: issue 15). */
export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

const AXE = readFileSync(resolve(import.meta.dir, '..', '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8')

/**
 * axe-core's serious and critical violations on the page as it is now: "rule: target" lines. axe is
 * evaluated through the DevTools protocol: the dashboard's CSP refuses inline <script> tags (issue 35, item 9).
 */
export async function axeSerious(page: Page): Promise<string[]> {
  await page.evaluate(AXE)
  return page.evaluate(async () => {
    const w = window as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }
    const r = await w.axe.run()
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`))
  })
}

/**
 * Waits until the email preview (the editors' iframe "Preview of the email") renders `html`, and returns
 * its sandbox attribute. Read from the iframe's srcdoc in the page's DOM: reaching inside the opaque,
 * sandboxed frame from playwright sometimes waits forever on a frame that the last srcdoc change replaced.
 */
export async function previewShows(page: Page, html: string): Promise<string | null> {
  const selector = 'iframe[title="Preview of the email"]'
  await page.waitForFunction(([sel, want]) => document.querySelector(sel)?.getAttribute('srcdoc')?.includes(want) ?? false, [selector, html] as const)
  return page.locator(selector).getAttribute('sandbox')
}
