/**
 * The contacts page on a slow network: the time from navigation to the first rows of
 * /app/p/<id>/contacts in Debian's Chromium with the network throttled through the DevTools protocol to
 * the "Fast 3G" profile of Chrome's DevTools (which Playwright users take for it): 562.5 ms round trip,
 * 180,000 B/s down, 84,375 B/s up. Cold: a fresh browser profile (nothing cached). Target < 1.5 s.
 * Prints figures with the load average; asserts nothing.
 *
 *   node_modules/.bin/bun bench/web-3g.ts          (BENCH_CONTACTS=10000, SQLite, 3 cold runs)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { closeDeps, createDeps } from '../src/main'
import { buildApp } from '../src/http/app'
import { webBundle } from '../src/http/dashboard'
import { createProject } from '../src/modules/projects/service'
import { createUser } from '../src/modules/users/service'
import { chromiumAvailable, launch } from '../test/web/browser'

const N = Number(process.env.BENCH_CONTACTS ?? 10_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 3)
const FAST_3G = { offline: false, latency: 562.5, downloadThroughput: 180_000, uploadThroughput: 84_375 }

if (!chromiumAvailable()) process.exit(1)
const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-3g-'))
const config = loadConfig({ env: {}, overrides: { dataDir: dir, databaseUrl: `sqlite://${join(dir, 'bench.db')}`, logLevel: 'warn', jwtSecret: 'bench', rateLimitPerMinute: 1_000_000 } })
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ')
const deps = await createDeps(config)
try {
  const user = await createUser(deps, { email: 'bench@example.com', password: 'bench password 1' }, { verified: true })
  const project = await createProject(deps.store, { name: 'bench', ownerUserId: user.id })
  const base = Date.parse('2024-01-01T00:00:00Z')
  await deps.store.exec(sql`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${N - 1})
    INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
    SELECT printf('%08d', i), ${project.id}, 'user' || i || '@example.com', 1, json_object('plan', 'pro'), ${base} + i * 1000, ${base} + i * 1000 FROM n`)
  const app = buildApp(deps)
  app.listen({ port: 0, hostname: '127.0.0.1' })
  const origin = `http://127.0.0.1:${app.server?.port}`
  await webBundle() // built (and compressed) before the clock runs, as the executable has it
  const login = await fetch(`${origin}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.com', password: 'bench password 1' }) })
  const token = (login.headers.get('set-cookie') ?? '').split(';')[0].split('=').slice(1).join('=')
  const times: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const browser = await launch()
    try {
      await browser.context.addCookies([{ name: 'mailctl_session', value: token, url: origin }])
      await browser.context.addInitScript(() => {
        const w = window as unknown as { rowsAt?: number }
        new MutationObserver(() => {
          if (w.rowsAt === undefined && document.querySelector('tbody tr td')) w.rowsAt = performance.now()
        }).observe(document, { childList: true, subtree: true })
      })
      const page = await browser.context.newPage()
      const cdp = await browser.context.newCDPSession(page)
      await cdp.send('Network.enable')
      await cdp.send('Network.emulateNetworkConditions', FAST_3G)
      let bytes = 0
      cdp.on('Network.loadingFinished', (e: { encodedDataLength: number }) => { bytes += e.encodedDataLength })
      await page.goto(`${origin}/app/p/${project.id}/contacts`)
      await page.locator('tbody tr td').first().waitFor({ timeout: 60_000 })
      const ms = await page.evaluate(() => (window as unknown as { rowsAt: number }).rowsAt)
      times.push(ms)
      console.log(`run ${run + 1}: first rows at ${ms.toFixed(0)} ms on Fast 3G (${(bytes / 1024).toFixed(1)} KB over the wire); load average ${load()}`)
    } finally {
      await browser.close()
    }
  }
  times.sort((a, b) => a - b)
  console.log(`contacts page, first rows on Fast 3G, cold: median ${times[Math.floor(times.length / 2)].toFixed(0)} ms of ${RUNS} (target < 1500 ms); load average ${load()}`)
  await app.stop()
} finally {
  await closeDeps(deps)
  rmSync(dir, { recursive: true, force: true })
}
