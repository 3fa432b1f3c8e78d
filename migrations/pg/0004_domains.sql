CREATE TABLE domains (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  domain TEXT NOT NULL,
  selector TEXT NOT NULL,
  dkim_public_key TEXT NOT NULL,
  dkim_private_key TEXT NOT NULL,
  verified BOOLEAN NOT NULL DEFAULT false,
  checks JSONB NOT NULL DEFAULT '{}'::jsonb,
  last_checked_at TIMESTAMPTZ(3),
  verified_at TIMESTAMPTZ(3),
  created_at TIMESTAMPTZ(3) NOT NULL,
  updated_at TIMESTAMPTZ(3) NOT NULL
);
CREATE UNIQUE INDEX domains_project_domain_uq ON domains (project_id, domain);
CREATE INDEX domains_domain_idx ON domains (domain);
CREATE INDEX domains_recheck_idx ON domains (verified, last_checked_at);
-- A domain is verified for at most one project at a time.
CREATE UNIQUE INDEX domains_verified_domain_uq ON domains (domain) WHERE verified;
