import { defineJob } from '../../jobs/queue'
import { recheckDueDomains } from './service'

/**
 * domains.recheck runs every minute and re-checks what is due: pending domains every 5 minutes,
 * verified ones daily (docs/decisions.md, Limits: verification in the background every 5 minutes).
 */
export const domainJobs = [
  defineJob({
    name: 'domains.recheck',
    everyMs: 60_000,
    leaseMs: 5 * 60_000,
    async run({ deps }) { return recheckDueDomains(deps) },
  }),
]
