import { defineJob } from './queue'
import { sweepExpiredKeys } from '../modules/idempotency/service'

/** Expired Idempotency-Keys are deleted hourly (a claim also ignores an expired key). */
export const housekeepingJobs = [
  defineJob({
    name: 'housekeeping.idempotency-sweep',
    everyMs: 3600_000,
    async run({ deps }) { await sweepExpiredKeys({ store: deps.store }, deps.clock.date()) },
  }),
]
