import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../config'
import { defineJob } from '../jobs/queue'
import { createBackup, listBackups } from './backup'

/**
 * Scheduled backups (MAILCTL_BACKUP_DIR, MAILCTL_BACKUP_KEEP, MAILCTL_BACKUP_INTERVAL_HOURS): a recurring
 * job of the ordinary queue looks every 15 minutes whether the newest archive of the directory is older
 * than the interval; if so it writes `mailctl-<time>.tar` there (src/ops/backup.ts; on PostgreSQL without
 * the keys, which are in the settings) and keeps the newest MAILCTL_BACKUP_KEEP archives. The queue runs
 * one at a time over all nodes; the directory is that of the node whose worker runs it, so with several
 * nodes it should be a shared volume.
 */

export const BACKUP_JOB = 'ops.scheduled-backup'

/** The file name of a scheduled backup taken at `at` (sortable, no characters a shell would mind). */
export function scheduledName(at: Date): string {
  return `mailctl-${at.toISOString().replace(/[:.]/g, '-')}.tar`
}

export const backupJobs = [
  defineJob({
    name: BACKUP_JOB,
    everyMs: 15 * 60_000,
    maxAttempts: 3,
    async run({ deps }) {
      const { config } = deps
      if (!config.backupDir) return { skipped: 'MAILCTL_BACKUP_DIR is not set' }
      const now = deps.clock.date()
      const [newest] = await listBackups(config.backupDir)
      if (newest && now.getTime() - newest.at.getTime() < config.backupIntervalHours * 3600_000) return { skipped: 'the newest backup is recent', newest: newest.file }
      const result = await createBackup(deps, join(config.backupDir, scheduledName(now)))
      const removed: string[] = []
      for (const old of (await listBackups(config.backupDir)).slice(config.backupKeep)) {
        await rm(old.file, { force: true })
        removed.push(old.file)
      }
      deps.log.info('scheduled backup written', { file: result.file, bytes: result.bytes, durationMs: result.durationMs, removed })
      return { file: result.file, bytes: result.bytes, durationMs: result.durationMs, removed }
    },
  }),
]

/** For `mailctl doctor`: whether scheduled backups are on, and the age of the newest archive. */
export async function backupCheck(config: Config, now = new Date()): Promise<{ name: string; status: 'ok' | 'warn' | 'fail'; detail: string }> {
  const name = 'backups'
  if (!config.backupDir) return { name, status: 'warn', detail: 'no scheduled backups: set MAILCTL_BACKUP_DIR (and MAILCTL_BACKUP_KEEP), or take them with `mailctl backup FILE`' }
  const [newest] = await listBackups(config.backupDir).catch(() => [])
  if (!newest) return { name, status: 'warn', detail: `no backup in ${config.backupDir} yet (the first is written within 15 minutes of \`mailctl serve\` starting)` }
  const hours = (now.getTime() - newest.at.getTime()) / 3600_000
  const age = hours < 1 ? `${Math.round(hours * 60)} minutes` : `${hours.toFixed(1)} hours`
  const late = hours > config.backupIntervalHours * 2 + 0.5
  return { name, status: late ? 'warn' : 'ok', detail: `newest backup ${newest.file}, ${age} old${late ? ` (older than twice MAILCTL_BACKUP_INTERVAL_HOURS=${config.backupIntervalHours}: are the workers running?)` : ''}; keeping ${config.backupKeep}` }
}
