/**
 * The two queues' hot statements, per row: queueing and claiming 2,000 messages as outbound queue rows
 * (batched insert; claims of 100) and as jobs of the job queue (`enqueue` each; claims of 100). The
 * figures behind the note at the top of src/mail/outbound/queue-repo.ts. Prints figures, asserts nothing.
 *
 *   node_modules/.bin/bun bench/queues.ts [--sqlite | --pg]
 *
 * Foreign keys are off (SQLite) or dropped (its own PostgreSQL database): the rows name no real email.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openStore } from '../src/db/client'
import { migrate } from '../src/db/migrate'
import { claim, enqueue } from '../src/jobs/queue'
import { claimDue, deleteRows, insertQueueRows, type QueueRow } from '../src/mail/outbound/queue-repo'
import { freshPgDatabase } from '../test/helpers/env'

const N = 2000
const ROUNDS = 5

async function measure(url: string): Promise<void> {
  const store = openStore(url, { sqliteSynchronous: 'NORMAL' })
  await migrate(store)
  if (store.dialect === 'sqlite') await store.script('PRAGMA foreign_keys = OFF')
  else await store.script(`DO $$ DECLARE r record; BEGIN FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = 'outbound_queue'::regclass AND contype = 'f' LOOP EXECUTE 'ALTER TABLE outbound_queue DROP CONSTRAINT ' || r.conname; END LOOP; END $$`)
  const res: Record<string, number[]> = { 'queue row: insert': [], 'job: enqueue': [], 'queue row: claim': [], 'job: claim': [] }
  const perRow = (t0: number) => ((performance.now() - t0) / N) * 1000
  for (let r = 0; r < ROUNDS; r++) {
    const now = new Date()
    const rows: QueueRow[] = Array.from({ length: N }, () => ({
      emailId: Bun.randomUUIDv7(), projectId: 'p', domain: 'd.test', priority: 0, runAt: now, attempts: 0,
      lockedBy: null, lockedUntil: null, lastError: null, expiresAt: new Date(now.getTime() + 86_400_000), createdAt: now,
    }))
    let t0 = performance.now()
    await store.tx(async (db) => { await insertQueueRows(store, db, rows) })
    res['queue row: insert'].push(perRow(t0))
    t0 = performance.now()
    await store.tx(async (db) => { for (const row of rows) await enqueue(store, 'deliver', { emailId: row.emailId }, { wake: null, now: new Date() }, db) })
    res['job: enqueue'].push(perRow(t0))
    const later = () => new Date(Date.now() + 1)
    t0 = performance.now()
    for (let n = 0; n < N;) n += (await claimDue(store, 'bench', 100, 300_000, later())).length
    res['queue row: claim'].push(perRow(t0))
    t0 = performance.now()
    for (let n = 0; n < N;) n += (await claim(store, ['deliver'], 'bench', 100, 300_000, later())).length
    res['job: claim'].push(perRow(t0))
    await store.tx(async (db) => { await deleteRows(store, db, rows.map((x) => x.emailId)) })
    await store.exec(sql`DELETE FROM jobs`)
  }
  const median = (a: number[]) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)]
  for (const [k, v] of Object.entries(res)) {
    console.log(`${store.dialect.padEnd(6)} ${k.padEnd(18)} ${median(v).toFixed(1).padStart(8)} µs/row  (runs: ${v.map((x) => x.toFixed(1)).join(', ')})`)
  }
  await store.close()
}

const only = process.argv.includes('--sqlite') ? 'sqlite' : process.argv.includes('--pg') ? 'pg' : null
if (only !== 'pg') {
  const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-queues-'))
  try { await measure(`sqlite://${join(dir, 'bench.db')}`) } finally { rmSync(dir, { recursive: true, force: true }) }
}
if (only !== 'sqlite') {
  const db = await freshPgDatabase()
  try { await measure(db.url) } finally { await db.drop() }
}
