import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { Worker } from '../../src/jobs/queue'
import { allJobs } from '../../src/jobs/registry'
import { verifyArchive } from '../../src/ops/archive'
import { BACKUP_JOB, backupCheck, backupJobs } from '../../src/ops/schedule'
import { TestEnv } from '../helpers/env'
import { until } from '../helpers/worker'

/*
 * Scheduled backups (issue 39 item 1): a recurring job of the ordinary queue writes an archive into
 * MAILCTL_BACKUP_DIR when the newest is older than the interval, keeps MAILCTL_BACKUP_KEEP of them, and
 * `doctor` reports the age of the newest.
 */

const backupDir = mkdtempSync(join(tmpdir(), 'mailctl-scheduled-'))
const env = new TestEnv('sqlite', { backupDir, backupKeep: 2, backupIntervalHours: 6 })
beforeAll(() => env.start(), 60_000)
afterAll(async () => {
  await env.stop()
  rmSync(backupDir, { recursive: true, force: true })
}, 60_000)

const archives = () => readdirSync(backupDir).filter((n) => n.endsWith('.tar')).sort()

/** Makes every archive of the directory look `hours` older. */
function age(hours: number) {
  for (const n of archives()) {
    const t = (Date.now() - hours * 3600_000) / 1000
    utimesSync(join(backupDir, n), t, t)
  }
}

test('the job is registered with the other jobs', () => {
  expect(allJobs.map((j) => j.name)).toContain(BACKUP_JOB)
})

test('doctor warns while there is no backup, then reports the age of the newest', async () => {
  expect((await backupCheck({ ...env.config, backupDir: null })).status).toBe('warn')
  const none = await backupCheck(env.config)
  expect(none.status).toBe('warn')
  expect(none.detail).toMatch(/no backup/)
})

test('the queue runs the job: a backup when the newest is older than the interval, never more than the kept number', async () => {
  await env.project('scheduled')
  const worker = new Worker(env.deps, backupJobs, { pollMs: 20 })
  const runs = async () => {
    const [{ n }] = await env.store.rows<{ n: number }>(sql`SELECT count(*) AS n FROM jobs WHERE name = ${BACKUP_JOB} AND status = 'completed'`)
    return Number(n)
  }
  const runOnce = async () => {
    const before = await runs()
    // The recurring row is due again 15 minutes after each run: make it due now, as time passing would.
    await env.store.exec(sql`UPDATE jobs SET run_at = ${Date.now()} WHERE name = ${BACKUP_JOB} AND status = 'queued'`)
    await worker.start()
    await until(async () => (await runs()) > before, 60_000, 'the scheduled backup job to run')
    await worker.stop()
  }
  await runOnce()
  expect(archives()).toHaveLength(1)
  const manifest = await verifyArchive(join(backupDir, archives()[0]))
  expect(manifest.tables.find((t) => t.name === 'projects')?.rows).toBeGreaterThanOrEqual(1)
  const fresh = await backupCheck(env.config)
  expect(fresh.status).toBe('ok')
  expect(fresh.detail).toMatch(/minutes old/)

  // Within the interval: nothing new.
  await runOnce()
  expect(archives()).toHaveLength(1)

  // Past it: a second, then a third, of which the oldest is deleted (keep 2).
  age(7)
  await runOnce()
  expect(archives()).toHaveLength(2)
  const first = archives()[0]
  age(13)
  utimesSync(join(backupDir, first), (Date.now() - 30 * 3600_000) / 1000, (Date.now() - 30 * 3600_000) / 1000)
  const late = await backupCheck(env.config)
  expect(late.status).toBe('warn')
  expect(late.detail).toMatch(/13\.0 hours old/)
  await runOnce()
  expect(archives()).toHaveLength(2)
  expect(existsSync(join(backupDir, first))).toBe(false)
  expect(readdirSync(backupDir).filter((n) => n.includes('partial'))).toEqual([])
}, 120_000)
