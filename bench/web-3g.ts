/**
 * The contacts page on a slow network: the time from navigation to the first rows of
 * /app/p/<id>/contacts in Debian's Chromium with the network throttled through the DevTools protocol to
 * the "Fast 3G" profile of Chrome's DevTools (which Playwright users take for it): 562.5 ms round trip,
 * 180,000 B/s down, 84,375 B/s up. Cold: a fresh browser profile (nothing cached). Target < 1.5 s.
 * The rows are first drawn from the page itself (the server's first view, src/http/dashboard-first-view.ts);
 * the app's own rows, when the page answers clicks, are printed beside them.
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
  const appTimes: number[] = []
  const tripsSeen: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const browser = await launch()
    try {
      await browser.context.addCookies([{ name: 'mailctl_session', value: token, url: origin }])
      // The rows count when they are drawn: at the animation frame after they are in the document (a frame
      // waits for any stylesheet that blocks rendering), or at the first contentful paint if that is later. The app's own rows (the server's first view gone,
      // web/first-view.ts) are when the page answers clicks.
      await browser.context.addInitScript(() => {
        const w = window as unknown as { rowsAt?: number; appAt?: number }
        new MutationObserver(() => {
          if (w.rowsAt === undefined && document.querySelector('tbody tr td')) {
            w.rowsAt = -1
            requestAnimationFrame(() => { w.rowsAt = performance.now() })
          }
          if (w.appAt === undefined && document.querySelector('#root tbody tr td') && !document.getElementById('first-view')) w.appAt = performance.now()
        }).observe(document, { childList: true, subtree: true })
      })
      const page = await browser.context.newPage()
      const cdp = await browser.context.newCDPSession(page)
      await cdp.send('Network.enable')
      await cdp.send('Network.emulateNetworkConditions', FAST_3G)
      let bytes = 0
      // Each request's round trip on the critical path: 1 + the highest of the requests whose answer had
      // begun to arrive when it was sent (the HTML is 1, what the HTML names 2, what their code asks for 3, ...).
      const sent = new Map<string, { at: number; wall: number; url: string }>()
      const done = new Map<string, number>()
      cdp.on('Network.responseReceived', (e: { requestId: string; timestamp: number }) => { done.set(e.requestId, e.timestamp) })
      const depth = new Map<string, number>()
      cdp.on('Network.requestWillBeSent', (e: { requestId: string; timestamp: number; wallTime: number; request: { url: string } }) => {
        let d = 1
        for (const [id, at] of done) if (at <= e.timestamp) d = Math.max(d, (depth.get(id) ?? 0) + 1)
        sent.set(e.requestId, { at: e.timestamp, wall: e.wallTime * 1000, url: e.request.url })
        depth.set(e.requestId, d)
      })
      cdp.on('Network.loadingFinished', (e: { encodedDataLength: number }) => {
        bytes += e.encodedDataLength
      })
      await page.goto(`${origin}/app/p/${project.id}/contacts`)
      await page.waitForFunction(() => ((window as unknown as { rowsAt?: number }).rowsAt ?? -1) > 0 && (window as unknown as { appAt?: number }).appAt !== undefined, undefined, { timeout: 60_000 })
      // The frame of the rows is on screen at the first contentful paint when that came after them (it is
      // the presentation time, later than the frame's start under load); otherwise at the frame after them.
      const ms = await page.evaluate(() => Math.max((window as unknown as { rowsAt: number }).rowsAt, performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? 0))
      const appMs = await page.evaluate(() => (window as unknown as { appAt: number }).appAt)
      appTimes.push(appMs)
      const rowsWall = await page.evaluate(() => performance.timeOrigin + (window as unknown as { rowsAt: number }).rowsAt)
      times.push(ms)
      // The round trips before the rows: the deepest request whose answer came before they were drawn
      // (its monotonic time turned into wall time by its request's pair of both).
      const before = [...sent].filter(([id, r]) => done.has(id) && (done.get(id) as number) * 1000 + (r.wall - r.at * 1000) < rowsWall)
      const trips = Math.max(0, ...before.map(([id]) => depth.get(id) ?? 0))
      tripsSeen.push(trips)
      if (process.env.BENCH_VERBOSE) {
        for (const [id, r] of before) console.log(`  ${depth.get(id)} ${r.url.replace(origin, '')}`)
        const marks = await page.evaluate(() => {
          const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming
          const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime
          return { responseStart: nav.responseStart, responseEnd: nav.responseEnd, fcp }
        })
        console.log(`  page answer began ${marks.responseStart.toFixed(0)} ms, ended ${marks.responseEnd.toFixed(0)} ms; first contentful paint ${marks.fcp?.toFixed(0)} ms`)
      }
      console.log(`run ${run + 1}: first rows drawn at ${ms.toFixed(0)} ms on Fast 3G, the app's own at ${appMs.toFixed(0)} ms (${(bytes / 1024).toFixed(1)} KB over the wire, ${trips} round trips on the critical path); load average ${load()}`)
    } finally {
      await browser.close()
    }
  }
  times.sort((a, b) => a - b)
  appTimes.sort((a, b) => a - b)
  console.log(`contacts page, first rows on Fast 3G, cold: median ${times[Math.floor(times.length / 2)].toFixed(0)} ms of ${RUNS} (target < 1500 ms; the app's own rows ${appTimes[Math.floor(appTimes.length / 2)].toFixed(0)} ms), ${Math.max(...tripsSeen)} round trips of 562.5 ms on the critical path; load average ${load()}`)
  await app.stop()
} finally {
  await closeDeps(deps)
  rmSync(dir, { recursive: true, force: true })
}
