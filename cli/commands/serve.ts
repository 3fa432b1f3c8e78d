import type { Command } from 'commander'
import pkg from '../../package.json'
import type { Role, Running } from '../../src/main'
import { settings, UsageError } from '../shared'

const ROLES: Role[] = ['api', 'worker', 'smtp']

function collectRole(value: string, previous: Role[]): Role[] {
  for (const part of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!ROLES.includes(part as Role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}, got "${part}"`)
    if (!previous.includes(part as Role)) previous = [...previous, part as Role]
  }
  return previous
}

/** `mailctl serve [--role api|worker|smtp]...`: migrations, then the asked parts, until SIGINT/SIGTERM. */
export function register(program: Command): void {
  program.command('serve')
    .description('run the server: migrations first, then HTTP, workers and SMTP (or only the --role parts)')
    .option('--role <role>', 'api, worker or smtp; repeatable (default: all)', collectRole, [] as Role[])
    .action(async (opts: { role: Role[] }, cmd: Command) => {
      const roles = opts.role.length ? opts.role : ROLES
      const config = settings(cmd)
      const { serve, startLine } = await import('../../src/main')
      // Signals are handled from the start: HTTP answers before serve() resolves (the workers and SMTP
      // start after it listens), so a SIGTERM may come meanwhile; it stops everything once started.
      let running: Running | null = null
      let signalled: string | null = null
      let finish = () => {}
      const finished = new Promise<void>((resolve) => { finish = resolve })
      const stop = (r: Running, signal: string) => {
        r.deps.log.info('shutting down', { signal })
        r.stop().then(finish, (err) => {
          process.stderr.write(`error: shutdown failed: ${err instanceof Error ? err.message : String(err)}\n`)
          process.exit(1)
        })
      }
      const shutdown = (signal: string) => {
        if (signalled) {
          // Without waiting: leases still held are released by the other nodes once this node's
          // heartbeat is stale, as after a crash.
          if (running) running.deps.log.warn('second signal: exiting now', { signal })
          process.exit(1)
        }
        signalled = signal
        if (running) stop(running, signal)
      }
      // `on`, not `once`: a second signal must reach the handler above, not the default one that kills.
      process.on('SIGINT', () => shutdown('SIGINT'))
      process.on('SIGTERM', () => shutdown('SIGTERM'))
      running = await serve(config, roles)
      // One human line beside the JSON logs (which go to stdout): on stderr, so stdout stays JSON.
      process.stderr.write(`${startLine(config, running, pkg.version)}\n`)
      if (signalled) stop(running, signalled)
      await finished
      process.exit(0)
    })
}
