import { defineJob } from './queue'

/**
 * tlsrpt.send runs every hour and sends the TLS reports of finished UTC days (src/mail/tlsrpt/report.ts): a day's reports
 * go out within the hour after it ends, and a report that no destination took is tried again at the next
 * runs. One queued row for the cluster (a recurring job), so one node sends each report.
 */
export const tlsrptJobs = [
  defineJob({
    name: 'tlsrpt.send',
    everyMs: 3600_000,
    leaseMs: 15 * 60_000,
    async run({ deps }) {
      if (!deps.config.tlsReports) return { skipped: 'MAILCTL_TLS_REPORTS is off' }
      // Loaded when the job runs: the composition root imports the registry (CLI start-up stays light).
      const [{ sendTlsReports }, { mtaStsCa }, { systemSender }] = await Promise.all([
        import('../mail/tlsrpt/report'), import('../mail/outbound/mta-sts'), import('../modules/emails/system'),
      ])
      return sendTlsReports(deps, systemSender, deps.clock.date(), mtaStsCa(deps.config))
    },
  }),
]
