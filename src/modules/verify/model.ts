import { t } from 'elysia'

/** TypeBox models of POST /v1/verify (request validation and the OpenAPI document). */

/**
 * The body. Any non-empty string up to 320 characters is verified: a malformed address answers 200 with
 * `valid: false` and the syntax problem in `reasons` (more useful to a caller than a bare 422); a missing,
 * empty, non-string or oversized `email` answers 422 VALIDATION_ERROR.
 */
export const VerifyBody = t.Object({
  email: t.String({ minLength: 1, maxLength: 320, error: 'email must be a non-empty string of at most 320 characters', description: 'The address to verify; no mail is sent to it' }),
})

export const VerifyResult = t.Object({
  email: t.String({ description: 'The address, trimmed and lower-cased' }),
  valid: t.Boolean({ description: 'Well formed, the domain exists and has MX records' }),
  isDisposable: t.Boolean({ description: 'The domain (or a parent) is on the maintained throwaway-provider list (mailchecker)' }),
  isAlias: t.Boolean({ description: 'A forwarding/relay service address (Apple Hide My Email, Firefox Relay, SimpleLogin, addy.io, DuckDuckGo...) or a role address (postmaster, info, support, noreply...)' }),
  isTypo: t.Boolean({ description: 'The domain looks like a misspelling of a popular provider; see suggestedEmail' }),
  isPlusAddressed: t.Boolean({ description: 'The local part carries a +tag (user+tag@...)' }),
  isPersonalEmail: t.Boolean({ description: 'A free-mail provider (gmail.com, outlook.com, gmx.de...), not disposable' }),
  domainExists: t.Boolean({ description: 'The domain answers in DNS (NXDOMAIN: false)' }),
  hasWebsite: t.Boolean({ description: 'An A or AAAA record at the domain or www.<domain> (DNS only, no HTTP request)' }),
  hasMxRecords: t.Boolean({ description: 'At least one MX host; false for a null MX (RFC 7505)' }),
  reasons: t.Array(t.String(), { description: 'One sentence per problem or signal; "Email appears to be valid" when there is none' }),
  suggestedEmail: t.Optional(t.String({ description: 'Present when isTypo is true' })),
})

export const VerifyResponse = t.Object({ success: t.Literal(true), data: VerifyResult })
