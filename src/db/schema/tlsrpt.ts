import type { Cols } from '../columns'

/**
 * TLS reporting (RFC 8460; migration 0031_tls_reports; src/mail/tlsrpt/): per UTC day and recipient
 * domain, the delivery sessions counted by policy, MX host and result (`success` or an RFC 8460 result
 * type). Nodes add their counts (an upsert that sums); the daily report job reads a finished day's rows of
 * a domain, sends the report and deletes them.
 */
export function tlsrptTables(c: Cols) {
  const tlsReportCounts = c.table('tls_report_counts', {
    /** The UTC day, `YYYY-MM-DD`. */
    day: c.text('day').notNull(),
    /** The recipient (policy) domain, lower-case. */
    domain: c.text('domain').notNull(),
    /** `sts` or `no-policy-found`. */
    policyType: c.text('policy_type').notNull(),
    /** The policy's lines (RFC 8460 `policy-string`) joined by newlines; '' without a policy. */
    policy: c.text('policy').notNull(),
    /** The MX host the session was with ('' when none was reached, as for a policy fetch failure). */
    mxHost: c.text('mx_host').notNull(),
    /** `success`, or an RFC 8460 result type (`starttls-not-supported`, `certificate-expired`, ...). */
    result: c.text('result').notNull(),
    sessions: c.bigint('sessions').notNull(),
    /** The day's first failed attempt to send the report (null: not tried yet); the job gives up after a day. */
    failedAt: c.ts('failed_at'),
  }, (t) => [c.primaryKey({ columns: [t.day, t.domain, t.policyType, t.policy, t.mxHost, t.result] })])
  return { tlsReportCounts }
}
