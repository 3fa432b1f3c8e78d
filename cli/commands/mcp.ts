import type { Command } from 'commander'
import { UsageError, withDeps } from '../shared'

/** `mailctl mcp`: an MCP server on stdio for the project whose secret key is in MAILCTL_MCP_KEY (src/mcp/server.ts). */
export function register(program: Command): void {
  program.command('mcp')
    .description('serve the project API as MCP tools on stdio, for the project whose secret key is in MAILCTL_MCP_KEY')
    .action(async (_opts: unknown, cmd: Command) => {
      const key = process.env.MAILCTL_MCP_KEY
      if (!key) throw new UsageError('MAILCTL_MCP_KEY must hold a project\'s secret key (sk_...)')
      const { authorize, serveMcp } = await import('../../src/mcp/server')
      await withDeps(cmd, async (deps) => {
        // A wrong key stops the server at once, with the refusal a call would get.
        await authorize(deps, key)
        await serveMcp(deps, key, Bun.stdin.stream(), (line) => process.stdout.write(line))
      })
    })
}
