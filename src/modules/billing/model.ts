import { t } from 'elysia'

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
})

export const ProjectParams = t.Object({ id: t.String() })
