import type { AnyJob } from './queue'
import { housekeepingJobs } from './housekeeping'
import { accountJobs } from '../modules/auth/jobs'
import { contactJobs } from '../modules/contacts/jobs'
import { domainJobs } from '../modules/domains/jobs'
import { segmentJobs } from '../modules/segments/jobs'
import { campaignJobs } from '../modules/campaigns/jobs'
import { emailJobs } from '../modules/emails/jobs'
import { inboundJobs } from '../mail/inbound/process'
import { webhooksPruneJob } from '../modules/webhooks/service'

/** Every job kind of mailctl; `serve --role worker` runs them all. One line per module. */
export const allJobs: AnyJob[] = [
  ...housekeepingJobs,
  ...accountJobs,
  ...contactJobs,
  ...domainJobs,
  ...segmentJobs,
  ...campaignJobs,
  ...emailJobs,
  ...inboundJobs,
  webhooksPruneJob,
]
