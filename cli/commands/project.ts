import type { Command } from 'commander'
import { notFound } from '../../src/errors'
import { emit, need, table, withDeps } from '../shared'

/** `mailctl project create --name N [--owner EMAIL]`, `mailctl project enable ID` and `mailctl project list`. */
export function register(program: Command): void {
  const project = program.command('project').description('projects (tenants with their own keys and data)')
  project.command('create')
    .description('create a project; prints {id, name, publicKey, secretKey}')
    .option('--name <name>', 'project name')
    .option('--owner <email>', 'make this existing user the OWNER (see `mailctl user create`)')
    .action(async (opts: { name?: string; owner?: string }, cmd: Command) => {
      const name = await need(opts.name, { flag: '--name', message: 'Project name' })
      const { createProject } = await import('../../src/modules/projects/service')
      const out = await withDeps(cmd, async (deps) => {
        let ownerUserId: string | null = null
        if (opts.owner) {
          const { findUserByEmail } = await import('../../src/modules/users/service')
          const owner = await findUserByEmail(deps, opts.owner)
          if (!owner) throw notFound(`user ${opts.owner}`)
          ownerUserId = owner.id
        }
        return createProject(deps.store, { name, ownerUserId })
      })
      emit(cmd, out, () => `id         ${out.id}\nname       ${out.name}\npublicKey  ${out.publicKey}\nsecretKey  ${out.secretKey}\n(the secret key is shown only now)`)
    })
  project.command('enable')
    .description('lift a suspension (bounce or complaint rates): the project may send again')
    .argument('<id>', 'project id')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { enableProject } = await import('../../src/modules/security/service')
      const out = await withDeps(cmd, (deps) => enableProject(deps, id, 'cli'))
      emit(cmd, out, () => (out.enabled ? `project ${id} enabled` : `project ${id} was not disabled`))
    })
  project.command('list')
    .description('list projects')
    .action(async (_opts: unknown, cmd: Command) => {
      const { listProjects } = await import('../../src/modules/projects/service')
      const rows = await withDeps(cmd, (deps) => listProjects(deps.store))
      emit(cmd, rows, () => table(rows, ['id', 'name', 'publicKey', 'disabled', 'createdAt']))
    })
}
