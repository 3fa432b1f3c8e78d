import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import type { TemplateUsage } from './model'

/**
 * Where a template is referenced. Campaigns and workflows live in modules built after this one, so the
 * look-ups are plug-ins: the composition root (`wireConsumers` in src/main.ts) registers each module's
 * source once, and until one is registered, its list is empty. Sources receive the caller's `db` so that DELETE can check usage
 * and delete in one transaction.
 */
export type CampaignUse = TemplateUsage['campaigns'][number]
export type WorkflowStepUse = TemplateUsage['workflowSteps'][number]

export interface TemplateUsageSources {
  /** Campaigns built from the template: id, name, status. */
  campaigns: (ctx: Ctx, templateId: string, db: Db) => Promise<CampaignUse[]>
  /** SEND_EMAIL steps whose config.templateId is the template. */
  workflowSteps: (ctx: Ctx, templateId: string, db: Db) => Promise<WorkflowStepUse[]>
}

const none = async () => []
const sources: TemplateUsageSources = { campaigns: none, workflowSteps: none }

/** Plugs in (or, with null, removes) the look-up of one kind of reference. */
export function registerTemplateUsageSource<K extends keyof TemplateUsageSources>(kind: K, source: TemplateUsageSources[K] | null): void {
  sources[kind] = (source ?? none) as TemplateUsageSources[K]
}

/** Campaign states after which a campaign no longer needs its template. */
const FINISHED_CAMPAIGN = new Set(['SENT', 'CANCELLED'])

export async function templateUsage(ctx: Ctx, templateId: string, db: Db): Promise<TemplateUsage> {
  const [campaigns, workflowSteps] = await Promise.all([
    sources.campaigns(ctx, templateId, db),
    sources.workflowSteps(ctx, templateId, db),
  ])
  return {
    templateId,
    campaigns,
    workflowSteps,
    inUse: workflowSteps.length > 0 || campaigns.some((c) => !FINISHED_CAMPAIGN.has(c.status)),
  }
}
