/**
 * The README's settings table (Configuration) lists every setting the code reads, and nothing else: the
 * names `src/config.ts` reads from the environment or the config file (its KEYS table, `raw.X`, `env.X`)
 * and the few read straight from `process.env` elsewhere in src/ and cli/.
 */
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const NAME = "(?:MAILCTL_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL|REDIS_URL)"

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(ROOT, dir, f))
}

/** The settings the code reads. */
function readByCode(): Set<string> {
  const names = new Set<string>()
  const config = readFileSync(join(ROOT, 'src/config.ts'), 'utf8')
  for (const re of [new RegExp(String.raw`\b(?:raw|env)\.(${NAME})\b`, 'g'), new RegExp(String.raw`^\s+(${NAME}): '`, 'gm')]) {
    for (const m of config.matchAll(re)) names.add(m[1] as string)
  }
  for (const file of [...sources('src'), ...sources('cli')]) {
    for (const m of readFileSync(file, 'utf8').matchAll(new RegExp(String.raw`process\.env\.(${NAME})\b`, 'g'))) names.add(m[1] as string)
  }
  return names
}

/** The settings the README's Configuration table names (a row may name several, comma-separated). */
function documented(): Set<string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const start = readme.indexOf('## Configuration')
  const end = readme.indexOf('\n## ', start + 1)
  const names = new Set<string>()
  for (const line of readme.slice(start, end).split('\n')) {
    const first = line.startsWith('| `') ? line.split('|')[1] ?? '' : ''
    for (const m of first.matchAll(new RegExp(`\`(${NAME})\``, 'g'))) names.add(m[1] as string)
  }
  return names
}

test('every setting src/config.ts reads is in the README table, and the table names no setting the code does not read', () => {
  const code = readByCode()
  const readme = documented()
  expect(code.size).toBeGreaterThan(50)
  expect([...code].filter((n) => !readme.has(n)).sort()).toEqual([])
  expect([...readme].filter((n) => !code.has(n)).sort()).toEqual([])
})
