import type { Command } from 'commander'
import { emit, settings, UsageError, withDeps } from '../shared'

/** Progress lines on stderr when it is a terminal (stdout carries only the result). */
function progressLine(): ((m: string) => void) | undefined {
  if (!process.stderr.isTTY) return undefined
  return (m) => process.stderr.write(`${m}\n`)
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`

/**
 * `mailctl backup FILE`: a consistent snapshot of the install (src/ops/backup.ts), taken while it serves.
 * `mailctl restore FILE [--force]`: restores one into an empty data dir or database (src/ops/restore.ts).
 */
export function register(program: Command): void {
  registerBackup(program)
  registerRestore(program)
}

function registerBackup(program: Command): void {
  program.command('backup')
    .description('write a consistent snapshot of the running install (database, keys, uploads) to FILE')
    .argument('<file>', 'the archive to write (a tar file; never overwritten)')
    .option('--include-keys', 'PostgreSQL: put the JWT secret and DKIM master key in the archive (they come from the settings otherwise)')
    .action(async (file: string, opts: { includeKeys?: boolean }, cmd: Command) => {
      if (!file) throw new UsageError('FILE is required')
      const { createBackup } = await import('../../src/ops/backup')
      const result = await withDeps(cmd, (deps) => createBackup(deps, file, { includeKeys: opts.includeKeys, onProgress: progressLine() }), { migrate: false })
      emit(cmd, result, () => [
        `backup written: ${result.file} (${mb(result.bytes)}, ${(result.durationMs / 1000).toFixed(1)} s)`,
        `store ${result.dialect}, migration level ${result.migrationLevel ?? '(none)'}, ${result.tables.reduce((n, t) => n + t.rows, 0)} rows in ${result.tables.length} tables, ${result.uploads} uploads`,
        result.keys === 'settings'
          ? 'keys: not in the archive; a restored install needs the same MAILCTL_SECRET (or MAILCTL_JWT_SECRET and MAILCTL_DKIM_KEY)'
          : `keys: in the archive (${result.keys === 'files' ? 'the data dir\'s key files' : '--include-keys'}); keep the archive as secret as the keys`,
      ].join('\n'))
    })
}

function registerRestore(program: Command): void {
  program.command('restore')
    .description('restore an archive of `mailctl backup` into an empty data dir or database, then apply newer migrations')
    .argument('<file>', 'the archive to restore')
    .option('--force', 'replace a target that is not empty (the server must be stopped)')
    .action(async (file: string, opts: { force?: boolean }, cmd: Command) => {
      const { restoreBackup } = await import('../../src/ops/restore')
      const result = await restoreBackup(settings(cmd), file, { force: opts.force, onProgress: progressLine() })
      emit(cmd, result, () => [
        `restored ${result.dialect} backup of ${result.backupCreatedAt} (mailctl ${result.backupVersion}, migration level ${result.migrationLevel ?? '(none)'}) in ${(result.durationMs / 1000).toFixed(1)} s`,
        `${result.tables.reduce((n, t) => n + t.rows, 0)} rows in ${result.tables.length} tables, ${result.uploads} uploads`,
        result.applied.length ? `newer migrations applied: ${result.applied.join(', ')}` : 'no newer migrations to apply',
        ...Object.entries(result.settings).map(([k, v]) => `set on every node: ${k}=${v}`),
        result.keysMatch === false ? 'warning: the keys of these settings are not those the restored database was served with; set the keys of the backed-up install (MAILCTL_SECRET, or MAILCTL_JWT_SECRET and MAILCTL_DKIM_KEY) or `mailctl serve` will refuse to start' : '',
      ].filter(Boolean).join('\n'))
    })
}
