import type { Command } from 'commander'
import { emit, withDeps } from '../shared'

/** `mailctl migrate`: applies pending migrations and exits. */
export function register(program: Command): void {
  program.command('migrate')
    .description('apply pending database migrations and exit')
    .action(async (_opts: unknown, cmd: Command) => {
      const { migrate } = await import('../../src/db/migrate')
      const applied = await withDeps(cmd, (deps) => migrate(deps.store), { migrate: false, create: true })
      emit(cmd, { applied }, () => (applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date'))
    })
}
