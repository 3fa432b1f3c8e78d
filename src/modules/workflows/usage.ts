import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import type { UpcomingSource } from '../activity/upcoming'
import type { UsageProvider, UsageRef } from '../contacts/usage'
import type { WorkflowStepUse } from '../templates/usage'
import * as repo from './repo'

/**
 * What other modules ask of workflows (plugged in by `wireConsumers`, src/main.ts): which SEND_EMAIL steps use
 * a template, and where a contact field or an event name is referenced (trigger, WAIT_FOR_EVENT, CONDITION).
 */
export async function workflowStepsUsingTemplate(ctx: Ctx, templateId: string, db: Db): Promise<WorkflowStepUse[]> {
  return repo.stepsUsingTemplate(ctx.store, db, ctx.projectId, templateId)
}

export const workflowFieldAndEventUsage: UsageProvider = {
  kind: 'workflows',
  async fieldUsage(ctx, field) {
    const wfs = new Map((await repo.allWorkflows(ctx.store, ctx.store.db, ctx.projectId)).map((w) => [w.id, w]))
    const refs: UsageRef[] = []
    for (const s of await repo.stepsOf(ctx.store, ctx.store.db, ctx.projectId, [...wfs.keys()])) {
      const f = s.config.field
      if (s.type === 'CONDITION' && typeof f === 'string' && (f === field || f === `data.${field}` || f.startsWith(`data.${field}.`))) {
        refs.push({ id: s.workflowId, name: wfs.get(s.workflowId)?.name ?? '', where: `step ${s.name}` })
      }
    }
    return refs
  },
  async eventUsage(ctx, eventName) {
    const wfs = await repo.allWorkflows(ctx.store, ctx.store.db, ctx.projectId)
    const byId = new Map(wfs.map((w) => [w.id, w]))
    const refs: UsageRef[] = wfs.filter((w) => w.triggerEvent === eventName).map((w) => ({ id: w.id, name: w.name, where: 'trigger' }))
    for (const s of await repo.stepsOf(ctx.store, ctx.store.db, ctx.projectId, [...byId.keys()])) {
      const hit = (s.type === 'WAIT_FOR_EVENT' && s.config.eventName === eventName)
        || (s.type === 'CONDITION' && typeof s.config.field === 'string' && s.config.field === `event.${eventName}`)
      if (hit) refs.push({ id: s.workflowId, name: byId.get(s.workflowId)?.name ?? '', where: `step ${s.name}` })
    }
    return refs
  },
}

/** Waiting executions for GET /activity/upcoming: each resumes at its delay's end or its wait's timeout. */
export const workflowUpcomingSource: UpcomingSource = {
  kind: 'workflow',
  async list(ctx, limit) {
    const rows = await repo.upcomingWaits(ctx.store, ctx.store.db, ctx.projectId, limit)
    return rows.flatMap((r) => r.waitUntil ? [{
      id: r.id, at: r.waitUntil, title: r.name,
      detail: { workflowId: r.workflowId, contactId: r.contactId, stepId: r.stepId, stepType: r.stepType },
    }] : [])
  },
  count: (ctx) => repo.countUpcomingWaits(ctx.store, ctx.store.db, ctx.projectId),
}
