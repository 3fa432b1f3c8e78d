/**
 * CSV import: a ~5 MB file of about 50,000 rows (10 columns, typed values, 1 bad row in 1,000) uploaded
 * with POST /contacts/import and processed by the import job, on SQLite (and PostgreSQL when
 * BENCH_PG_URL is set, e.g. postgres://postgres@127.0.0.1:5432/test). Target: under 5 s.
 * Then the same file again (every row unchanged).
 *
 *   node_modules/.bin/bun bench/import.ts
 *
 * Measured in one process: upload (multipart parse, header check, storing the file, queueing the job),
 * then the job (CSV parse, typing, upserts in batches of 1,000, progress rows). Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshPgDatabase } from '../test/helpers/env'
import { loadConfig } from '../src/config'
import { createDeps, closeDeps } from '../src/main'
import { buildApp } from '../src/http/app'
import { Worker } from '../src/jobs/queue'
import { contactJobs } from '../src/modules/contacts/jobs'
import { createProject } from '../src/modules/projects/service'

function makeCsv(): { csv: string; rows: number } {
  const lines = ['email,first_name,last_name,company,plan,seats,active,signup_date,city,notes']
  let size = lines[0].length
  for (let i = 0; size < 5_000_000; i++) {
    const line = i % 1000 === 999
      ? `broken-${i},X,Y,Z,pro,1,true,2024-01-01,Town,bad row`
      : `user${i}@example${i % 50}.com,First${i},Last${i},Company ${i % 300},${i % 2 ? 'pro' : 'free'},${i % 40},${i % 3 ? 'true' : 'false'},2023-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')},City ${i % 77},"notes, ${i}"`
    lines.push(line)
    size += line.length + 1
  }
  return { csv: `${lines.join('\n')}\n`, rows: lines.length - 1 }
}

async function run(label: string, databaseUrl: string, dataDir: string, csv: string, rows: number) {
  const config = loadConfig({ env: {}, overrides: { dataDir, databaseUrl, logLevel: 'warn', jwtSecret: 'bench', secret: 'bench-secret-shared-by-every-node', rateLimitPerMinute: 1_000_000 } })
  const deps = await createDeps(config)
  try {
    const project = await createProject(deps.store, { name: 'bench' })
    const app = buildApp(deps)
    const worker = new Worker(deps, contactJobs)
    for (const round of ['first import', 're-import (unchanged)']) {
      const form = new FormData()
      form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv')
      const t0 = performance.now()
      const res = await app.handle(new Request('http://localhost/contacts/import', { method: 'POST', headers: { authorization: `Bearer ${project.secretKey}` }, body: form }))
      const { jobId } = (await res.json()) as { jobId: string }
      const t1 = performance.now()
      await worker.drain()
      const t2 = performance.now()
      const job = (await (await app.handle(new Request(`http://localhost/contacts/import/${jobId}`, { headers: { authorization: `Bearer ${project.secretKey}` } }))).json()) as { status: string; result: Record<string, number> }
      const r = job.result
      console.log(`${label.padEnd(10)} ${round.padEnd(22)} ${((t2 - t0) / 1000).toFixed(2)} s (upload ${((t1 - t0) / 1000).toFixed(2)} s, job ${((t2 - t1) / 1000).toFixed(2)} s)  ${Math.round(rows / ((t2 - t0) / 1000))} rows/s  ${job.status}: created ${r.created}, updated ${r.updated}, unchanged ${r.skipped}, failed ${r.failed}`)
    }
  } finally {
    await closeDeps(deps)
  }
}

const { csv, rows } = makeCsv()
console.log(`CSV: ${(csv.length / 1e6).toFixed(2)} MB, ${rows} rows (${Math.floor(rows / 1000)} bad); target: first import under 5 s`)
const dir = mkdtempSync(join(tmpdir(), 'mailctl-bench-import-'))
try {
  await run('sqlite', `sqlite://${dir}/mailctl.db`, dir, csv, rows)
  if (process.env.BENCH_PG_URL) {
    const db = await freshPgDatabase(process.env.BENCH_PG_URL)
    try { await run('postgres', db.url, dir, csv, rows) } finally {
      await db.drop()
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
