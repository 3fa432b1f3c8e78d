import { defineJob } from '../../jobs/queue'
import { pruneFinished } from './repo'

/** How long finished deliveries (delivered or failed for good) and their attempt log are kept. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3600_000

/** Daily: deletes deliveries finished more than 30 days ago, with their attempts. */
export const hooksPruneJob = defineJob({
  name: 'hooks.prune',
  everyMs: 24 * 3600_000,
  async run(ctx) {
    const before = new Date(ctx.deps.clock.now() - DELIVERY_RETENTION_MS)
    let deleted = 0
    for (;;) {
      const n = await pruneFinished(ctx.deps.store, before)
      deleted += n
      if (n < 5000) break
    }
    return { deleted }
  },
})
