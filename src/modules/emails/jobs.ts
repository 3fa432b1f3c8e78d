import type { Deps } from '../../deps'
import { defineJob } from '../../jobs/queue'
import * as repo from './repo'

/** Emails whose content one statement deletes, and statements per run (the rest waits for the next run). */
const PRUNE_BATCH = 1000
const PRUNE_BATCHES_PER_RUN = 200

/**
 * Deletes the stored content (HTML, text, headers, attachments) of emails older than
 * MAILCTL_CONTENT_RETENTION_DAYS (default 30) that are no longer queued; the email records stay, with
 * their status and facts. Campaign mail has no stored content (it is rendered from its campaign).
 * Returns how many emails lost their content.
 */
export async function pruneStoredContent(deps: Pick<Deps, 'store' | 'config' | 'clock'>, now: Date = deps.clock.date()): Promise<number> {
  const before = new Date(now.getTime() - deps.config.contentRetentionDays * 86_400_000)
  let total = 0
  for (let i = 0; i < PRUNE_BATCHES_PER_RUN; i++) {
    const n = await repo.pruneContents(deps.store, before, PRUNE_BATCH)
    total += n
    if (n < PRUNE_BATCH) break
  }
  return total
}

/** `emails.content-retention`: hourly. */
export const contentRetentionJob = defineJob({
  name: 'emails.content-retention',
  everyMs: 3600_000,
  async run({ deps }) {
    return { pruned: await pruneStoredContent(deps) }
  },
})

export const emailJobs = [contentRetentionJob]
