import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { PublicConfig } from './model'
import { publicConfig } from './service'

/** GET /config: public feature flags, no authentication. */
export function configRoutes(deps: Deps) {
  return new Elysia().get('/config', () => publicConfig(deps), {
    response: { 200: PublicConfig },
    detail: { tags: ['config'], summary: 'Public feature flags', description: 'No authentication. Billing is not part of a self-hosted server; OAuth providers are on when their client id and secret are configured.' },
  })
}
