import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as service from './service'

const detail = (summary: string, description?: string) => ({ tags: ['billing'], summary, description, security: [{ session: [] }] })

/** /users/@me/projects/:id/billing-* (dashboard session) and the payment provider's webhook. */
export function billingRoutes(deps: Deps) {
  const mine = new Elysia({ prefix: '/users/@me/projects' }).use(authPlugin(deps))
    .get('/:id/billing-limits', ({ userId, params }) => service.getLimits(deps, userId, params.id), {
      session: true, params: m.ProjectParams, response: { 200: m.BillingLimits },
      detail: detail('Per-category monthly caps', 'Any member. Emails per calendar month (UTC); null is no cap.'),
    })
    .put('/:id/billing-limits', ({ userId, params, body }) => service.setLimits(deps, userId, params.id, body), {
      session: true, params: m.ProjectParams, body: m.BillingLimitsBody, response: { 200: m.BillingLimits },
      detail: detail('Set per-category monthly caps', 'OWNER or ADMIN. Categories left out keep their cap; null removes one. Mail over a cap is refused with 429 BILLING_LIMIT_EXCEEDED.'),
    })
    .get('/:id/billing-consumption', ({ userId, params }) => service.consumption(deps, userId, params.id), {
      session: true, params: m.ProjectParams, response: { 200: m.BillingConsumption },
      detail: detail('Emails accepted this month, per category', 'Any member. With the caps.'),
    })
    .post('/:id/checkout', ({ userId, params }) => service.providerEndpoint(deps, userId, params.id), {
      session: true, params: m.ProjectParams, detail: detail('Payment-provider checkout (404 while billing is disabled)'),
    })
    .post('/:id/billing-portal', ({ userId, params }) => service.providerEndpoint(deps, userId, params.id), {
      session: true, params: m.ProjectParams, detail: detail('Payment-provider billing portal (404 while billing is disabled)'),
    })
    .get('/:id/billing-invoices', ({ userId, params }) => service.providerEndpoint(deps, userId, params.id), {
      session: true, params: m.ProjectParams, detail: detail('Invoices (404 while billing is disabled)'),
    })
  const webhook = new Elysia().post('/webhooks/incoming/:provider', () => service.billingDisabled(), {
    detail: { tags: ['billing'], summary: 'Payment-provider notifications (404 while billing is disabled)' },
  })
  return new Elysia().use(mine).use(webhook)
}
