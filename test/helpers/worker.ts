import { join } from 'node:path'
import type { TestEnv } from './env'
import { must } from './must'
import { dkimKey } from '../../src/secrets'

const CLI = join(import.meta.dir, '../../cli/mailctl.ts')

/**
 * A real `mailctl serve --role worker` process on the test environment's store, delivering directly to
 * `mxPort` with MX look-ups on the test DNS server: what crash tests kill with SIGKILL and start again.
 * `opts.role` serves another role (`api`: on `opts.httpPort` of 127.0.0.1); `opts.env` adds settings, `opts.stdout` keeps its output.
 */
export function startWorkerProcess(env: TestEnv, delivery: { mxPort: number; dnsServer: string }, opts: { role?: string; httpPort?: number; env?: Record<string, string>; stdout?: 'pipe' | 'ignore' } = {}) {
  return Bun.spawn([process.execPath, CLI, 'serve', '--role', opts.role ?? 'worker'], {
    env: {
      ...(opts.httpPort ? { MAILCTL_HTTP_PORT: String(opts.httpPort), MAILCTL_HTTP_HOST: '127.0.0.1' } : {}),
      PATH: process.env.PATH ?? '',
      DATABASE_URL: env.config.databaseUrl,
      MAILCTL_DATA_DIR: env.config.dataDir,
      MAILCTL_JWT_SECRET: must(env.config.jwtSecret, 'config.jwtSecret'),
      // On PostgreSQL a node takes its keys from the settings only: the test environment's DKIM key.
      MAILCTL_DKIM_KEY: dkimKey(env.config).toString('base64'),
      MAILCTL_HOSTNAME: env.config.hostname,
      MAILCTL_OUTBOUND: 'direct',
      MAILCTL_MX_PORT: String(delivery.mxPort),
      MAILCTL_DELIVERY_ALLOW_HOSTS: '127.0.0.0/8',
      MAILCTL_DNS_SERVERS: delivery.dnsServer,
      MAILCTL_LOG_LEVEL: 'warn',
      ...opts.env,
    },
    stdin: 'ignore', stdout: opts.stdout ?? 'ignore', stderr: 'inherit',
  })
}

/** Waits until `cond` holds, polling every `pollMs`; throws naming `what` after `timeoutMs`. */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string, pollMs = 5) {
  const end = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(pollMs)
  }
}
