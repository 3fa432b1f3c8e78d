import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import { AddSuppressionBody, EmailParams, ListSuppressionsQuery, Suppression, SuppressionList } from './model'
import * as service from './service'

/** GET/POST /suppressions, GET/DELETE /suppressions/:email (secret key). */
export function suppressionsRoutes(deps: Deps) {
  const detail = (summary: string, description?: string) => ({ tags: ['suppressions'], summary, ...(description ? { description } : {}), security: [{ secretKey: [] }] })
  return new Elysia({ prefix: '/suppressions' }).use(authPlugin(deps))
    .get('', ({ ctx, query }) => service.listSuppressions(ctx, query), {
      apiKey: 'secret', query: ListSuppressionsQuery, response: { 200: SuppressionList },
      detail: detail('List suppressed addresses', 'Hard bounces and complaints are added automatically; /v1/send does not send to these addresses.'),
    })
    .post('', ({ ctx, body }) => service.addSuppression(ctx, body), {
      apiKey: 'secret', body: AddSuppressionBody, response: { 200: Suppression },
      transform: ({ body }) => {
        const b = body as { email?: unknown } | null
        if (b && typeof b === 'object' && typeof b.email === 'string') b.email = b.email.trim()
      },
      detail: detail('Suppress an address manually'),
    })
    .get('/:email', ({ ctx, params }) => service.getSuppression(ctx, params.email), {
      apiKey: 'secret', params: EmailParams, response: { 200: Suppression },
      detail: detail('Get the suppression entry of an address'),
    })
    .delete('/:email', async ({ ctx, params, set }) => {
      await service.removeSuppression(ctx, params.email)
      set.status = 204
    }, {
      apiKey: 'secret', params: EmailParams,
      detail: detail('Remove an address from the suppression list', 'The address can be sent to again. 404 when it is not suppressed.'),
    })
}
