import type { Cols } from '../columns'

/** The outcome of the last DNS check of one published record, keyed by the record's purpose. */
export interface RecordCheck {
  status: 'verified' | 'pending' | 'failed'
  /** What is wrong (missing, or which value was found); null when verified or never checked. */
  reason: string | null
  checkedAt: string | null
}

/** Sending domains: one DKIM key pair per domain (private key AES-256-GCM encrypted at rest). */
export function domainTables(c: Cols) {
  const domains = c.table('domains', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    /** ASCII (IDNA) lower-case name, no trailing dot. */
    domain: c.text('domain').notNull(),
    selector: c.text('selector').notNull(),
    /** Base64 of the SubjectPublicKeyInfo DER: the `p=` tag of the DKIM record. */
    dkimPublicKey: c.text('dkim_public_key').notNull(),
    /** `v1:` + base64(iv | tag | ciphertext) of the PEM private key, bound to the row id. */
    dkimPrivateKey: c.text('dkim_private_key').notNull(),
    verified: c.bool('verified').notNull(),
    /** Whether senders at subdomains of this domain may send (off by default; see the sender gate). */
    allowSubdomains: c.bool('allow_subdomains').notNull().default(false),
    checks: c.json<Record<string, RecordCheck>>('checks').notNull(),
    lastCheckedAt: c.ts('last_checked_at'),
    verifiedAt: c.ts('verified_at'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.uniqueIndex('domains_project_domain_uq').on(t.projectId, t.domain),
    c.index('domains_domain_idx').on(t.domain),
    c.index('domains_recheck_idx').on(t.verified, t.lastCheckedAt),
  ])
  return { domains }
}
