import type { Command } from 'commander'
import { emit, need, withDeps } from '../shared'

/** `mailctl user create --email E --password P [--name N]`: a verified dashboard account. */
export function register(program: Command): void {
  const user = program.command('user').description('dashboard users')
  user.command('create')
    .description('create a dashboard user (verified: the operator vouches for the address); prompts for the password on a terminal')
    .option('--email <email>', 'login address')
    .option('--password <password>', 'password, 8 to 256 characters (prompted for on a terminal when absent)')
    .option('--name <name>', 'display name')
    .action(async (opts: { email?: string; password?: string; name?: string }, cmd: Command) => {
      const email = await need(opts.email, { flag: '--email', message: 'Email address' })
      const password = await need(opts.password, { flag: '--password', message: 'Password', secret: true })
      const { createUser, toUserOut } = await import('../../src/modules/users/service')
      const out = await withDeps(cmd, async (deps) => toUserOut(await createUser(deps, { email, password, name: opts.name }, { verified: true })))
      emit(cmd, out, () => `created user ${out.email} (${out.id})`)
    })
}
