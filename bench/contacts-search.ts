/**
 * GET /contacts?search= on 1,000,000 contacts: time to answer the first page (which includes the exact
 * `total`). Target: under 50 ms. SQLite always; PostgreSQL too when BENCH_PG_URL is set
 * (e.g. postgres://postgres@127.0.0.1:5432/test).
 *
 *   node_modules/.bin/bun bench/contacts-search.ts        (BENCH_CONTACTS=1000000, BENCH_SKIP_SQLITE=1)
 *
 * The project holds BENCH_CONTACTS contacts (emails user<i>@<domain>, a quarter on gmail.com, a quarter
 * on one of 1,000 example<n>.com domains), plus 10,000 in a second project. Each search runs through the
 * real app (app.handle: auth, validation, service, repo) five times; the median and the worst are
 * printed with the number of matches; then the first search after new contacts, and what the search
 * index's triggers cost each contact write. Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { freshPgDatabase } from '../test/helpers/env'
import { loadConfig } from '../src/config'
import { closeDeps, createDeps } from '../src/main'
import { buildApp } from '../src/http/app'
import { createProject } from '../src/modules/projects/service'
import type { Store } from '../src/db/client'

const N = Number(process.env.BENCH_CONTACTS ?? 1_000_000)

const SEARCHES: Array<[string, string]> = [
  ['user123456@', 'one contact'],
  ['user12345', 'a handful'],
  ['142@example', 'a thousand'],
  ['example7', 'thousands (2.8%)'],
  ['gmail', 'a quarter'],
  ['no-such-address', 'none'],
  ['ab', 'a 2-letter term'],
]

async function seed(store: Store, projectId: string, n: number, prefix: string) {
  const base = Date.parse('2024-01-01T00:00:00Z')
  for (let start = 0; start < n; start += 100_000) {
    const end = Math.min(n, start + 100_000) - 1
    const domain = sql`CASE i % 4 WHEN 0 THEN 'gmail.com' WHEN 1 THEN 'yahoo.com' WHEN 2 THEN 'example' || (i % 1000) || '.com' ELSE 'corp.io' END`
    if (store.dialect === 'sqlite') {
      await store.exec(sql`WITH RECURSIVE n(i) AS (SELECT ${start} UNION ALL SELECT i + 1 FROM n WHERE i < ${end})
        INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT ${prefix} || printf('%08d', i), ${projectId}, ${prefix} || 'user' || i || '@' || ${domain}, (i % 10) != 0,
          '{"plan":"pro"}', ${base} + i * 1000, ${base} + i * 1000 FROM n`)
    } else {
      await store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
        SELECT ${prefix} || lpad(i::text, 8, '0'), ${projectId}, ${prefix} || 'user' || i || '@' || ${domain}, (i % 10) != 0,
          '{"plan":"pro"}'::jsonb, to_timestamp((${base}::bigint + i * 1000) / 1000.0), to_timestamp((${base}::bigint + i * 1000) / 1000.0)
        FROM generate_series(${start}::int, ${end}::int) AS g(i)`)
    }
  }
  // Statistics as autovacuum would have them by now (without, the planner scans the change log).
  if (store.dialect === 'pg') await store.exec(sql`ANALYZE contacts, contact_changes, contact_search_keys`)
}

async function run(label: string, databaseUrl: string, dataDir: string) {
  const config = loadConfig({ env: {}, overrides: { dataDir, databaseUrl, logLevel: 'warn', jwtSecret: 'bench', secret: 'bench-secret-shared-by-every-node', rateLimitPerMinute: 1_000_000, sqliteSynchronous: 'NORMAL' } })
  const deps = await createDeps(config)
  try {
    const project = await createProject(deps.store, { name: 'bench' })
    const other = await createProject(deps.store, { name: 'other' })
    const t0 = performance.now()
    await seed(deps.store, project.id, N, '')
    await seed(deps.store, other.id, 10_000, 'o-')
    console.log(`${label}: seeded ${N.toLocaleString('en')} + 10,000 contacts in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    const app = buildApp(deps)
    const get = async (query: string) => {
      const t = performance.now()
      const res = await app.handle(new Request(`http://localhost/contacts?${query}`, { headers: { authorization: `Bearer ${project.secretKey}` } }))
      const body = (await res.json()) as { total: number; data: unknown[] }
      if (res.status !== 200) throw new Error(`${query}: ${res.status} ${JSON.stringify(body)}`)
      return { ms: performance.now() - t, total: body.total, page: body.data.length }
    }
    const first = await get('search=gmail')
    console.log(`  ${'first search of the project (builds the index)'.padEnd(42)} ${first.ms.toFixed(1).padStart(14)} ms${' '.repeat(17)}total ${String(first.total).padStart(8)}`)
    const cases: Array<[string, string]> = [['', 'no search (first page, total of all)'], ...SEARCHES.map(([q, what]): [string, string] => [`search=${encodeURIComponent(q)}`, `"${q}" - ${what}`]), ['search=example7&subscribed=false', '"example7" + subscribed=false'], ['search=user12345&sort=email&dir=asc', '"user12345", sort=email'], ['search=gmail&sort=email&dir=asc', '"gmail", sort=email'], ['search=e', '"e" - a 1-letter term (every contact)']]
    for (const [query, what] of cases) {
      const times: number[] = []
      let last = { total: 0, page: 0 }
      for (let i = 0; i < 5; i++) { const r = await get(query); times.push(r.ms); last = r }
      times.sort((a, b) => a - b)
      const ok = times[2] < 50 ? 'ok' : 'SLOW'
      console.log(`  ${what.padEnd(42)} median ${times[2].toFixed(1).padStart(7)} ms  worst ${times[4].toFixed(1).padStart(7)} ms  total ${String(last.total).padStart(8)}  page ${last.page}  ${ok}`)
    }
    // New contacts since the last search: the next search first applies them (SQLite: the change log).
    for (const n of [1_000, 10_000]) {
      await seed(deps.store, project.id, n, `n${n}-`)
      const r = await get('search=gmail')
      console.log(`  ${`"gmail" after ${n.toLocaleString('en')} new contacts`.padEnd(42)} ${r.ms.toFixed(1).padStart(14)} ms${' '.repeat(17)}total ${String(r.total).padStart(8)}`)
    }
    await writeCost(deps.store, project.id)
  } finally {
    await closeDeps(deps)
  }
}

/**
 * What the search index's triggers (migration 0009) cost the contact write path: new contacts inserted
 * and existing ones updated as the upsert does (100 per transaction, as the track writer groups them; on
 * SQLite statements compiled once), with the triggers, then with them dropped (the database is thrown
 * away afterwards). Each figure is the median of 5 runs of 2,000 rows.
 */
async function writeCost(store: Store, projectId: string) {
  const client = (db: unknown) => (db as { $client: { query(t: string): { run(...p: unknown[]): unknown } } }).$client
  let serial = 0
  const insert = async (ids: string[]) => {
    await store.tx(async (db) => {
      if (store.dialect === 'sqlite') {
        const q = client(db).query('INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT (project_id, email) DO NOTHING')
        for (const id of ids) q.run(id, projectId, `writer-${id}@host${serial % 97}.com`, '{"plan":"pro"}', Date.now(), Date.now())
      } else {
        for (const id of ids) {
          await store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
            VALUES (${id}, ${projectId}, ${`writer-${id}@host${serial % 97}.com`}, true, '{"plan":"pro"}'::jsonb, now(), now()) ON CONFLICT (project_id, email) DO NOTHING`, db)
        }
      }
    })
  }
  const update = async (ids: string[]) => {
    await store.tx(async (db) => {
      if (store.dialect === 'sqlite') {
        const q = client(db).query('UPDATE contacts SET subscribed = ?, data = ?, updated_at = ? WHERE project_id = ? AND id = ?')
        for (const id of ids) q.run(1, '{"plan":"team"}', Date.now(), projectId, id)
      } else {
        for (const id of ids) await store.exec(sql`UPDATE contacts SET subscribed = true, data = '{"plan":"team"}'::jsonb, updated_at = now() WHERE project_id = ${projectId} AND id = ${id}`, db)
      }
    })
  }
  const measure = async () => {
    const ins: number[] = []
    const upd: number[] = []
    for (let run = 0; run < 5; run++) {
      const ids = Array.from({ length: 2000 }, () => `w${serial++}`)
      let t = performance.now()
      for (let b = 0; b < ids.length; b += 100) await insert(ids.slice(b, b + 100))
      ins.push((performance.now() - t) * 1000 / ids.length)
      t = performance.now()
      for (let b = 0; b < ids.length; b += 100) await update(ids.slice(b, b + 100))
      upd.push((performance.now() - t) * 1000 / ids.length)
    }
    // One statement of 20,000 rows: the database's own cost per contact, without round trips.
    const bulk: number[] = []
    for (let run = 0; run < 3; run++) {
      const from = serial
      serial += 20_000
      const t = performance.now()
      if (store.dialect === 'sqlite') {
        await store.exec(sql`WITH RECURSIVE g(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM g WHERE i < ${serial - 1})
          INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
          SELECT 'b' || i, ${projectId}, 'bulk' || i || '@host.com', 1, '{}', i, i FROM g`)
      } else {
        await store.exec(sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
          SELECT 'b' || i, ${projectId}, 'bulk' || i || '@host.com', true, '{}'::jsonb, now(), now() FROM generate_series(${from}::int, ${serial - 1}::int) AS g(i)`)
      }
      bulk.push((performance.now() - t) * 1000 / 20_000)
    }
    const med = (v: number[]) => v.sort((a, b) => a - b)[(v.length - 1) >> 1].toFixed(1)
    return `insert ${med(ins)} us/contact, update ${med(upd)} us/contact; one 20,000-row INSERT ${med(bulk)} us/contact`
  }
  console.log(`  write path with the search triggers:        ${await measure()}`)
  for (const t of ['contact_changes_ai', 'contact_changes_ad', 'contact_changes_au', ...(store.dialect === 'pg' ? ['contact_changes_aus'] : [])]) await store.exec(sql.raw(`DROP TRIGGER ${t}${store.dialect === 'pg' ? ' ON contacts' : ''}`))
  console.log(`  write path without them:                    ${await measure()}`)
}

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-search-'))
try {
  if (!process.env.BENCH_SKIP_SQLITE) await run('sqlite', `sqlite://${dir}/mailctl.db`, dir)
  if (process.env.BENCH_PG_URL) {
    const db = await freshPgDatabase(process.env.BENCH_PG_URL)
    try { await run('postgres', db.url, dir) } finally {
      await db.drop()
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
