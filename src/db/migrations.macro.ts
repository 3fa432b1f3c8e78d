import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface Migration { name: string; sql: string }

/**
 * Runs at bundle time (imported `with { type: 'macro' }`): the SQL files of migrations/<dialect> are
 * inlined into the program, so the compiled binary needs nothing beside it.
 */
export function embeddedMigrations(dialect: string): Migration[] {
  const dir = join(import.meta.dir, '..', '..', 'migrations', dialect)
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => ({ name: f.replace(/\.sql$/, ''), sql: readFileSync(join(dir, f), 'utf8') }))
}
