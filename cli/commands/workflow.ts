import type { Command } from 'commander'
import { ctxFor, type Deps } from '../../src/deps'
import type { Execution, WorkflowSummary } from '../../src/modules/workflows/model'
import { emit, need, table, UsageError, withDeps } from '../shared'

async function cliCtx(deps: Deps, projectRef: string) {
  const { findProject } = await import('../../src/modules/projects/service')
  const project = await findProject(deps.store, projectRef)
  return ctxFor(deps, project.id, { kind: 'cli' })
}

const STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED']

function positive(value: string | undefined, flag: string): number {
  if (value === undefined) return Infinity
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer`)
  return n
}

/** `mailctl workflow list|show|executions PROJECT ...`: the same verbs as the HTTP API, read-only. */
export function register(program: Command): void {
  const cmd = program.command('workflow').description('workflows: list them, show one with its steps, list or show its executions')
  cmd.command('list')
    .description('list the workflows of PROJECT, newest first')
    .argument('[project]', 'project id or name')
    .option('--search <text>', 'only workflows whose name contains this text')
    .option('--limit <n>', 'at most this many workflows (default: all)')
    .action(async (projectArg: string | undefined, opts: { search?: string; limit?: string }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const max = positive(opts.limit, '--limit')
      const { listWorkflows } = await import('../../src/modules/workflows/service')
      const rows = await withDeps(c, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        const out: WorkflowSummary[] = []
        for (let page = 1; out.length < max; page++) {
          const res = await listWorkflows(ctx, { page, pageSize: 100, search: opts.search })
          out.push(...res.data)
          if (page >= res.totalPages) break
        }
        return out.slice(0, Number.isFinite(max) ? max : undefined)
      })
      emit(c, rows, () => table(rows.map((w) => ({
        id: w.id, name: w.name, trigger: w.triggerConfig.eventName, enabled: w.enabled ? 'yes' : 'no', reentry: w.allowReentry ? 'yes' : 'no', created: w.createdAt,
      })), ['id', 'name', 'trigger', 'enabled', 'reentry', 'created']))
    })
  cmd.command('show')
    .description('one workflow of PROJECT with its steps, transitions and execution counts')
    .argument('[project]', 'project id or name')
    .argument('[id]', 'workflow id')
    .action(async (projectArg: string | undefined, idArg: string | undefined, _opts: unknown, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const id = await need(idArg, { flag: 'ID', message: 'Workflow id' })
      const { getWorkflow, listExecutions } = await import('../../src/modules/workflows/service')
      const out = await withDeps(c, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        const wf = await getWorkflow(ctx, id)
        const executions: Record<string, number> = {}
        for (const status of STATUSES) executions[status] = (await listExecutions(ctx, id, { status, limit: 1 })).total
        return { ...wf, executions }
      })
      emit(c, out, () => {
        const names = new Map(out.steps.map((s) => [s.id, s.name]))
        const lines = [
          `${'id'.padEnd(12)}${out.id}`, `${'name'.padEnd(12)}${out.name}`, `${'trigger'.padEnd(12)}${out.triggerConfig.eventName}`,
          `${'enabled'.padEnd(12)}${out.enabled ? 'yes' : 'no'}`, `${'reentry'.padEnd(12)}${out.allowReentry ? 'yes' : 'no'}`,
          `${'executions'.padEnd(12)}${STATUSES.map((s) => `${s} ${out.executions[s]}`).join(', ')}`,
          '', 'steps:',
          table(out.steps.map((s) => ({ id: s.id, type: s.type, name: s.name, config: JSON.stringify(s.config) })), ['id', 'type', 'name', 'config']),
          '', 'transitions:',
          ...out.transitions.map((t) => `  ${names.get(t.fromStepId)} -> ${names.get(t.toStepId)}${t.branch ? ` [${t.branch}]` : ''}`),
        ]
        return lines.join('\n')
      })
    })
  cmd.command('executions')
    .description('the executions of a workflow of PROJECT, newest first; with EXECUTION, that one with its step executions')
    .argument('[project]', 'project id or name')
    .argument('[workflow]', 'workflow id')
    .argument('[execution]', 'execution id (optional)')
    .option('--status <status>', `only this status: ${STATUSES.join(', ')}`)
    .option('--limit <n>', 'at most this many executions (default 100)')
    .action(async (projectArg: string | undefined, wfArg: string | undefined, execId: string | undefined, opts: { status?: string; limit?: string }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const wfId = await need(wfArg, { flag: 'WORKFLOW', message: 'Workflow id' })
      if (opts.status && !STATUSES.includes(opts.status)) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}`)
      const max = opts.limit === undefined ? 100 : positive(opts.limit, '--limit')
      const { getExecution, listExecutions } = await import('../../src/modules/workflows/service')
      if (execId) {
        const one = await withDeps(c, async (deps) => getExecution(await cliCtx(deps, ref), wfId, execId))
        emit(c, one, () => [
          `${'id'.padEnd(12)}${one.id}`, `${'status'.padEnd(12)}${one.status}`, `${'contact'.padEnd(12)}${one.contactId}`,
          `${'started'.padEnd(12)}${one.startedAt}`, `${'finished'.padEnd(12)}${one.finishedAt ?? ''}`, `${'error'.padEnd(12)}${one.error ?? ''}`, '',
          table((one.steps ?? []).map((s) => ({ step: s.stepId, type: s.stepType, status: s.status, started: s.startedAt, finished: s.finishedAt ?? '', error: s.error ?? '' })),
            ['step', 'type', 'status', 'started', 'finished', 'error']),
        ].join('\n'))
        return
      }
      const rows = await withDeps(c, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        const out: Execution[] = []
        let cursor: string | undefined
        while (out.length < max) {
          const res = await listExecutions(ctx, wfId, { status: opts.status, limit: Math.min(100, max - out.length), cursor })
          out.push(...res.data)
          if (!res.hasMore) break
          cursor = res.cursor
        }
        return out
      })
      emit(c, rows, () => table(rows.map((e) => ({
        id: e.id, contact: e.contactId, status: e.status, step: e.currentStepId ?? '', started: e.startedAt, error: e.error ?? '',
      })), ['id', 'contact', 'status', 'step', 'started', 'error']))
    })
}
