import { defineJob, type AnyJob } from '../../jobs/queue'
import { rollup } from './service'

export const ROLLUP_JOB = 'analytics.rollup'
export const ROLLUP_EVERY_MS = 60_000

/** Every minute: the hours that ended are counted into analytics_hourly (service.ts, `rollup`); a backlog over several runs, 20 s each. */
export const analyticsRollupJob = defineJob({
  name: ROLLUP_JOB,
  everyMs: ROLLUP_EVERY_MS,
  leaseMs: 5 * 60_000,
  async run({ deps, progress }) {
    let steps = 0
    const r = await rollup(deps, deps.clock.date(), { budgetMs: 20_000, onStep: async () => { await progress(++steps) } })
    return { ...r }
  },
})

export const analyticsJobs: AnyJob[] = [analyticsRollupJob]
