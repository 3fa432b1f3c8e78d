import { setPriority } from 'node:os'
import type { Command } from 'commander'
import { emit, settings, UsageError, withDeps } from '../shared'

/** Progress lines on stderr when it is a terminal (stdout carries only the result). */
function progressLine(): ((m: string) => void) | undefined {
  if (!process.stderr.isTTY) return undefined
  return (m) => process.stderr.write(`${m}\n`)
}

/** A backup taken while the server runs yields the CPU to it (nice 19; its threads inherit it). */
function lowerPriority(): void {
  try { setPriority(19) } catch { /* not allowed here: the normal priority */ }
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`

/**
 * `mailctl backup FILE`: a consistent snapshot of the install (src/ops/backup.ts), taken while it serves.
 * `mailctl restore FILE [--force]`: restores one into an empty data dir or database (src/ops/restore.ts).
 */
export function register(program: Command): void {
  registerBackup(program)
  registerRestore(program)
  registerStore(program)
}

function registerBackup(program: Command): void {
  program.command('backup')
    .description('write a consistent snapshot of the running install (database, keys, uploads) to FILE')
    .argument('<file>', 'the archive to write (a tar file; never overwritten)')
    .option('--include-keys', 'PostgreSQL: put the JWT secret and DKIM master key in the archive (they come from the settings otherwise)')
    .action(async (file: string, opts: { includeKeys?: boolean }, cmd: Command) => {
      if (!file) throw new UsageError('FILE is required')
      lowerPriority()
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

/**
 * `mailctl store copy --to postgres://...`: a SQLite install's data into an empty PostgreSQL database
 * (src/ops/copy.ts); prints the settings the new nodes need. Exit 1 when a value cannot be stored or a
 * table does not verify (nothing is then left in the target).
 */
function registerStore(program: Command): void {
  program.command('store')
    .description('operations on the whole store')
    .command('copy')
    .description('copy this SQLite install\'s data into an empty PostgreSQL database, verify it, and print the settings the new nodes need')
    .requiredOption('--to <url>', 'the PostgreSQL database (postgres://user:password@host:5432/database)')
    .option('--force', 'replace the tables of a non-empty target (the final pass of a switch, after a first pass)')
    .action(async (opts: { to: string; force?: boolean }, cmd: Command) => {
      const { copyStore } = await import('../../src/ops/copy')
      const result = await withDeps(cmd, (deps) => copyStore(deps, opts.to, { force: opts.force, onProgress: progressLine() }), { migrate: false })
      emit(cmd, result, () => {
        const lines = [
          result.ok ? `copied to ${result.target} in ${(result.durationMs / 1000).toFixed(1)} s; every table verified (row counts and checksums):` : `copy to ${result.target} refused; the target was left as it was:`,
          ...result.tables.map((t) => `  ${t.ok ? 'ok  ' : 'FAIL'}  ${t.name.padEnd(26)} ${String(t.rows).padStart(10)} rows${t.ok ? '' : ` (target ${t.targetRows}, checksum ${t.targetChecksum} != ${t.checksum})`}`),
        ]
        if (result.unstorable.length) {
          lines.push(`${result.unstorable.length} value(s) PostgreSQL cannot store (fix them in the SQLite install, then copy again):`)
          for (const u of result.unstorable) lines.push(`  ${u.table} ${JSON.stringify(u.key)} ${u.column}: ${u.problem}`)
        }
        if (result.ok) {
          lines.push('settings for every node on the new database (with DATABASE_URL set to it):')
          for (const [k, v] of Object.entries(result.settings)) lines.push(`  ${k}=${v}`)
        }
        return lines.join('\n')
      })
      if (!result.ok) process.exitCode = 1
    })
}
