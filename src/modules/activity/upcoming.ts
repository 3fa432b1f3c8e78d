import type { Ctx } from '../../deps'

/**
 * What is about to happen, for GET /activity/upcoming. The activity module lists SCHEDULED campaigns and
 * deferred mail itself; other modules add their own kinds through a registered source, plugged in by the
 * composition root (`wireConsumers` in src/main.ts), never on import:
 *
 *   registerUpcomingSource({ kind: 'workflow', list: (ctx, limit) => waitingExecutions(ctx, limit), count: (ctx) => ... })
 *
 * The workflows module plugs in here: its source should list the project's WAITING executions (a DELAY or a
 * WAIT_FOR_EVENT step) with the moment they resume (`at`, the delay's end or the wait's timeout), soonest
 * first, titled with the workflow's name, with `detail: {workflowId, contactId, stepId, stepType}`.
 */
export interface UpcomingEntry {
  /** The entry's own id (execution id...). */
  id: string
  at: Date
  title: string
  detail: Record<string, unknown>
}

export interface UpcomingSource {
  kind: string
  /** The first `limit` entries of the project, soonest first. */
  list(ctx: Ctx, limit: number): Promise<UpcomingEntry[]>
  /** How many entries the project has in all. */
  count(ctx: Ctx): Promise<number>
}

const sources: UpcomingSource[] = []

/** Registers a source; returns a function that removes it (tests, unwireConsumers). */
export function registerUpcomingSource(s: UpcomingSource): () => void {
  sources.push(s)
  return () => { const i = sources.indexOf(s); if (i >= 0) sources.splice(i, 1) }
}

export function upcomingSources(): readonly UpcomingSource[] {
  return sources
}
