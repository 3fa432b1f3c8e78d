import type { AnyJob } from '../../jobs/queue'
import { bulkJob } from './bulk'
import { fieldJob } from './fields'
import { importJob } from './import'

/** Job kinds of the contacts module (registered in src/jobs/registry.ts). */
export const contactJobs: AnyJob[] = [importJob, bulkJob, fieldJob]
