import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Config } from '../../config'
import type { FetchLike } from '../../deps'
import { AppError, badRequest } from '../../errors'
import { isStorableTime, storableCopy } from '../../storable'

/**
 * The one adapter to the payment provider: Stripe's HTTP API (or anything that speaks it), at
 * MAILCTL_BILLING_PROVIDER_URL (default https://api.stripe.com; tests point it at a fake on loopback).
 * Requests are form-encoded with `Authorization: Bearer MAILCTL_BILLING_SECRET_KEY`, as Stripe expects;
 * webhook deliveries are verified with MAILCTL_BILLING_WEBHOOK_SECRET (the `Stripe-Signature` scheme).
 * Billing is on only when the secret key is set (src/config.ts requires the other two settings with it).
 */

export interface ProviderSettings { url: string; secretKey: string; webhookSecret: string; priceId: string }

/** The provider settings of this configuration, or null when payment-provider billing is off. */
export function providerSettings(config: Config): ProviderSettings | null {
  if (!config.billingSecretKey || !config.billingWebhookSecret || !config.billingPriceId) return null
  return { url: config.billingProviderUrl, secretKey: config.billingSecretKey, webhookSecret: config.billingWebhookSecret, priceId: config.billingPriceId }
}

/** How far a signed webhook's timestamp may be from now (Stripe's default tolerance). */
export const SIGNATURE_TOLERANCE_SECONDS = 300

export interface CheckoutInput {
  projectId: string
  customerId: string | null
  customerEmail: string
  successUrl: string
  cancelUrl: string
}

export interface ProviderInvoice {
  id: string
  number: string | null
  status: string | null
  currency: string
  total: number
  amountDue: number
  amountPaid: number
  createdAt: string
  periodStart: string | null
  periodEnd: string | null
  hostedInvoiceUrl: string | null
  pdfUrl: string | null
}

/** A verified webhook event, as the provider sent it. */
export interface ProviderEvent {
  id: string
  type: string
  created: Date
  object: Record<string, unknown>
}

type Form = { [key: string]: string | number | boolean | null | undefined | Form | Form[] | string[] }

/** Stripe's form encoding: nested objects and arrays as `a[b][0][c]=v`; null and undefined are left out. */
export function formEncode(value: Form): string {
  const out = new URLSearchParams()
  const walk = (prefix: string, v: unknown) => {
    if (v === null || v === undefined) return
    if (Array.isArray(v)) v.forEach((x, i) => { walk(`${prefix}[${i}]`, x) })
    else if (typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}[${k}]` : k, x)
    else out.append(prefix, String(v))
  }
  walk('', value)
  return out.toString()
}

function unavailable(message: string, details?: Record<string, unknown>): AppError {
  return new AppError('BAD_GATEWAY', message, { details, suggestion: 'Try again later; if it persists, check MAILCTL_BILLING_PROVIDER_URL and MAILCTL_BILLING_SECRET_KEY (`mailctl doctor` does not call the provider).' })
}

const iso = (unix: unknown): string | null => (typeof unix === 'number' && Number.isFinite(unix) ? new Date(unix * 1000).toISOString() : null)
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null)
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

export interface PaymentProvider {
  readonly settings: ProviderSettings
  /** A checkout session for a subscription to the configured price; the customer pays at `url`. */
  createCheckoutSession(input: CheckoutInput): Promise<{ id: string; url: string }>
  /** A billing-portal session of a customer, who manages the subscription and payment methods at `url`. */
  createPortalSession(input: { customerId: string; returnUrl: string }): Promise<{ url: string }>
  /** A customer's invoices, newest first; `startingAfter` continues after an invoice id. */
  listInvoices(input: { customerId: string; limit: number; startingAfter?: string }): Promise<{ invoices: ProviderInvoice[]; hasMore: boolean }>
  /** The event of a webhook delivery whose `Stripe-Signature` is valid and recent; 400 or 403 otherwise. */
  verifyWebhook(payload: string, signatureHeader: string | null, now: Date): ProviderEvent
}

export function createProvider(settings: ProviderSettings, fetchImpl: FetchLike = fetch): PaymentProvider {
  async function call(method: 'GET' | 'POST', path: string, form: Form): Promise<Record<string, unknown>> {
    const body = formEncode(form)
    const url = `${settings.url}${path}${method === 'GET' && body ? `?${body}` : ''}`
    let res: Response
    try {
      res = await fetchImpl(url, {
        method,
        headers: {
          authorization: `Bearer ${settings.secretKey}`,
          accept: 'application/json',
          ...(method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: method === 'POST' ? body : undefined,
        signal: AbortSignal.timeout(20_000),
        redirect: 'manual',
      })
    } catch (err) {
      throw unavailable(`The payment provider could not be reached (${(err as Error).name === 'TimeoutError' ? 'no answer in time' : 'connection failed'})`)
    }
    const text = await res.text().catch(() => '')
    let json: unknown = null
    try { json = JSON.parse(text) } catch { /* checked below */ }
    if (!res.ok) {
      const providerMessage = str((json as { error?: { message?: unknown } } | null)?.error?.message)
      throw unavailable(`The payment provider refused the request (HTTP ${res.status})${providerMessage ? `: ${providerMessage}` : ''}`, { providerStatus: res.status })
    }
    if (!json || typeof json !== 'object') throw unavailable('The payment provider answered something that is not JSON')
    return json as Record<string, unknown>
  }

  return {
    settings,
    async createCheckoutSession(input) {
      const session = await call('POST', '/v1/checkout/sessions', {
        mode: 'subscription',
        line_items: [{ price: settings.priceId, quantity: 1 }],
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        client_reference_id: input.projectId,
        customer: input.customerId ?? undefined,
        customer_email: input.customerId ? undefined : input.customerEmail,
        metadata: { projectId: input.projectId },
        subscription_data: { metadata: { projectId: input.projectId } },
      })
      const id = str(session.id)
      const url = str(session.url)
      if (!id || !url) throw unavailable('The payment provider answered a checkout session without an id or URL')
      return { id, url }
    },
    async createPortalSession(input) {
      const session = await call('POST', '/v1/billing_portal/sessions', { customer: input.customerId, return_url: input.returnUrl })
      const url = str(session.url)
      if (!url) throw unavailable('The payment provider answered a portal session without a URL')
      return { url }
    },
    async listInvoices(input) {
      const list = await call('GET', '/v1/invoices', { customer: input.customerId, limit: input.limit, starting_after: input.startingAfter })
      if (!Array.isArray(list.data)) throw unavailable('The payment provider answered an invoice list without data')
      const invoices = (list.data as Array<Record<string, unknown>>).map((i): ProviderInvoice => ({
        id: String(i.id),
        number: str(i.number),
        status: str(i.status),
        currency: str(i.currency) ?? '',
        total: num(i.total),
        amountDue: num(i.amount_due),
        amountPaid: num(i.amount_paid),
        createdAt: iso(i.created) ?? new Date(0).toISOString(),
        periodStart: iso(i.period_start),
        periodEnd: iso(i.period_end),
        hostedInvoiceUrl: str(i.hosted_invoice_url),
        pdfUrl: str(i.invoice_pdf),
      }))
      return { invoices, hasMore: list.has_more === true }
    },
    verifyWebhook(payload, header, now) {
      return verifySignedEvent(payload, header, settings.webhookSecret, now)
    },
  }
}

/**
 * Stripe's webhook signature: `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.payload">[,v1=...]`.
 * Any v1 may match (the provider signs with each active secret during a rotation); compared in constant
 * time. A timestamp further than SIGNATURE_TOLERANCE_SECONDS from now is refused, so a captured delivery
 * cannot be replayed later (a replay within the window is caught by the event id).
 */
export function verifySignedEvent(payload: string, header: string | null, secret: string, now: Date): ProviderEvent {
  if (!header) throw badRequest('The Stripe-Signature header is missing')
  let t: number | null = null
  const signatures: string[] = []
  for (const part of header.split(',')) {
    const eq = part.indexOf('=')
    const k = part.slice(0, eq).trim()
    const v = part.slice(eq + 1).trim()
    if (k === 't' && /^\d{1,12}$/.test(v)) t = Number(v)
    else if (k === 'v1' && /^[0-9a-f]{64}$/i.test(v)) signatures.push(v.toLowerCase())
  }
  if (t === null || !signatures.length) throw badRequest('The Stripe-Signature header is malformed: it needs t=<timestamp> and v1=<signature>')
  const expected = createHmac('sha256', secret).update(`${t}.${payload}`).digest()
  const valid = signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected))
  if (!valid) throw new AppError('FORBIDDEN', 'The webhook signature does not match (check MAILCTL_BILLING_WEBHOOK_SECRET)')
  if (Math.abs(now.getTime() / 1000 - t) > SIGNATURE_TOLERANCE_SECONDS) {
    throw new AppError('FORBIDDEN', `The webhook timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} seconds from this server's clock: refused as a possible replay`)
  }
  // Storable (src/storable.ts): the provider signed it, so it is taken, with each NUL or lone surrogate
  // in its text as U+FFFD (customers' own names and metadata travel in it).
  let event: unknown
  try { event = storableCopy(JSON.parse(payload)) } catch { throw badRequest('The webhook body is not JSON') }
  const e = event as { id?: unknown; type?: unknown; created?: unknown; data?: { object?: unknown } } | null
  const object = e?.data?.object
  if (!e || typeof e.id !== 'string' || !e.id || typeof e.type !== 'string' || typeof e.created !== 'number' || !isStorableTime(e.created * 1000) || !object || typeof object !== 'object') {
    throw badRequest('The webhook body is not an event: it needs id, type, created (epoch seconds in the years 0001-9999) and data.object')
  }
  return { id: e.id, type: e.type, created: new Date(e.created * 1000), object: object as Record<string, unknown> }
}

/** The header value a provider would send for `payload` at `t` (tests and the fake provider). */
export function signPayload(payload: string, secret: string, t: number): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${payload}`).digest('hex')}`
}
