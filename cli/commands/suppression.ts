import type { Command } from 'commander'
import { ctxFor, type Deps } from '../../src/deps'
import { SUPPRESSION_REASONS, type SuppressionReason } from '../../src/modules/suppressions/reasons'
import type { Suppression } from '../../src/modules/suppressions/service'
import { emit, need, table, UsageError, withDeps } from '../shared'

async function cliCtx(deps: Deps, projectRef: string) {
  const { findProject } = await import('../../src/modules/projects/service')
  const project = await findProject(deps.store, projectRef)
  return ctxFor(deps, project.id, { kind: 'cli' })
}

/** `mailctl suppression list|add|remove PROJECT [EMAIL]`: the addresses a project never sends to. */
export function register(program: Command): void {
  const cmd = program.command('suppression').description('the suppression list: addresses a project never sends to (hard bounces, complaints, manual entries)')
  cmd.command('list')
    .description('list the suppressed addresses of PROJECT, newest first')
    .argument('[project]', 'project id or name')
    .option('--reason <reason>', `only this reason: ${SUPPRESSION_REASONS.join(', ')}`)
    .option('--search <text>', 'only addresses containing this text')
    .option('--limit <n>', 'at most this many entries (default: all)')
    .action(async (projectArg: string | undefined, opts: { reason?: string; search?: string; limit?: string }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      if (opts.reason && !SUPPRESSION_REASONS.includes(opts.reason as SuppressionReason)) throw new UsageError(`--reason must be one of ${SUPPRESSION_REASONS.join(', ')}`)
      const max = opts.limit === undefined ? Infinity : Number(opts.limit)
      if (!(max >= 1) || (Number.isFinite(max) && !Number.isInteger(max))) throw new UsageError('--limit must be a positive integer')
      const { listSuppressions } = await import('../../src/modules/suppressions/service')
      const rows = await withDeps(c, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        const out: Suppression[] = []
        let cursor: string | undefined
        do {
          const page = await listSuppressions(ctx, { limit: 100, cursor, reason: opts.reason as SuppressionReason | undefined, search: opts.search })
          out.push(...page.data)
          cursor = page.hasMore && page.cursor ? page.cursor : undefined
        } while (cursor && out.length < max)
        return out.slice(0, Number.isFinite(max) ? max : undefined)
      })
      emit(c, rows, () => table(rows.map((s) => ({ email: s.email, reason: s.reason, since: s.createdAt, emailId: s.emailId ?? '', detail: (s.detail ?? '').slice(0, 80) })), ['email', 'reason', 'since', 'emailId', 'detail']))
    })
  cmd.command('add')
    .description('suppress EMAIL for PROJECT (reason manual)')
    .argument('[project]', 'project id or name')
    .argument('[email]', 'the address')
    .option('--note <text>', 'why')
    .action(async (projectArg: string | undefined, emailArg: string | undefined, opts: { note?: string }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const email = await need(emailArg, { flag: 'EMAIL', message: 'Address to suppress' })
      const { addSuppression } = await import('../../src/modules/suppressions/service')
      const out = await withDeps(c, async (deps) => addSuppression(await cliCtx(deps, ref), { email, note: opts.note }))
      emit(c, out, () => `suppressed ${out.email} (${out.reason})`)
    })
  cmd.command('remove')
    .description('remove EMAIL from the suppression list of PROJECT: it can be sent to again')
    .argument('[project]', 'project id or name')
    .argument('[email]', 'the address')
    .action(async (projectArg: string | undefined, emailArg: string | undefined, _opts: unknown, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const email = await need(emailArg, { flag: 'EMAIL', message: 'Address to remove' })
      const { removeSuppression } = await import('../../src/modules/suppressions/service')
      await withDeps(c, async (deps) => removeSuppression(await cliCtx(deps, ref), email))
      const out = { email: email.trim().toLowerCase(), removed: true }
      emit(c, out, () => `removed ${out.email} from the suppression list`)
    })
}
