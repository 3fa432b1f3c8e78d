/**
 * The dashboard's contacts page on a project of 1,000,000 contacts: the time from navigation
 * (page.goto of /app/p/<id>/contacts) to the table showing 50 rows, in Debian's Chromium on loopback.
 * Target: under 1 s. Prints figures; asserts nothing.
 *
 *   node_modules/.bin/bun bench/dashboard.ts              (BENCH_CONTACTS=1000000, BENCH_STORE=sqlite)
 *   BENCH_STORE=pg node_modules/.bin/bun bench/dashboard.ts   (a fresh database on MAILCTL_TEST_PG_URL's server)
 *
 * The filtered list too: every contact has `plan` (pro, free or team) and a `name` (one in a
 * thousand is "Anna Müller"). Printed: POST /contacts/query for a condition (plan = pro), for a search of a
 * name ("muller": case and accents folded, over the email and the text fields) and for both, each as the
 * page asks it (the first rows without the count, then the count apart), and in the browser the time from
 * typing the search to the table showing the matches. Then a term of one match ("user 123456", read by key from
 * the in-memory copy) and one of about 111,000 ("user 1", past the keyed limit: its first candidates in page order by key).
 *
 * BENCH_FIXTURE=<dir> keeps the seeded contacts for the next run (SQLite: the database file in that directory;
 * PostgreSQL: a database named after the directory's last part on MAILCTL_TEST_PG_URL's server, kept), so a
 * second run skips the seeding; delete the directory (and the database) to start over.
 *
 * The first navigation (a cold browser profile and the server bundling the page on its first request)
 * is printed apart from the next five, each a fresh page in the same browser (HTTP cache warm, as for a
 * person coming back), then the bundle size. The page shows the rows first and the total when its count
 * arrives (GET /contacts?total=false, then the count apart): both times are printed. They are taken in
 * the page (performance.now() from the navigation's start, when a MutationObserver first sees the 50th row
 * and the total), because this process also runs the server: a synchronous SQLite count in it holds up
 * playwright's messages, so a clock here would stop when the count ends, not when the rows appear.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config'
import { closeDeps, createDeps } from '../src/main'
import { buildApp } from '../src/http/app'
import { createProject } from '../src/modules/projects/service'
import { createUser } from '../src/modules/users/service'
import { PG_ADMIN_URL } from '../test/helpers/env'
import { chromiumAvailable, launch } from '../test/web/browser'
import { freshPgDatabase } from '../test/helpers/env'
import { measureDashboard } from './web-size'

const N = Number(process.env.BENCH_CONTACTS ?? 1_000_000)
const PG = process.env.BENCH_STORE === 'pg'

if (!chromiumAvailable()) process.exit(1)
const FIXTURE = process.env.BENCH_FIXTURE
const dir = FIXTURE ?? mkdtempSync(join(tmpdir(), 'mailctl-bench-dash-'))
const reuse = FIXTURE !== undefined && existsSync(join(dir, 'seeded'))
if (FIXTURE) mkdirSync(dir, { recursive: true })
/** A database kept between runs of the same fixture. */
async function fixtureDatabase(name: string) {
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} })
  if (!reuse) {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.unsafe(`CREATE DATABASE ${name}`)
  }
  await admin.end()
  const u = new URL(PG_ADMIN_URL)
  u.pathname = `/${name}`
  return { url: u.toString(), drop: async () => {} }
}
const pgDb = PG ? (FIXTURE ? await fixtureDatabase(`mailctl_bench_${basename(dir).replace(/\W/g, '_')}`) : await freshPgDatabase()) : null
const config = loadConfig({ env: {}, overrides: { dataDir: dir, databaseUrl: pgDb ? pgDb.url : `sqlite://${join(dir, 'bench.db')}`, logLevel: 'warn', jwtSecret: 'bench', ...(PG ? { secret: 'bench-secret-for-the-dashboard-benchmark-only-0123456789' } : {}), rateLimitPerMinute: 1_000_000, sqliteSynchronous: 'NORMAL' } })
console.log(`store: ${PG ? 'PostgreSQL' : 'SQLite'}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
const deps = await createDeps(config)
const browser = await launch()
try {
  const project = reuse
    ? (await deps.store.rows<{ id: string }>(sql`SELECT id FROM projects WHERE name = 'bench'`))[0]
    : await createProject(deps.store, { name: 'bench', ownerUserId: (await createUser(deps, { email: 'bench@example.com', password: 'bench password 1' }, { verified: true })).id })
  const t0 = performance.now()
  const base = Date.parse('2024-01-01T00:00:00Z')
  for (let start = 0; start < (reuse ? 0 : N); start += 100_000) {
    const end = Math.min(N, start + 100_000) - 1
    if (PG) {
      await deps.store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT lpad(i::text, 8, '0'), ${project.id}, 'user' || i || '@example' || (i % 1000) || '.com', (i % 10) <> 0,
          jsonb_build_object('plan', (ARRAY['pro','free','team'])[i % 3 + 1], 'name', CASE WHEN i % 1000 = 7 THEN 'Anna Müller' ELSE 'User ' || i END),
          to_timestamp(${base / 1000}::bigint + i), to_timestamp(${base / 1000}::bigint + i)
        FROM generate_series(${start}::int, ${end}::int) AS i`)
      continue
    }
    await deps.store.exec(sql`WITH RECURSIVE n(i) AS (SELECT ${start} UNION ALL SELECT i + 1 FROM n WHERE i < ${end})
      INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
      SELECT printf('%08d', i), ${project.id}, 'user' || i || '@example' || (i % 1000) || '.com', (i % 10) != 0,
        json_object('plan', CASE i % 3 WHEN 0 THEN 'pro' WHEN 1 THEN 'free' ELSE 'team' END, 'name', CASE WHEN i % 1000 = 7 THEN 'Anna Müller' ELSE 'User ' || i END),
        ${base} + i * 1000, ${base} + i * 1000 FROM n`)
  }
  if (PG && !reuse) await deps.store.exec(sql`ANALYZE contacts`)
  if (FIXTURE && !reuse) await Bun.write(join(dir, 'seeded'), String(N))
  console.log(reuse ? `reused the fixture in ${dir}` : `seeded ${N.toLocaleString('en')} contacts in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

  const app = buildApp(deps)
  app.listen({ port: 0, hostname: '127.0.0.1' })
  const origin = `http://127.0.0.1:${app.server?.port}`
  const login = await fetch(`${origin}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'bench@example.com', password: 'bench password 1' }) })
  const token = (login.headers.get('set-cookie') ?? '').split(';')[0].split('=').slice(1).join('=')
  await browser.context.addCookies([{ name: 'mailctl_session', value: token, url: origin }])

  const url = `${origin}/app/p/${project.id}/contacts`
  await browser.context.addInitScript(() => {
    const w = window as unknown as { rowsAt?: number; totalAt?: number }
    new MutationObserver(() => {
      if (w.rowsAt === undefined && document.querySelector('tbody tr:nth-child(50)')) w.rowsAt = performance.now()
      if (w.totalAt === undefined && /^(about )?[\d,]+ contacts/.test(document.querySelector('p[aria-live]')?.textContent ?? '')) w.totalAt = performance.now()
    }).observe(document, { childList: true, subtree: true, characterData: true })
  })
  const visit = async () => {
    const page = await browser.context.newPage()
    await page.goto(url)
    await page.locator('tbody tr:nth-child(50)').waitFor()
    const rows = await page.locator('tbody tr').count()
    const total = await page.getByText(/ contacts$/).textContent()
    const at = await page.evaluate(() => {
      const w = window as unknown as { rowsAt: number; totalAt: number }
      return { rowsAt: w.rowsAt, totalAt: w.totalAt }
    })
    const [ms, totalMs] = [at.rowsAt, at.totalAt]
    if (process.env.BENCH_TRACE) {
      const entries = await page.evaluate(() => (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).map((e) => `${e.name.replace(location.origin, '')} start ${e.startTime.toFixed(0)} end ${e.responseEnd.toFixed(0)}`))
      console.log(entries.join('\n'))
    }
    await page.close()
    return { ms, rows, total, totalMs }
  }
  const cold = await visit()
  console.log(`contacts page, first navigation (server bundles /app/, cold profile): ${cold.ms.toFixed(0)} ms to ${cold.rows} rows, ${cold.totalMs.toFixed(0)} ms to the total (${cold.total})`)
  const times: number[] = []
  const totals: number[] = []
  for (let i = 0; i < 5; i++) {
    const v = await visit()
    times.push(v.ms)
    totals.push(v.totalMs)
  }
  times.sort((a, b) => a - b)
  totals.sort((a, b) => a - b)
  console.log(`contacts page, next 5 navigations: median ${times[2].toFixed(0)} ms, worst ${times[4].toFixed(0)} ms to 50 rows (target < 1000 ms); the total shown after median ${totals[2].toFixed(0)} ms`)
  for (const [query, what] of [['limit=50&total=false', 'the rows the page shows first'], ['limit=50', 'first page with the total']]) {
    const api: number[] = []
    for (let i = 0; i < 5; i++) {
      const t = performance.now()
      await fetch(`${origin}/contacts?${query}`, { headers: { cookie: `mailctl_session=${token}`, 'x-project-id': project.id } }).then((r) => r.arrayBuffer())
      api.push(performance.now() - t)
    }
    api.sort((a, b) => a - b)
    console.log(`  GET /contacts?${query} (${what}): median ${api[2].toFixed(0)} ms`)
  }
  // The in-memory copy the searches read is built by a project's first search (the dashboard's search
  // answers in SQL meanwhile); GET /contacts?search= waits for it: timed apart, then every search reads it.
  {
    const t = performance.now()
    await fetch(`${origin}/contacts?limit=1&search=zz-warm`, { headers: { cookie: `mailctl_session=${token}`, 'x-project-id': project.id } }).then((r) => r.arrayBuffer())
    console.log(`  the search copy built (GET /contacts?search=, first of the process): ${(performance.now() - t).toFixed(0)} ms`)
  }
  // The filtered list through POST /contacts/query, as the page asks it.
  const pro = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }
  const headers = { cookie: `mailctl_session=${token}`, 'x-project-id': project.id, 'content-type': 'application/json', origin }
  for (const [body, what] of [
    [{ condition: pro, limit: 50, total: false }, 'condition plan = pro, first 50 rows'],
    [{ condition: pro, estimate: true }, 'condition plan = pro, count as the page asks it (estimate: true)'],
    [{ condition: pro }, 'condition plan = pro, exact count'],
    [{ search: 'muller', limit: 50, total: false }, 'search "muller" (email and text fields), first 50 rows'],
    [{ search: 'muller', condition: pro, limit: 50, total: false }, 'search "muller" and plan = pro, first 50 rows'],
    [{ search: 'muller', estimate: true }, 'search "muller", count as the page asks it (estimate: true)'],
    [{ search: 'muller' }, 'search "muller", exact count'],
    [{ search: 'user 123456', limit: 50, total: false }, 'search "user 123456" (one match), first rows'],
    [{ search: 'user 123456', estimate: true }, 'search "user 123456", count as the page asks it'],
    [{ search: 'user 1', limit: 50, total: false }, 'search "user 1" (about 111,000 candidates: past the keyed limit), first 50 rows'],
    [{ search: 'user 1', condition: pro, limit: 50, total: false }, 'search "user 1" and plan = pro, first 50 rows'],
    [{ search: 'user 1', estimate: true }, 'search "user 1", count as the page asks it'],
  ] as Array<[Record<string, unknown>, string]>) {
    const path = 'limit' in body ? '/contacts/query' : '/contacts/query/count'
    const api: number[] = []
    let shown = ''
    for (let i = 0; i < 5; i++) {
      const t = performance.now()
      const r = await fetch(`${origin}${path}`, { method: 'POST', headers, body: JSON.stringify(body) }).then((x) => x.json()) as { data?: unknown[]; total?: number; estimated?: boolean }
      api.push(performance.now() - t)
      shown = r.data ? `${r.data.length} rows` : `${r.estimated ? 'estimated' : 'total'} ${r.total}`
    }
    api.sort((a, b) => a - b)
    console.log(`  POST ${path} ${what}: median ${api[2].toFixed(0)} ms, worst ${api[4].toFixed(0)} ms (${shown}; target < 1000 ms)`)
  }
  {
    const page = await browser.context.newPage()
    const typed: number[] = []
    for (let i = 0; i < 3; i++) {
      await page.goto(url)
      await page.locator('tbody tr:nth-child(50)').waitFor()
      const t = performance.now()
      await page.getByLabel('Search email and fields').fill('muller')
      await page.waitForFunction(() => {
        const cells = [...document.querySelectorAll('tbody tr td:nth-child(2)')]
        return cells.length === 50 && cells.every((td) => /user\d*7@/.test(td.textContent ?? ''))
      })
      typed.push(performance.now() - t)
    }
    typed.sort((a, b) => a - b)
    console.log(`contacts page, search "muller" typed: median ${typed[1].toFixed(0)} ms to the 50 matching rows (includes the page's 250 ms typing pause)`)
    await page.close()
  }
  const size = await measureDashboard()
  console.log(`dashboard first load: ${(size.gzip / 1024).toFixed(1)} KB gzip of JS+CSS (${(size.raw / 1024).toFixed(1)} KB raw)`)
  await app.stop()
} finally {
  await browser.close()
  await closeDeps(deps)
  if (!FIXTURE) rmSync(dir, { recursive: true, force: true })
  await pgDb?.drop()
}
