import type { Command } from 'commander'
import { ctxFor, type Deps } from '../../src/deps'
import type { DomainOut } from '../../src/modules/domains/model'
import { isFullyQualified } from '../../src/config'
import { emit, need, table, warnLine, withDeps } from '../shared'

async function cliCtx(deps: Deps, projectRef: string) {
  const { findProject } = await import('../../src/modules/projects/service')
  const project = await findProject(deps.store, projectRef)
  return ctxFor(deps, project.id, { kind: 'cli' })
}

/** The domains service, imported when a domain command runs (it brings the DNS and DKIM code). */
const domains = () => import('../../src/modules/domains/service')

/** The domain header and its records as a table (the DKIM value is long: publish it whole). */
function render(d: DomainOut): string {
  const head = [
    `domain     ${d.domain}`,
    `id         ${d.id}`,
    `verified   ${d.verified ? 'yes' : 'no (publish the DKIM record, then run `mailctl domain verify`)'}`,
    `checked    ${d.lastCheckedAt ? d.lastCheckedAt.toISOString() : 'never'}`,
    '',
  ]
  const rows = d.records.map((r) => ({
    purpose: r.purpose + (r.required ? '' : ' (recommended)'),
    type: r.type,
    name: r.name,
    value: r.type === 'MX' ? `${r.priority} ${r.value}` : r.value,
    status: r.status,
    reason: r.reason ?? '',
  }))
  return head.join('\n') + table(rows, ['purpose', 'type', 'name', 'status', 'reason', 'value'])
}

/** `mailctl domain add|verify|list PROJECT ...` (README.md, The CLI). PROJECT is a project id or name. */
export function register(program: Command): void {
  const domain = program.command('domain').description('sending domains: DKIM keys and the DNS records to publish')
  domain.command('add')
    .description('register a sending domain and create its DKIM key; prints the DNS records to publish')
    .argument('[project]', 'project id or name')
    .argument('[domain]', 'domain name, such as example.com')
    .action(async (projectArg: string | undefined, domainArg: string | undefined, _opts: unknown, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const name = await need(domainArg, { flag: 'DOMAIN', message: 'Domain name' })
      const out = await withDeps(cmd, async (deps) => {
        const { createDomain } = await domains()
        const ctx = await cliCtx(deps, ref)
        const created = await createDomain(ctx, { projectId: ctx.projectId, domain: name })
        const host = deps.config.hostname
        if (!isFullyQualified(host)) {
          warnLine(`MAILCTL_HOSTNAME is "${host}", not a fully qualified name: the return-path MX and SPF records below point at it and would be wrong. Set MAILCTL_HOSTNAME to this server's public name (such as mail.example.com); \`mailctl domain verify\` then prints the corrected records`)
        }
        return created
      })
      emit(cmd, out, () => render(out))
    })
  domain.command('verify')
    .description('check the DNS records of DOMAIN now; prints each record\'s status')
    .argument('[project]', 'project id or name')
    .argument('[domain]', 'domain name or id')
    .action(async (projectArg: string | undefined, domainArg: string | undefined, _opts: unknown, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const name = await need(domainArg, { flag: 'DOMAIN', message: 'Domain name' })
      const out = await withDeps(cmd, async (deps) => {
        const { findDomainByName, getDomain, verifyDomain } = await domains()
        const ctx = await cliCtx(deps, ref)
        // DOMAIN is a name, or the domain's id
        const found = await findDomainByName(ctx, name).catch(() => getDomain(ctx, name))
        return verifyDomain(ctx, found.id)
      })
      emit(cmd, out, () => render(out))
    })
  domain.command('list')
    .description('list the domains of PROJECT')
    .argument('[project]', 'project id or name')
    .action(async (projectArg: string | undefined, _opts: unknown, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const rows = await withDeps(cmd, async (deps) => {
        const { listDomains } = await domains()
        const ctx = await cliCtx(deps, ref)
        return listDomains(ctx, ctx.projectId)
      })
      emit(cmd, rows, () => table(rows.map((d) => ({
        id: d.id,
        domain: d.domain,
        verified: d.verified ? 'yes' : 'no',
        records: d.records.map((r) => `${r.purpose}:${r.status}`).join(' '),
        lastCheckedAt: d.lastCheckedAt ?? 'never',
      })), ['id', 'domain', 'verified', 'records', 'lastCheckedAt']))
    })
}
