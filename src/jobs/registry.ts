import type { JobDef } from './queue'
import { housekeepingJobs } from './housekeeping'

/** Every job kind of mailctl; `serve --role worker` runs them all. One line per module. */
export const allJobs: JobDef<any>[] = [
  ...housekeepingJobs,
]
