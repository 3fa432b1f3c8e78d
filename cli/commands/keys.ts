import type { Command } from 'commander'
import { emit, need, withDeps } from '../shared'

/** `mailctl keys rotate PROJECT`: both keys at once; the old ones stop working immediately. */
export function register(program: Command): void {
  const keys = program.command('keys').description('API keys of a project')
  keys.command('rotate')
    .description('regenerate both API keys of PROJECT (id or name); prints {id, publicKey, secretKey}')
    .argument('[project]', 'project id or name')
    .action(async (projectArg: string | undefined, _opts: unknown, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const { findProject, rotateKeys } = await import('../../src/modules/projects/service')
      const out = await withDeps(cmd, async (deps) => rotateKeys(deps.store, (await findProject(deps.store, ref)).id))
      emit(cmd, out, () => `project    ${out.id}\npublicKey  ${out.publicKey}\nsecretKey  ${out.secretKey}\n(the secret key is shown only now; the old keys no longer work)`)
    })
}
