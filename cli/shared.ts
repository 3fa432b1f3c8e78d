/**
 * What every command shares: settings from `--config` and the environment, the composition root, output
 * (`--json` -> one JSON document on stdout), prompts only on a terminal, and AppError -> one stderr line.
 *
 * Start-up time: this module and the commands' `register` functions import only light modules (commander,
 * config, errors). What a command runs (the store, the services and their libraries) is imported inside
 * its action, so `--help`, `--version` and a small command load no more than they use.
 */
import { type Command, CommanderError } from 'commander'
import { loadConfig, ConfigError, type Config } from '../src/config'
import type { Deps } from '../src/deps'
import { AppError } from '../src/errors'
import type { Level, Logger } from '../src/log'

/** A usage problem (missing argument without a terminal, bad option value): exit code 2. */
export class UsageError extends Error {}

export interface GlobalOpts { config?: string; json?: boolean }

export function globals(cmd: Command): GlobalOpts {
  return cmd.optsWithGlobals<GlobalOpts>()
}

export function settings(cmd: Command, overrides: Partial<Config> = {}): Config {
  return loadConfig({ file: globals(cmd).config, overrides })
}

/** Log lines of CLI commands go to stderr so stdout carries only the command's output. */
export function stderrLogger(level: Level | 'silent' = 'info', base: Record<string, unknown> = {}): Logger {
  const order = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }
  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < order[level]) return
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields })}\n`)
  }
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (f) => stderrLogger(level, { ...base, ...f }),
  }
}

/**
 * Runs `fn` with a migrated store and the services, then closes everything. Only `create: true` (serve,
 * migrate) may create a store: other commands stop when it does not exist yet, naming the store they
 * looked for and the settings that point at another one (a typo in MAILCTL_DATA_DIR must not silently
 * start an empty database).
 */
export async function withDeps<T>(cmd: Command, fn: (deps: Deps) => Promise<T>, opts: { migrate?: boolean; create?: boolean } = {}): Promise<T> {
  const config = settings(cmd)
  // The string formats (email, uuid) the HTTP API validates with, so that the services' checks of CLI
  // input accept exactly what the API accepts.
  const [{ closeDeps, createDeps }] = await Promise.all([import('../src/main'), import('../src/http/formats')])
  // Quiet by default: a one-shot command reports failures itself; `MAILCTL_LOG_LEVEL=debug` shows more.
  const level = config.logLevel === 'debug' ? 'debug' : 'warn'
  const deps = await createDeps(config, { log: stderrLogger(level), migrate: opts.migrate, create: opts.create ?? false })
  try {
    return await fn(deps)
  } finally {
    await closeDeps(deps)
  }
}

/** Prints `data` as JSON with `--json`, else the human rendering. */
export function emit(cmd: Command, data: unknown, human: () => string): void {
  if (globals(cmd).json) process.stdout.write(`${JSON.stringify(data, null, 2)}\n`)
  else process.stdout.write(human().replace(/\n?$/, '\n'))
}

/** Human rendering of rows as aligned columns. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (!rows.length) return '(none)'
  const cell = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? '' : String(v))
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd()
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')
}

export function isInteractive(): boolean {
  return Boolean(process.stdin.isTTY && process.stdout.isTTY)
}

/**
 * The value given on the command line, else a prompt on a terminal, else a UsageError (exit 2) naming
 * the flag to pass.
 */
export async function need(value: string | undefined, what: { flag: string; message: string; secret?: boolean }): Promise<string> {
  if (value !== undefined && value !== '') return value
  if (!isInteractive()) throw new UsageError(`${what.flag} is required (no terminal to prompt on)`)
  const { input, password } = await import('@inquirer/prompts')
  // Prompts draw on stderr: stdout carries only the command's output (one JSON document with --json).
  const context = { output: process.stderr }
  const answer = what.secret
    ? await password({ message: what.message, mask: '*' }, context)
    : await input({ message: what.message, required: true }, context)
  if (!answer) throw new UsageError(`${what.flag} is required`)
  return answer
}

/** A warning for the operator: one line on stderr (stdout stays the command's output). */
export function warnLine(message: string): void {
  process.stderr.write(`warning: ${message}\n`)
}

/** Exit codes: 0 ok, 1 an operation failed (AppError, runtime), 2 usage or configuration problem. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError || err instanceof ConfigError) return 2
  return 1
}

export function errorLine(err: unknown): string {
  if (err instanceof AppError) {
    const fields = err.opts.errors?.map((e) => e.message).join('; ')
    return `error: ${err.code}: ${err.message}${fields && fields !== err.message ? ` (${fields})` : ''}`
  }
  if (err instanceof Error && err.name === 'ExitPromptError') return 'error: cancelled'
  return `error: ${err instanceof Error ? err.message : String(err)}`
}

/** Parses argv and runs the command; failures become one line on stderr and a non-zero exit. */
export async function runCli(program: Command, argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv)
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has already printed its message (or the help/version text).
      process.exit(err.exitCode === 0 ? 0 : 2)
    }
    process.stderr.write(`${errorLine(err)}\n`)
    process.exit(exitCodeFor(err))
  }
}
