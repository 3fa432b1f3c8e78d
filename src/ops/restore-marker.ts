import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, type Config } from '../config'

/**
 * A SQLite restore writes this file into the data dir before it touches anything there and deletes it
 * last, so a restore killed midway leaves a data dir that every command refuses (src/main.ts) until a
 * restore into it finishes.
 */
export const RESTORE_MARKER = 'restore.incomplete'

export function restoreMarker(config: Config): string {
  return join(config.dataDir, RESTORE_MARKER)
}

/** Throws (ConfigError) when a restore into this data dir did not finish. */
export function refuseUnfinishedRestore(config: Config): void {
  if (!config.databaseUrl.startsWith('sqlite:')) return
  if (existsSync(restoreMarker(config))) {
    throw new ConfigError(`a restore into ${config.dataDir} did not finish (${RESTORE_MARKER} is there): run \`mailctl restore FILE --force\` again`)
  }
}
