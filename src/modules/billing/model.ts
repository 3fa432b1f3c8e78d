import { t } from 'elysia'
import { positiveIntQuery } from '../query'

const cap = (what: string) => t.Union([t.Integer({ minimum: 0 }), t.Null()], { description: `Emails per calendar month (UTC) for ${what}; null: no cap`, error: 'expected a whole number of emails, 0 or more, or null for no cap' })

export const BillingLimits = t.Object({
  transactional: cap('POST /v1/send and the SMTP relay'),
  campaigns: cap('campaigns (and their test sends)'),
  workflows: cap('workflow emails'),
  inbound: cap('inbound messages received on the project\'s domains'),
})

/** PUT body: the categories given are set (null removes a cap); the others keep their value. */
export const BillingLimitsBody = t.Partial(BillingLimits)

export const BillingConsumption = t.Object({
  periodStart: t.String({ format: 'date-time' }),
  periodEnd: t.String({ format: 'date-time', description: 'Exclusive: the first instant of the next month' }),
  transactional: t.Integer(),
  campaigns: t.Integer(),
  workflows: t.Integer(),
  inbound: t.Integer(),
  limits: BillingLimits,
  subscription: t.Union([t.Object({
    status: t.String({ description: "The payment provider's subscription status: active, trialing, past_due, unpaid, canceled, incomplete, ..." }),
    priceId: t.Union([t.String(), t.Null()]),
    currentPeriodEnd: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    cancelAtPeriodEnd: t.Boolean(),
    lastInvoicePaidAt: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  }), t.Null()], { description: 'The project\'s subscription at the payment provider, as its webhook reported it; null when it never subscribed (or billing is off)' }),
})

export const ProjectParams = t.Object({ id: t.String() })

export const CheckoutSession = t.Object({
  id: t.String({ description: "The provider's checkout session id" }),
  url: t.String({ description: 'Send the user here to pay; the provider sends them back to the dashboard' }),
})

export const PortalSession = t.Object({ url: t.String({ description: "The provider's billing portal for the project's customer" }) })

const nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

export const Invoice = t.Object({
  id: t.String(),
  number: nullable(t.String()),
  status: nullable(t.String({ description: 'draft, open, paid, uncollectible or void' })),
  currency: t.String(),
  total: t.Number({ description: 'In the smallest unit of the currency (cents)' }),
  amountDue: t.Number(),
  amountPaid: t.Number(),
  createdAt: t.String({ format: 'date-time' }),
  periodStart: nullable(t.String({ format: 'date-time' })),
  periodEnd: nullable(t.String({ format: 'date-time' })),
  hostedInvoiceUrl: nullable(t.String()),
  pdfUrl: nullable(t.String()),
})

export const InvoicesQuery = t.Object({
  limit: positiveIntQuery('limit', '1 to 100, default 20; larger values are clamped to 100'),
  cursor: t.Optional(t.String({ maxLength: 255, description: 'The `cursor` of the previous page' })),
})

export const InvoicesPage = t.Object({
  invoices: t.Array(Invoice),
  cursor: nullable(t.String()),
  hasMore: t.Boolean(),
})

export const WebhookResult = t.Object({
  received: t.Boolean(),
  duplicate: t.Boolean({ description: 'The event id was handled before: nothing changed' }),
  outcome: t.Union([t.Literal('applied'), t.Literal('ignored'), t.Literal('duplicate')]),
})

export const ProviderParams = t.Object({ provider: t.String() })
