import { t } from 'elysia'

/** TypeBox models of /domains: the route validation and the OpenAPI document. */

const SUBDOMAINS = 'Default false: only addresses at exactly this domain may send. true: addresses at its subdomains (news.example.com) may send too, signed d=<this domain>, which DMARC relaxed alignment accepts; that is why it is a choice.'

export const CreateDomainBody = t.Object({
  projectId: t.String({ minLength: 1, description: "The project's id; it must be the project of the secret key (else 404)" }),
  domain: t.String({
    minLength: 1, maxLength: 255,
    description: 'Sending domain such as example.com or mail.example.com; internationalised names are stored in their ASCII (IDNA) form. IP addresses are refused.',
  }),
  allowSubdomains: t.Optional(t.Boolean({ description: SUBDOMAINS })),
})
export type CreateDomainBody = typeof CreateDomainBody.static

export const UpdateDomainBody = t.Object({
  allowSubdomains: t.Boolean({ description: SUBDOMAINS }),
})
export type UpdateDomainBody = typeof UpdateDomainBody.static

export const DomainParams = t.Object({ id: t.String({ description: 'Domain id' }) })
export const ProjectDomainsParams = t.Object({ projectId: t.String({ description: "The key's project id (another project answers 404)" }) })

export const RecordStatus = t.Union([t.Literal('verified'), t.Literal('pending'), t.Literal('failed')], {
  description: 'pending: not checked yet, or the last look-up failed temporarily; failed: missing or wrong (see reason); verified: found as expected',
})

export const DnsRecordOut = t.Object({
  type: t.Union([t.Literal('TXT'), t.Literal('MX')]),
  name: t.String({ description: 'Fully qualified record name' }),
  value: t.String({ description: 'Value to publish (TXT: the whole text; DNS hosts may split it into strings of at most 255 characters. MX: the mail host)' }),
  priority: t.Optional(t.Integer({ description: 'MX preference (MX records only)' })),
  purpose: t.Union([t.Literal('DKIM'), t.Literal('RETURN_PATH_MX'), t.Literal('RETURN_PATH_SPF'), t.Literal('DMARC')], {
    description: 'DKIM signs your mail (required for `verified`); RETURN_PATH_MX and RETURN_PATH_SPF let bounces reach this server and align SPF (recommended); DMARC policy (recommended)',
  }),
  required: t.Boolean({ description: 'Whether the domain can be verified without this record' }),
  status: RecordStatus,
  reason: t.Union([t.String(), t.Null()], { description: 'What is wrong (missing, or which value was found), or a note; null when verified or never checked' }),
})

export const DomainOut = t.Object({
  id: t.String(),
  projectId: t.String(),
  domain: t.String({ description: 'ASCII (IDNA) domain name' }),
  verified: t.Boolean({ description: 'true once the DKIM record matches; mail from this domain may then be sent' }),
  allowSubdomains: t.Boolean({ description: SUBDOMAINS }),
  records: t.Array(DnsRecordOut),
  createdAt: t.Date(),
  lastCheckedAt: t.Union([t.Date(), t.Null()], { description: 'Last DNS check (GET /domains/:id/verify or the background check every 5 minutes; daily once verified)' }),
}, { description: 'A sending domain with the DNS records to publish and the status of each. The DKIM private key is never returned.' })
export type DomainOut = typeof DomainOut.static
