#!/usr/bin/env bun
/**
 * The mailctl command line (README.md, The CLI). One file per area under cli/commands/, each exporting
 * `register(program)`; add a new area with one import and one line in AREAS below.
 */
import { Command } from 'commander'
import pkg from '../package.json'
import { runCli } from './shared'
import { register as serve } from './commands/serve'
import { register as migrate } from './commands/migrate'
import { register as user } from './commands/user'
import { register as project } from './commands/project'
import { register as keys } from './commands/keys'
import { register as domain } from './commands/domain'
import { register as doctor } from './commands/doctor'
import { register as contacts } from './commands/contacts'
import { register as suppression } from './commands/suppression'
import { register as queue } from './commands/queue'
import { register as campaign } from './commands/campaign'
import { register as webhook } from './commands/webhook'
import { register as workflow } from './commands/workflow'
import { register as backup } from './commands/backup'
import { register as mcp } from './commands/mcp'

const AREAS: Array<(program: Command) => void> = [
  serve,
  migrate,
  user,
  project,
  keys,
  domain,
  doctor,
  contacts,
  suppression,
  queue,
  campaign,
  webhook,
  workflow,
  backup,
  mcp,
]

export function buildProgram(): Command {
  const program = new Command('mailctl')
    .description('Self-hosted email platform: API, workers, SMTP and this admin CLI in one executable')
    .option('--config <file>', 'read settings from a JSON or TOML file (environment variables win)')
    .option('--json', 'print one JSON document on stdout')
    .version(pkg.version, '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .exitOverride()
  for (const register of AREAS) register(program)
  return program
}

if (import.meta.main) await runCli(buildProgram(), process.argv)
