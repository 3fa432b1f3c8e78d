/**
 * `mailctl backup` of a large SQLite install while POST /v1/track runs at full load,
 * then its restore, `mailctl store copy` of the same install to PostgreSQL, and a backup and restore of
 * that PostgreSQL copy.
 *
 *   node_modules/.bin/bun bench/backup.ts
 *   (BENCH_CONTACTS=1000000 BENCH_EVENTS=5000000: the install's size; the defaults are scaled down to
 *    200,000 and 1,000,000 to fit a shared 2-core machine's time; BENCH_SECONDS=10: each baseline run;
 *    BENCH_CONNECTIONS=64; BENCH_PG_URL: the PostgreSQL admin URL, default the test server's)
 *
 * The install is generated with plain INSERTs into a migrated store (contacts with data, events spread over
 * 30 days). The server is bench/_track-server.ts (the real app, one process). The track rate is measured
 * for BENCH_SECONDS before the backup, during the whole backup (a separate `mailctl backup` process, as an
 * operator runs it), and BENCH_SECONDS after; the figure is the rate during the backup over the mean of the
 * two runs without one (target >= 0.7). Prints figures; asserts nothing.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { loadConfig } from '../src/config'
import { openStore } from '../src/db/client'
import { migrate } from '../src/db/migrate'
import { createProject } from '../src/modules/projects/service'
import { fmt, runLoad, startChild, type LoadResult, type Req } from './_load'

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 200_000)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const ROOT = join(import.meta.dir, '..')
const BUN = process.execPath
const CLI = join(ROOT, 'cli', 'mailctl.ts')
const SERVER = join(import.meta.dir, '_track-server.ts')
const JWT = 'bench'

const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-backup-'))
const dataDir = join(dir, 'data')
const dbFile = join(dataDir, 'mailctl.db')
const pgDbs: string[] = []

async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string; ms: number }> {
  const t0 = performance.now()
  const p = Bun.spawn([BUN, CLI, ...args], { env: { PATH: process.env.PATH ?? '', MAILCTL_LOG_LEVEL: 'warn', ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, out, err, ms: performance.now() - t0 }
}

async function freshPg(): Promise<string> {
  const name = `mailctl_bench_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
  const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  pgDbs.push(name)
  const u = new URL(PG_ADMIN)
  u.pathname = `/${name}`
  return u.toString()
}

/** The large install: a migrated store, one project, CONTACTS contacts and EVENTS events. */
async function generate(): Promise<void> {
  const t0 = performance.now()
  const config = loadConfig({ env: {}, overrides: { dataDir, databaseUrl: `sqlite://${dbFile}`, jwtSecret: JWT, logLevel: 'silent' } })
  const store = openStore(config.databaseUrl, { sqliteSynchronous: 'NORMAL' })
  await migrate(store)
  const project = await createProject(store, { name: 'large' })
  await store.close()
  const db = new Database(dbFile)
  db.run('PRAGMA journal_mode = WAL')
  db.run('PRAGMA synchronous = OFF')
  const now = Date.now()
  const contact = db.prepare('INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?)')
  const event = db.prepare('INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (?, ?, ?, ?, ?, ?)')
  const ids: string[] = []
  const plans = ['free', 'pro', 'team']
  const batch = 50_000
  for (let i = 0; i < CONTACTS; i += batch) {
    db.transaction(() => {
      for (let k = i; k < Math.min(CONTACTS, i + batch); k++) {
        const id = Bun.randomUUIDv7()
        ids.push(id)
        const at = now - 30 * 86_400_000 + Math.floor((k / CONTACTS) * 30 * 86_400_000)
        contact.run(id, project.id, `user${k}@example.com`, JSON.stringify({ plan: plans[k % 3], firstName: `User${k}`, score: k % 100 }), at, at)
      }
    })()
  }
  const names = ['page.viewed', 'page.viewed', 'order.placed', 'signup', 'email.open']
  for (let i = 0; i < EVENTS; i += batch) {
    db.transaction(() => {
      for (let k = i; k < Math.min(EVENTS, i + batch); k++) {
        const at = now - 30 * 86_400_000 + Math.floor((k / EVENTS) * 30 * 86_400_000)
        event.run(Bun.randomUUIDv7(), project.id, ids[k % ids.length], names[k % names.length], JSON.stringify({ path: `/p/${k % 500}`, amount: k % 7 }), at)
      }
    })()
  }
  db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
  console.log(`generated ${CONTACTS.toLocaleString('en')} contacts and ${EVENTS.toLocaleString('en')} events in ${((performance.now() - t0) / 1000).toFixed(0)} s; database ${(statSync(dbFile).size / 1e6).toFixed(0)} MB`)
}

function tracks(publicKey: string, tag: string) {
  return (conn: number, i: number): Req => {
    const email = Math.random() < 0.5 ? `user${Math.floor(Math.random() * CONTACTS)}@example.com` : `new-${tag}-${conn}-${i}@example.com`
    return { method: 'POST', path: '/v1/track', headers: { authorization: `Bearer ${publicKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ email, event: 'page.viewed', data: { path: `/x/${i % 50}` } }) }
  }
}

try {
  console.log(`backup of a SQLite install under POST /v1/track load (${CONNECTIONS} connections); figures from a shared machine`)
  if (CONTACTS < 1_000_000 || EVENTS < 5_000_000) console.log(`  scaled down from 1,000,000 contacts / 5,000,000 events to fit the session (BENCH_CONTACTS, BENCH_EVENTS set the size)`)
  await generate()
  const { proc, info } = await startChild<{ port: number; publicKey: string }>(SERVER, [dataDir, '0'], { BENCH_LOG_LEVEL: 'warn' })
  const archive = join(dir, 'backup.tar')
  let during: LoadResult
  let backupMs = 0
  let before: LoadResult
  let after: LoadResult
  try {
    await runLoad({ port: info.port, connections: CONNECTIONS, seconds: 2, next: tracks(info.publicKey, 'w') })
    before = await runLoad({ port: info.port, connections: CONNECTIONS, seconds: SECONDS, next: tracks(info.publicKey, 'b') })
    console.log(fmt('  track, no backup (before)', before))
    let done = false
    const backup = cli(['backup', archive, '--json'], { MAILCTL_DATA_DIR: dataDir, MAILCTL_JWT_SECRET: JWT }).then((r) => { done = true; return r })
    let bad = ''
    during = await runLoad({ port: info.port, connections: CONNECTIONS, seconds: 3600, next: tracks(info.publicKey, 'd'), stopWhen: () => done, onAnswer: (a) => { if (a.status !== 200 && !bad) bad = `${a.status} ${a.body}` } })
    const b = await backup
    if (b.code !== 0) throw new Error(`backup failed: ${b.err}`)
    backupMs = b.ms
    console.log(fmt('  track, during the backup', during))
    if (bad) console.log(`  an answer during the backup was not 200: ${bad}`)
    after = await runLoad({ port: info.port, connections: CONNECTIONS, seconds: SECONDS, next: tracks(info.publicKey, 'a') })
    console.log(fmt('  track, no backup (after)', after))
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
  }
  const baseline = (before.rps + after.rps) / 2
  console.log(`backup: ${(backupMs / 1000).toFixed(1)} s (the whole command: start, VACUUM INTO, archive, fsync), archive ${(statSync(archive).size / 1e6).toFixed(0)} MB`)
  console.log(`track rate during the backup / without: ${during.rps.toFixed(0)} / ${baseline.toFixed(0)} = ${(during.rps / baseline).toFixed(2)} (target >= 0.70: ${during.rps / baseline >= 0.7 ? 'met' : 'NOT met'})`)

  // The archive restores to the row counts of its manifest (restore checks each table's count).
  const restoreDir = join(dir, 'restored')
  const r = await cli(['restore', archive, '--json'], { MAILCTL_DATA_DIR: restoreDir, MAILCTL_JWT_SECRET: JWT })
  if (r.code !== 0) throw new Error(`restore failed: ${r.err}`)
  const restored = JSON.parse(r.out) as { tables: Array<{ name: string; rows: number }> }
  const count = (t: string, of: Array<{ name: string; rows: number }>) => of.find((x) => x.name === t)?.rows ?? 0
  console.log(`restore: ${(r.ms / 1000).toFixed(1)} s; contacts ${count('contacts', restored.tables).toLocaleString('en')}, events ${count('events', restored.tables).toLocaleString('en')} (the manifest's counts, checked table by table)`)
  rmSync(restoreDir, { recursive: true, force: true })

  // store copy of the same install (server stopped: the final pass of a switch).
  const pgUrl = await freshPg()
  const c = await cli(['store', 'copy', '--to', pgUrl, '--json'], { MAILCTL_DATA_DIR: dataDir, MAILCTL_JWT_SECRET: JWT })
  if (c.code !== 0) throw new Error(`store copy failed: ${c.err || c.out.slice(0, 2000)}`)
  const copied = JSON.parse(c.out) as { durationMs: number; tables: Array<{ name: string; rows: number; ok: boolean }> }
  const rows = copied.tables.reduce((n, t) => n + t.rows, 0)
  console.log(`store copy to PostgreSQL: ${(c.ms / 1000).toFixed(1)} s (copy and verification ${(copied.durationMs / 1000).toFixed(1)} s), ${rows.toLocaleString('en')} rows, ${copied.tables.every((t) => t.ok) ? 'every table verified' : 'VERIFICATION FAILED'}; ${(rows / (copied.durationMs / 1000)).toFixed(0)} rows/s`)

  // PostgreSQL: a backup of that copy (one REPEATABLE READ snapshot) and its restore into another database.
  const pgEnv = (url: string) => ({ DATABASE_URL: url, MAILCTL_DATA_DIR: join(dir, 'pgdata'), ...JSON.parse(c.out).settings })
  const pgArchive = join(dir, 'pg.tar')
  const pb = await cli(['backup', pgArchive, '--json'], pgEnv(pgUrl))
  if (pb.code !== 0) throw new Error(`pg backup failed: ${pb.err}`)
  const pgTarget = await freshPg()
  const pr = await cli(['restore', pgArchive, '--json'], pgEnv(pgTarget))
  if (pr.code !== 0) throw new Error(`pg restore failed: ${pr.err}`)
  const pgRestored = JSON.parse(pr.out) as { tables: Array<{ name: string; rows: number }> }
  console.log(`PostgreSQL backup: ${(pb.ms / 1000).toFixed(1)} s (archive ${(statSync(pgArchive).size / 1e6).toFixed(0)} MB, no load); restore: ${(pr.ms / 1000).toFixed(1)} s; events ${count('events', pgRestored.tables).toLocaleString('en')}`)
} finally {
  const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} })
  for (const name of pgDbs) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
  await admin.end()
  rmSync(dir, { recursive: true, force: true })
}
