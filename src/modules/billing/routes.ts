import { Elysia } from 'elysia'
import type { Deps } from '../../deps'
import { tooLarge } from '../../errors'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import * as payments from './payments'
import * as service from './service'

const detail = (summary: string, description?: string) => ({ tags: ['billing'], summary, description, security: [{ session: [] }] })
const OFF = '404 NOT_FOUND while payment-provider billing is off (GET /config: features.billing.enabled); 502 BAD_GATEWAY when the provider fails or does not answer.'

/** Provider webhook bodies are small JSON events; anything larger is refused unread. */
const MAX_WEBHOOK_BYTES = 512 * 1024
const TOO_LARGE = Symbol('too large')

/** The body as the exact text that was signed, capped. */
async function rawText({ request }: { request: Request }): Promise<string | typeof TOO_LARGE> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > MAX_WEBHOOK_BYTES) return TOO_LARGE
  const buf = await request.arrayBuffer()
  return buf.byteLength > MAX_WEBHOOK_BYTES ? TOO_LARGE : new TextDecoder().decode(buf)
}

/** /users/@me/projects/:id/billing-* and checkout (dashboard session) and the payment provider's webhook. */
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
      detail: detail('Emails accepted this month, per category', 'Any member. With the caps and the subscription at the payment provider.'),
    })
    .post('/:id/checkout', ({ userId, params }) => payments.checkout(deps, userId, params.id), {
      session: true, params: m.ProjectParams, response: { 200: m.CheckoutSession },
      detail: detail('Payment-provider checkout', `OWNER or ADMIN. A checkout session for a subscription to MAILCTL_BILLING_PRICE_ID; send the user to \`url\`. 409 when the project already has a subscription. ${OFF}`),
    })
    .post('/:id/billing-portal', ({ userId, params }) => payments.billingPortal(deps, userId, params.id), {
      session: true, params: m.ProjectParams, response: { 200: m.PortalSession },
      detail: detail('Payment-provider billing portal', `OWNER or ADMIN. 409 before the project's first checkout (no customer yet). ${OFF}`),
    })
    .get('/:id/billing-invoices', ({ userId, params, query }) => payments.invoices(deps, userId, params.id, query), {
      session: true, params: m.ProjectParams, query: m.InvoicesQuery, response: { 200: m.InvoicesPage },
      detail: detail('Invoices', `OWNER or ADMIN. Newest first, from the provider; empty before the first checkout. ${OFF}`),
    })
  const webhook = new Elysia().post('/webhooks/incoming/:provider', ({ params, body, request }) => {
    if (body === TOO_LARGE) throw tooLarge(`Webhook bodies are limited to ${MAX_WEBHOOK_BYTES} bytes`)
    return payments.handleProviderWebhook(deps, params.provider, typeof body === 'string' ? body : '', request.headers.get('stripe-signature'))
  }, {
    parse: rawText, params: m.ProviderParams, response: { 200: m.WebhookResult },
    detail: {
      tags: ['billing'],
      summary: 'Payment-provider notifications (not for API users)',
      description: 'POST /webhooks/incoming/stripe. The Stripe-Signature header (t=..., v1=HMAC-SHA256 of "t.body" with MAILCTL_BILLING_WEBHOOK_SECRET) must match and be at most 5 minutes from this server\'s clock: 400 when missing or malformed, 403 when wrong or stale. '
        + 'checkout.session.completed, customer.subscription.created/updated/deleted and invoice.paid update the project\'s subscription; an event id seen before is answered 200 with duplicate: true and changes nothing. '
        + '404 while billing is off.',
    },
  })
  return new Elysia().use(mine).use(webhook)
}
