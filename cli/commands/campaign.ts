import type { Command } from 'commander'
import { ctxFor, type Deps } from '../../src/deps'
import type { Campaign } from '../../src/modules/campaigns/model'
import { emit, need, table, UsageError, withDeps } from '../shared'

async function cliCtx(deps: Deps, projectRef: string) {
  const { findProject } = await import('../../src/modules/projects/service')
  const project = await findProject(deps.store, projectRef)
  return ctxFor(deps, project.id, { kind: 'cli' })
}

const STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED']

/** `mailctl campaign list|show|send|cancel PROJECT [ID]`: the same verbs as the HTTP API. */
export function register(program: Command): void {
  const cmd = program.command('campaign').description('campaigns: list them, show one with its stats, send one now or at a time, cancel one')
  cmd.command('list')
    .description('list the campaigns of PROJECT, newest first')
    .argument('[project]', 'project id or name')
    .option('--status <status>', `only this status: ${STATUSES.join(', ')}`)
    .option('--search <text>', 'only campaigns whose name, subject or sender contains this text')
    .option('--limit <n>', 'at most this many campaigns (default: all)')
    .action(async (projectArg: string | undefined, opts: { status?: string; search?: string; limit?: string }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      if (opts.status && !STATUSES.includes(opts.status)) throw new UsageError(`--status must be one of ${STATUSES.join(', ')}`)
      const max = opts.limit === undefined ? Infinity : Number(opts.limit)
      if (!(max >= 1) || (Number.isFinite(max) && !Number.isInteger(max))) throw new UsageError('--limit must be a positive integer')
      const { listCampaigns } = await import('../../src/modules/campaigns/service')
      const rows = await withDeps(c, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        const out: Campaign[] = []
        for (let page = 1; out.length < max; page++) {
          const res = await listCampaigns(ctx, { page, pageSize: 100, status: opts.status, search: opts.search })
          out.push(...res.data)
          if (page >= res.totalPages) break
        }
        return out.slice(0, Number.isFinite(max) ? max : undefined)
      })
      emit(c, rows, () => table(rows.map((x) => ({
        id: x.id, name: x.name, status: x.status, audience: x.audienceType, scheduledFor: x.scheduledFor ?? '', recipients: x.totalRecipients, queued: x.sentCount, created: x.createdAt,
      })), ['id', 'name', 'status', 'audience', 'scheduledFor', 'recipients', 'queued', 'created']))
    })
  cmd.command('show')
    .description('one campaign of PROJECT with its stats')
    .argument('[project]', 'project id or name')
    .argument('[id]', 'campaign id')
    .action(async (projectArg: string | undefined, idArg: string | undefined, _opts: unknown, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const id = await need(idArg, { flag: 'ID', message: 'Campaign id' })
      const { getCampaign, campaignStats } = await import('../../src/modules/campaigns/service')
      const out = await withDeps(c, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        return { ...(await getCampaign(ctx, id)), stats: await campaignStats(ctx, id) }
      })
      emit(c, out, () => {
        const { stats } = out
        const lines: Array<[string, unknown]> = [
          ['id', out.id], ['name', out.name], ['status', out.status], ['type', out.type], ['from', out.from], ['subject', out.subject],
          ['audience', out.audienceType === 'SEGMENT' ? `SEGMENT ${out.segmentId}` : out.audienceType], ['scheduledFor', out.scheduledFor ?? ''], ['sentAt', out.sentAt ?? ''],
          ['recipients', stats.totalRecipients], ['queued', stats.queued], ['pending', stats.pending], ['sent', stats.sent], ['delivered', stats.delivered],
          ['opened', stats.opened], ['clicked', stats.clicked], ['bounced', stats.bounced], ['complained', stats.complained], ['failed', stats.failed],
          ['skipped (unsubscribed)', stats.skippedUnsubscribed], ['skipped (suppressed)', stats.skippedSuppressed],
        ]
        return lines.map(([k, v]) => `${k.padEnd(24)}${v}`).join('\n')
      })
    })
  cmd.command('send')
    .description('send a DRAFT campaign of PROJECT now, or at --at')
    .argument('[project]', 'project id or name')
    .argument('[id]', 'campaign id')
    .option('--at <date>', 'when to send (any date the server parses, e.g. 2030-01-31T09:00:00Z); in the past or omitted: now')
    .action(async (projectArg: string | undefined, idArg: string | undefined, opts: { at?: string }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const id = await need(idArg, { flag: 'ID', message: 'Campaign id' })
      const { sendCampaign } = await import('../../src/modules/campaigns/service')
      const out = await withDeps(c, async (deps) => sendCampaign(await cliCtx(deps, ref), id, { scheduledFor: opts.at ?? null }))
      emit(c, out.data, () => `${out.data.name}: ${out.message}`)
    })
  cmd.command('cancel')
    .description('cancel a SCHEDULED or SENDING campaign of PROJECT (mail already queued is still delivered)')
    .argument('[project]', 'project id or name')
    .argument('[id]', 'campaign id')
    .action(async (projectArg: string | undefined, idArg: string | undefined, _opts: unknown, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const id = await need(idArg, { flag: 'ID', message: 'Campaign id' })
      const { cancelCampaign } = await import('../../src/modules/campaigns/service')
      const out = await withDeps(c, async (deps) => cancelCampaign(await cliCtx(deps, ref), id))
      emit(c, out, () => `${out.name}: ${out.status} (${out.sentCount} of the audience queued before the cancel)`)
    })
}
