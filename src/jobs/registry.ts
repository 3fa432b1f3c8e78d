import type { AnyJob } from './queue'
import { housekeepingJobs } from './housekeeping'
import { accountJobs } from '../modules/auth/jobs'
import { contactJobs } from '../modules/contacts/jobs'
import { domainJobs } from '../modules/domains/jobs'
import { segmentJobs } from '../modules/segments/jobs'
import { campaignJobs } from '../modules/campaigns/jobs'
import { workflowJobs } from '../modules/workflows/jobs'
import { emailJobs } from '../modules/emails/jobs'
import { inboundJobs } from '../modules/inbound/jobs'
import { webhooksPruneJob } from '../modules/webhooks/service'
import { hooksPruneJob } from '../modules/hooks/jobs'
import { analyticsJobs } from '../modules/analytics/jobs'
import { securityJobs } from '../modules/security/service'
import { backupJobs } from '../ops/schedule'
import { tlsrptJobs } from './tlsrpt'

/** Every job kind of mailctl; `serve --role worker` runs them all. One line per module. */
export const allJobs: AnyJob[] = [
  ...housekeepingJobs,
  ...accountJobs,
  ...contactJobs,
  ...domainJobs,
  ...segmentJobs,
  ...campaignJobs,
  ...workflowJobs,
  ...emailJobs,
  ...inboundJobs,
  webhooksPruneJob,
  hooksPruneJob,
  ...analyticsJobs,
  ...securityJobs,
  ...backupJobs,
  ...tlsrptJobs,
]
