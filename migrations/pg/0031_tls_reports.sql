-- TLS reporting (RFC 8460, issue 34 item 7; src/mail/tlsrpt/): delivery sessions per UTC day, recipient
-- domain, policy, MX host and result, summed by every node; the daily report job sends a finished day's
-- report for each domain that publishes _smtp._tls and deletes its rows.
CREATE TABLE tls_report_counts (
  day TEXT NOT NULL,
  domain TEXT NOT NULL,
  policy_type TEXT NOT NULL,
  policy TEXT NOT NULL,
  mx_host TEXT NOT NULL,
  result TEXT NOT NULL,
  sessions BIGINT NOT NULL,
  failed_at TIMESTAMPTZ(3),
  PRIMARY KEY (day, domain, policy_type, policy, mx_host, result)
);
