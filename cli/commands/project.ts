import type { Command } from 'commander'
import { createProject, listProjects } from '../../src/modules/projects/service'
import { emit, need, table, withDeps } from '../shared'

/** `mailctl project create --name N [--owner EMAIL]` and `mailctl project list`. */
export function register(program: Command): void {
  const project = program.command('project').description('projects (tenants with their own keys and data)')
  project.command('create')
    .description('create a project; prints {id, name, publicKey, secretKey}')
    .option('--name <name>', 'project name')
    .action(async (opts: { name?: string }, cmd: Command) => {
      const name = await need(opts.name, { flag: '--name', message: 'Project name' })
      const out = await withDeps(cmd, (deps) => createProject(deps.store, { name }))
      emit(cmd, out, () => `id         ${out.id}\nname       ${out.name}\npublicKey  ${out.publicKey}\nsecretKey  ${out.secretKey}\n(the secret key is shown only now)`)
    })
  project.command('list')
    .description('list projects')
    .action(async (_opts: unknown, cmd: Command) => {
      const rows = await withDeps(cmd, (deps) => listProjects(deps.store))
      emit(cmd, rows, () => table(rows, ['id', 'name', 'publicKey', 'disabled', 'createdAt']))
    })
}
