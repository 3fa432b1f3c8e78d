import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { PublicConfig } from './model'
import { publicConfig } from './service'

/** GET /config: public feature flags, no authentication. */
export function configRoutes(deps: Deps) {
  return new Elysia().get('/config', () => publicConfig(deps), {
    response: { 200: PublicConfig },
    detail: { tags: ['config'], summary: 'Public feature flags', description: 'No authentication. Billing is on when MAILCTL_BILLING_SECRET_KEY (with the webhook secret and price) is set; storage (image uploads, to the data dir or the MAILCTL_S3_URL bucket) is always on; OAuth providers are on when their client id and secret are configured.' },
  })
}
