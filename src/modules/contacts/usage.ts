import type { Ctx } from '../../deps'

/**
 * Where a custom contact field or an event name is referenced. Each module that references them
 * (segments: filter conditions; campaigns: audience conditions; workflows: trigger, WAIT_FOR_EVENT and
 * CONDITION steps) exports a provider, and the composition root (`wireConsumers` in src/main.ts)
 * registers it:
 *
 *   registerUsageProvider({ kind: 'segments', fieldUsage: (ctx, field) => ..., eventUsage: (ctx, name) => ... })
 *
 * GET /contacts/fields/:field/usage and GET /events/:eventName/usage report every registered provider's
 * answer; a kind with no provider (its module is not built yet) reports an empty list.
 */
export type UsageKind = 'segments' | 'campaigns' | 'workflows'

export interface UsageRef {
  id: string
  name: string
  /** Where inside the resource, e.g. "condition", "audienceCondition", "trigger", "step <name>". */
  where?: string
}

export interface UsageProvider {
  kind: UsageKind
  fieldUsage?(ctx: Ctx, field: string): Promise<UsageRef[]>
  eventUsage?(ctx: Ctx, eventName: string): Promise<UsageRef[]>
}

const providers: UsageProvider[] = []

/** Registers a provider; returns a function that removes it (tests). */
export function registerUsageProvider(p: UsageProvider): () => void {
  providers.push(p)
  return () => { const i = providers.indexOf(p); if (i >= 0) providers.splice(i, 1) }
}

export type UsageReport = Record<UsageKind, UsageRef[]> & { inUse: boolean }

async function collect(ask: (p: UsageProvider) => Promise<UsageRef[]> | undefined): Promise<UsageReport> {
  const report: UsageReport = { segments: [], campaigns: [], workflows: [], inUse: false }
  for (const p of providers) {
    const refs = await ask(p)
    if (refs?.length) report[p.kind].push(...refs)
  }
  report.inUse = report.segments.length + report.campaigns.length + report.workflows.length > 0
  return report
}

export function fieldUsage(ctx: Ctx, field: string): Promise<UsageReport> {
  return collect((p) => p.fieldUsage?.(ctx, field))
}

export function eventUsage(ctx: Ctx, eventName: string): Promise<UsageReport> {
  return collect((p) => p.eventUsage?.(ctx, eventName))
}
