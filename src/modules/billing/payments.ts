import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { AppError, conflict, notFound } from '../../errors'
import { requireAccess } from '../members/access'
import { getUser } from '../users/service'
import { createProvider, type PaymentProvider, type ProviderEvent, providerSettings } from './provider'
import * as repo from './repo'

/**
 * Billing through the payment provider (docs/decisions.md, Caps, billing, security, uploads): checkout,
 * billing portal and invoices for OWNER and ADMIN, and the provider's webhook, which keeps each project's
 * subscription state (billing_subscriptions). Off unless MAILCTL_BILLING_SECRET_KEY is set: then every one
 * of these answers 404 saying so, and GET /config reports `billing.enabled: false`.
 */

/** Statuses in which a project already has a subscription (a second checkout is refused: use the portal). */
const SUBSCRIBED = new Set(['active', 'trialing', 'past_due', 'unpaid'])

/** Checkout, billing portal, invoices and the provider's webhook while billing is off: 404, in the standard envelope. */
export function billingDisabled(): AppError {
  return new AppError('NOT_FOUND', 'Billing through a payment provider is not enabled on this server; usage caps (billing-limits) and consumption work without it', {
    suggestion: 'GET /config reports features.billing.enabled; an operator turns billing on with MAILCTL_BILLING_SECRET_KEY, MAILCTL_BILLING_WEBHOOK_SECRET and MAILCTL_BILLING_PRICE_ID',
  })
}

// A cache, not state: the provider's HTTP client, stateless, made from the deps' settings.
const providers = new WeakMap<Deps, PaymentProvider>()

function provider(deps: Deps): PaymentProvider {
  let p = providers.get(deps)
  if (!p) {
    const settings = providerSettings(deps.config)
    if (!settings) throw billingDisabled()
    p = createProvider(settings, deps.fetch)
    providers.set(deps, p)
  }
  return p
}

/** Where the provider sends the user back: the project's settings page of the dashboard. */
function returnUrl(deps: Deps, projectId: string, outcome?: string): string {
  return `${deps.config.publicUrl}/app/p/${encodeURIComponent(projectId)}/settings${outcome ? `?billing=${outcome}` : ''}`
}

/** The subscription as the dashboard shows it; null when the project never subscribed. */
export interface SubscriptionOut {
  status: string
  priceId: string | null
  currentPeriodEnd: string | null
  cancelAtPeriodEnd: boolean
  lastInvoicePaidAt: string | null
}

export async function subscriptionOf(deps: Deps, projectId: string): Promise<SubscriptionOut | null> {
  const row = await repo.subscription(deps.store, projectId)
  if (!row) return null
  return {
    status: row.status,
    priceId: row.priceId,
    currentPeriodEnd: row.currentPeriodEnd?.toISOString() ?? null,
    cancelAtPeriodEnd: row.cancelAtPeriodEnd,
    lastInvoicePaidAt: row.lastInvoicePaidAt?.toISOString() ?? null,
  }
}

/** POST /users/@me/projects/:id/checkout: a checkout session for the configured price; the user pays at `url`. */
export async function checkout(deps: Deps, userId: string, projectId: string): Promise<{ id: string; url: string }> {
  await requireAccess(deps, userId, projectId, 'billing')
  const p = provider(deps)
  const sub = await repo.subscription(deps.store, projectId)
  if (sub && SUBSCRIBED.has(sub.status)) {
    throw conflict(`The project already has a subscription (${sub.status}); change or cancel it in the billing portal (POST /users/@me/projects/:id/billing-portal)`, { status: sub.status })
  }
  const user = await getUser(deps, userId)
  return p.createCheckoutSession({
    projectId,
    customerId: sub?.customerId ?? null,
    customerEmail: user.email,
    successUrl: returnUrl(deps, projectId, 'success'),
    cancelUrl: returnUrl(deps, projectId, 'cancelled'),
  })
}

async function customerOf(deps: Deps, projectId: string): Promise<string | null> {
  return (await repo.subscription(deps.store, projectId))?.customerId ?? null
}

/** POST /users/@me/projects/:id/billing-portal: a portal session of the project's customer. */
export async function billingPortal(deps: Deps, userId: string, projectId: string): Promise<{ url: string }> {
  await requireAccess(deps, userId, projectId, 'billing')
  const p = provider(deps)
  const customerId = await customerOf(deps, projectId)
  if (!customerId) throw conflict('The project has no customer at the payment provider yet: subscribe first (POST /users/@me/projects/:id/checkout)')
  return p.createPortalSession({ customerId, returnUrl: returnUrl(deps, projectId) })
}

/** GET /users/@me/projects/:id/billing-invoices: the customer's invoices, newest first, in pages (`cursor` is the last invoice id). */
export async function invoices(deps: Deps, userId: string, projectId: string, query: { limit?: number; cursor?: string }) {
  await requireAccess(deps, userId, projectId, 'billing')
  const p = provider(deps)
  const customerId = await customerOf(deps, projectId)
  if (!customerId) return { invoices: [], cursor: null, hasMore: false }
  const page = await p.listInvoices({ customerId, limit: Math.min(Math.max(query.limit ?? 20, 1), 100), startingAfter: query.cursor || undefined })
  const last = page.invoices.at(-1)
  return { invoices: page.invoices, cursor: page.hasMore && last ? last.id : null, hasMore: page.hasMore && Boolean(last) }
}

// ---------------------------------------------------------------------------------------------------
// POST /webhooks/incoming/:provider

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? v as Record<string, unknown> : {})
const idOf = (v: unknown): string | null => (typeof v === 'string' && v ? v : typeof obj(v).id === 'string' ? obj(v).id as string : null)
const dateOf = (unix: unknown): Date | null => (typeof unix === 'number' && Number.isFinite(unix) ? new Date(unix * 1000) : null)

/** Which project an event is about: its own reference (set by checkout), else the customer's project. */
async function projectOf(deps: Deps, db: Db, ref: unknown, customerId: string | null): Promise<string | null> {
  if (typeof ref === 'string' && ref && await repo.projectExists(deps.store, db, ref)) return ref
  return customerId ? repo.projectOfCustomer(deps.store, db, customerId) : null
}

/** Applies one verified event in `db`; returns the project it changed, or null when it is not for this server. */
async function apply(deps: Deps, db: Db, e: ProviderEvent, now: Date): Promise<string | null> {
  const o = e.object
  const customerId = idOf(o.customer)
  switch (e.type) {
    case 'checkout.session.completed': {
      const projectId = await projectOf(deps, db, o.client_reference_id ?? obj(o.metadata).projectId, customerId)
      if (!projectId) return null
      const paid = o.payment_status === 'paid' || o.payment_status === 'no_payment_required'
      await repo.applySubscription(deps.store, db, projectId, { customerId, subscriptionId: idOf(o.subscription) },
        { status: paid ? 'active' : 'incomplete', priceId: providerSettings(deps.config)?.priceId ?? null }, e.created, now)
      return projectId
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const projectId = await projectOf(deps, db, obj(o.metadata).projectId, customerId)
      if (!projectId) return null
      const item = obj((obj(o.items).data as unknown[] | undefined)?.[0])
      const status = e.type === 'customer.subscription.deleted' ? 'canceled' : typeof o.status === 'string' ? o.status : undefined
      await repo.applySubscription(deps.store, db, projectId, { customerId, subscriptionId: idOf(o.id) }, {
        status,
        priceId: idOf(item.price) ?? undefined,
        // Newer API versions keep the period on the item.
        currentPeriodEnd: dateOf(o.current_period_end ?? item.current_period_end) ?? undefined,
        cancelAtPeriodEnd: typeof o.cancel_at_period_end === 'boolean' ? o.cancel_at_period_end : undefined,
      }, e.created, now)
      return projectId
    }
    case 'invoice.paid': {
      const meta = obj(obj(obj(o.parent).subscription_details).metadata)
      const projectId = await projectOf(deps, db, meta.projectId ?? obj(o.metadata).projectId, customerId)
      if (!projectId) return null
      const current = await repo.subscription(deps.store, projectId, db)
      const paidAt = dateOf(obj(o.status_transitions).paid_at) ?? e.created
      // A paid invoice settles a subscription that was waiting for its payment.
      const settles = !current || ['past_due', 'unpaid', 'incomplete'].includes(current.status)
      await repo.applySubscription(deps.store, db, projectId, { customerId, subscriptionId: idOf(o.subscription) },
        { lastInvoicePaidAt: paidAt, ...(settles ? { status: 'active' } : {}) }, e.created, now)
      return projectId
    }
    default:
      return null
  }
}

/**
 * A delivery of the provider's webhook: the signature and its timestamp are checked (400 malformed, 403
 * wrong or stale), the event id is recorded in the same transaction that applies the event, so a
 * redelivery or a replay is answered 200 and changes nothing. Events about no project of this server and
 * types not handled are acknowledged (200) and recorded as ignored, so the provider does not retry them.
 */
export async function handleProviderWebhook(deps: Deps, providerName: string, payload: string, signature: string | null, now = deps.clock.date()) {
  const p = provider(deps)
  if (providerName !== 'stripe') throw notFound(`payment provider "${providerName}" (this server speaks to stripe: POST /webhooks/incoming/stripe)`)
  const event = p.verifyWebhook(payload, signature, now)
  return deps.store.tx(async (db) => {
    if (!(await repo.claimEvent(deps.store, db, event.id, event.type, now))) return { received: true, duplicate: true, outcome: 'duplicate' as const }
    const projectId = await apply(deps, db, event, now)
    const outcome = projectId ? 'applied' as const : 'ignored' as const
    await repo.setEventOutcome(deps.store, db, event.id, outcome, projectId)
    if (!projectId) deps.log.info('billing webhook event ignored', { eventId: event.id, type: event.type })
    return { received: true, duplicate: false, outcome }
  })
}
