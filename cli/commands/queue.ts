import type { Command } from 'commander'
import { notFound } from '../../src/errors'
import { emit, table, UsageError, withDeps } from '../shared'

function limitOf(v: string | undefined, def: number): number {
  if (v === undefined) return def
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new UsageError('--limit must be an integer between 1 and 10000')
  return n
}

/**
 * `mailctl queue`: outbound queue depth, deferred mail and the next retries.
 * `mailctl queue --captured`: mail stored by MAILCTL_OUTBOUND=capture (and system mail), newest first;
 * `--raw ID` prints one captured message (capture id or email id) as it would have been sent.
 */
export function register(program: Command): void {
  program.command('queue')
    .description('outbound queue: depth, deferred mail and next retries (--captured: captured mail)')
    .option('--captured', 'list captured mail instead (MAILCTL_OUTBOUND=capture)')
    .option('--raw <id>', 'with --captured: print the raw message of one capture (capture id or email id)')
    .option('--project <id>', 'with --captured: only this project')
    .option('--limit <n>', 'rows to list (default 20)')
    .action(async (opts: { captured?: boolean; raw?: string; project?: string; limit?: string }, cmd: Command) => {
      const limit = limitOf(opts.limit, 20)
      if (opts.raw !== undefined && !opts.captured) throw new UsageError('--raw needs --captured')
      if (opts.captured) {
        const { listCaptured } = await import('../../src/mail/outbound/capture-repo')
        if (opts.raw !== undefined) {
          const id = opts.raw
          const raw = await withDeps(cmd, async (deps) => {
            const rows = await listCaptured(deps.store, { projectId: opts.project, limit: 10_000, withRaw: true })
            const hit = rows.find((r) => r.id === id || r.emailId === id)
            if (!hit) throw notFound(`captured message ${id}`)
            return hit
          })
          emit(cmd, raw, () => raw.raw ?? `(no raw message stored for ${raw.id}: system mail keeps text and html only)`)
          return
        }
        const rows = await withDeps(cmd, (deps) => listCaptured(deps.store, { projectId: opts.project, limit }))
        emit(cmd, rows, () => table(rows.map((r) => ({ ...r, emailId: r.emailId ?? '' })), ['id', 'createdAt', 'kind', 'from', 'to', 'subject', 'emailId']))
        return
      }
      const { deferredEntries, queueStats } = await import('../../src/mail/outbound/queue-repo')
      const out = await withDeps(cmd, async (deps) => {
        const now = deps.clock.date()
        return { ...(await queueStats(deps.store, now)), transport: deps.config.outbound.replace(/\/\/[^@/]*@/, '//***@'), nextRetries: await deferredEntries(deps.store, limit, now) }
      })
      emit(cmd, out, () => [
        `transport        ${out.transport}`,
        `depth            ${out.depth}  (queued, deferred or being delivered)`,
        `due now          ${out.due}`,
        `in flight        ${out.inFlight}`,
        `deferred         ${out.deferred}`,
        `oldest queued    ${out.oldestQueuedAt?.toISOString() ?? '-'}`,
        `next retry       ${out.nextRetryAt?.toISOString() ?? '-'}`,
        '',
        out.nextRetries.length ? `next retries:\n${table(out.nextRetries.map((d) => ({ ...d, lastError: (d.lastError ?? '').slice(0, 70) })), ['nextAttemptAt', 'attempts', 'to', 'emailId', 'lastError'])}` : 'no deferred mail',
      ].join('\n'))
    })
}
