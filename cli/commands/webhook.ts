import type { Command } from 'commander'
import { ctxFor, type Deps } from '../../src/deps'
import { emit, need, table, UsageError, withDeps } from '../shared'

async function cliCtx(deps: Deps, projectRef: string) {
  const { findProject } = await import('../../src/modules/projects/service')
  const project = await findProject(deps.store, projectRef)
  return ctxFor(deps, project.id, { kind: 'cli' })
}

/** `mailctl webhook list|add|remove PROJECT ...`: a project's customer webhook endpoints. */
export function register(program: Command): void {
  const cmd = program.command('webhook').description('customer webhooks: the endpoints that receive a project\'s events, signed (Standard Webhooks)')
  cmd.command('list')
    .description('list the webhook endpoints of PROJECT')
    .argument('[project]', 'project id or name')
    .action(async (projectArg: string | undefined, _opts: unknown, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const { listEndpoints } = await import('../../src/modules/hooks/service')
      const rows = (await withDeps(c, async (deps) => listEndpoints(await cliCtx(deps, ref)))).data
      emit(c, rows, () => table(rows.map((e) => ({
        id: e.id, url: e.url, events: e.eventTypes.join(','), enabled: e.enabled ? 'yes' : 'no',
        state: e.disabledReason ?? (e.failingSince ? `failing since ${e.failingSince}` : ''),
      })), ['id', 'url', 'events', 'enabled', 'state']))
    })
  cmd.command('add')
    .description('add an endpoint to PROJECT; prints its signing secret, shown only this once')
    .argument('[project]', 'project id or name')
    .argument('[url]', 'the http(s) URL events are POSTed to')
    .option('--events <types>', 'comma-separated event names or patterns (email.*, contact.*, segment.*, a tracked event); default every event')
    .option('--description <text>', 'what the endpoint is for')
    .option('--disabled', 'add it disabled')
    .action(async (projectArg: string | undefined, urlArg: string | undefined, opts: { events?: string; description?: string; disabled?: boolean }, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const url = await need(urlArg, { flag: 'URL', message: 'Endpoint URL' })
      const eventTypes = opts.events?.split(',').map((s) => s.trim()).filter(Boolean)
      if (opts.events !== undefined && !eventTypes?.length) throw new UsageError('--events needs at least one event name or pattern')
      const { createEndpoint } = await import('../../src/modules/hooks/service')
      const { CreateEndpointBody } = await import('../../src/modules/hooks/model')
      const { parseInput } = await import('../../src/modules/validate')
      const body = parseInput(CreateEndpointBody, { url, eventTypes, description: opts.description, enabled: opts.disabled ? false : undefined })
      const out = await withDeps(c, async (deps) => createEndpoint(await cliCtx(deps, ref), body))
      emit(c, out, () => `added ${out.id} -> ${out.url} (${out.eventTypes.join(', ')})\nsigning secret (shown only now): ${out.secret}`)
    })
  cmd.command('remove')
    .description('remove endpoint ID of PROJECT, with its deliveries and their log')
    .argument('[project]', 'project id or name')
    .argument('[id]', 'the endpoint id')
    .action(async (projectArg: string | undefined, idArg: string | undefined, _opts: unknown, c: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const id = await need(idArg, { flag: 'ID', message: 'Endpoint id' })
      const { deleteEndpoint } = await import('../../src/modules/hooks/service')
      await withDeps(c, async (deps) => deleteEndpoint(await cliCtx(deps, ref), id))
      const out = { id, removed: true }
      emit(c, out, () => `removed webhook endpoint ${id}`)
    })
}
