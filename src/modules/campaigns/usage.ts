import type { Ctx } from '../../deps'
import { EMAIL_ACTIVITY_EVENTS } from '../../filters/types'
import type { UsageProvider, UsageRef } from '../contacts/usage'
import type { SegmentUser } from '../segments/usage'
import * as repo from './repo'

/**
 * The look-ups the composition root (`wireConsumers` in src/main.ts) registers for campaigns. This file
 * imports only the repo, so wiring them does not load the mail libraries (the CLI starts without them).
 */

/** States in which a campaign needs its segment: DELETE /segments/:id answers 409. */
const ACTIVE = ['SCHEDULED', 'SENDING'] as const

/** The segment user of campaigns: SCHEDULED or SENDING campaigns hold their segment. */
export const campaignsUsingSegment: SegmentUser = {
  kind: 'campaigns',
  usersOf: (ctx, segmentId) => repo.usingSegment(ctx.store, ctx.store.db, ctx.projectId, segmentId, ACTIVE),
}

/**
 * Where campaigns that are still to be sent (DRAFT, SCHEDULED, SENDING) reference a contact field or an
 * event: the audience condition (FILTERED), and for fields also a `{{field}}` placeholder of the subject or
 * body. Registered by `wireConsumers` (src/main.ts) for GET /contacts/fields/:field/usage and
 * GET /events/:eventName/usage.
 */
const UNSENT = ['DRAFT', 'SCHEDULED', 'SENDING'] as const

function fieldsOf(tree: unknown): string[] {
  const out: string[] = []
  const walk = (t: unknown, depth: number) => {
    if (!t || typeof t !== 'object' || depth > 10) return
    const groups = (t as { groups?: unknown }).groups
    if (!Array.isArray(groups)) return
    for (const g of groups) {
      if (!g || typeof g !== 'object') continue
      const filters = (g as { filters?: unknown }).filters
      if (Array.isArray(filters)) {
        for (const f of filters) if (f && typeof f === 'object' && typeof (f as { field?: unknown }).field === 'string') out.push((f as { field: string }).field)
      }
      walk((g as { conditions?: unknown }).conditions, depth + 1)
    }
  }
  walk(tree, 0)
  return out
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

async function campaignsWhere(ctx: Ctx, test: (c: Awaited<ReturnType<typeof repo.withStatus>>[number]) => string | null): Promise<UsageRef[]> {
  const out: UsageRef[] = []
  for (const c of await repo.withStatus(ctx.store, ctx.store.db, ctx.projectId, UNSENT)) {
    const where = test(c)
    if (where) out.push({ id: c.id, name: c.name, where })
  }
  return out
}

const activityEventOf = (field: string): string | undefined => (EMAIL_ACTIVITY_EVENTS as Record<string, string>)[field]

export const campaignFieldAndEventUsage: UsageProvider = {
  kind: 'campaigns',
  fieldUsage(ctx, field) {
    const placeholder = new RegExp(`\\{\\{\\{?[#/]?\\s*(?:[a-z]+\\s+)?${escapeRe(field)}(?:[.\\s}]|$)`)
    return campaignsWhere(ctx, (c) => {
      if (c.audienceType === 'FILTERED' && fieldsOf(c.audienceCondition).some((f) => f === `data.${field}` || f.startsWith(`data.${field}.`) || f === field)) return 'audienceCondition'
      if (placeholder.test(c.subject)) return 'subject'
      if (placeholder.test(c.body)) return 'body'
      return null
    })
  },
  eventUsage(ctx, name) {
    return campaignsWhere(ctx, (c) => (
      c.audienceType === 'FILTERED' && fieldsOf(c.audienceCondition).some((f) => f === `event.${name}` || activityEventOf(f) === name) ? 'audienceCondition' : null
    ))
  },
}
