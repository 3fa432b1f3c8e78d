import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import { verifyWellFormed } from './service'

export function verifyRoutes(deps: Deps) {
  return new Elysia({ prefix: '/v1' })
    .use(authPlugin(deps))
    .post('/verify', async ({ ctx, body }) => ({ success: true as const, data: await verifyWellFormed(ctx, body.email) }), {
      apiKey: 'secret', body: m.VerifyBody, response: { 200: m.VerifyResponse },
      detail: {
        tags: ['verify'],
        summary: 'Verify an email address (no mail is sent)',
        description: 'Syntax (RFC 5321/5322 practical subset, IDN via punycode), typo of a popular provider with `suggestedEmail`, disposable domain, alias (forwarding service or role address), plus addressing, free-mail provider, then DNS: domain existence, MX records (a null MX, RFC 7505, counts as none) and a website (A/AAAA at the domain or www., no HTTP fetch). DNS answers are cached for their TTL, at most 5 minutes. `valid` = well formed + domain exists + MX records; the other flags are signals. A malformed address (or a missing or empty `email`) answers 422 VALIDATION_ERROR with the syntax reason, and `suggestion` when it looks like a typo of a popular domain; `valid: false` is for well-formed addresses that fail the DNS checks.',
        security: [{ secretKey: [] }],
      },
    })
}
