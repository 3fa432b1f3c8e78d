/**
 * The import rules of the house (docs/architecture.md, Layers), checked on every import of src/ and web/.
 * `.ci/run` runs it (`npm run boundaries`); it exits 1 and names each import that breaks a rule.
 *
 * - `drizzle`: only repos (a `repo.ts` or `<name>-repo.ts`, or a file under a `repo/` folder), `src/db/` and `src/jobs/` import
 *   drizzle-orm: SQL lives in repos, services call them.
 * - `modules`: a module imports another module only through its `service.ts` (or an `index.ts` it exports),
 *   so what a module offers is one file to read.
 * - `mail`: `src/mail/` (the delivery pipeline, below the modules) imports nothing from `src/modules/`.
 * - `web`: `web/` (the dashboard) imports nothing from `src/`: it knows the server through the HTTP API only.
 *
 * Imports that break a rule today and are allowed for now are listed, each with its reason, in
 * `scripts/boundaries-baseline.txt`. That list may only shrink: an import not in it fails, and an entry
 * that no longer matches an import is reported so that it can be deleted. Type-only imports count too:
 * a type is part of what a module shows the others.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const BASELINE = join(ROOT, 'scripts/boundaries-baseline.txt')

export type Rule = 'drizzle' | 'modules' | 'mail' | 'web'
export interface Violation { rule: Rule; file: string; target: string }

/** Every module specifier a file imports or re-exports: static, type-only, side-effect and dynamic. */
export function specifiers(text: string): string[] {
  const out: string[] = []
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')
  for (const re of [/\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g]) {
    for (const m of code.matchAll(re)) out.push(m[1] as string)
  }
  return out
}

/** The repository-relative file a relative specifier points at (`.ts`, `.tsx` or a folder's index), else the specifier. */
function resolve(from: string, spec: string): string {
  if (!spec.startsWith('.')) return spec
  const base = join(dirname(join(ROOT, from)), spec)
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]) {
    if (existsSync(candidate) && !candidate.endsWith('/') && readdirSafe(candidate) === null) return relative(ROOT, candidate)
  }
  return relative(ROOT, base)
}

function readdirSafe(path: string): string[] | null {
  try {
    return readdirSync(path)
  } catch {
    return null
  }
}

/** The module a repository-relative path belongs to (`src/modules/<name>/...`), or null. */
function moduleOf(path: string): string | null {
  const m = /^src\/modules\/([^/]+)\//.exec(path)
  return m ? (m[1] as string) : null
}

function isRepo(path: string): boolean {
  return /(^|\/|-)repo\.ts$/.test(path) || /\/repo\//.test(path)
}

/** The rules one import breaks. `file` and `target` are repository-relative (`target` may be a package name). */
export function check(file: string, target: string): Rule[] {
  const broken: Rule[] = []
  if (file.startsWith('src/')) {
    if ((target === 'drizzle-orm' || target.startsWith('drizzle-orm/')) && !isRepo(file) && !file.startsWith('src/db/') && !file.startsWith('src/jobs/')) broken.push('drizzle')
    const from = moduleOf(file)
    const to = moduleOf(target)
    if (from && to && from !== to && !new RegExp(`^src/modules/${to}/(service|index)\\.ts$`).test(target)) broken.push('modules')
    if (file.startsWith('src/mail/') && target.startsWith('src/modules/')) broken.push('mail')
  }
  if (file.startsWith('web/') && (target.startsWith('src/') || target === 'src')) broken.push('web')
  return broken
}

function sources(dir: string): string[] {
  const abs = join(ROOT, dir)
  if (!existsSync(abs)) return []
  return readdirSync(abs, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => join(dir, f))
}

/** Every import of src/ and web/ that breaks a rule. */
export function violations(): Violation[] {
  const out: Violation[] = []
  for (const file of [...sources('src'), ...sources('web')]) {
    for (const spec of specifiers(readFileSync(join(ROOT, file), 'utf8'))) {
      const target = resolve(file, spec)
      for (const rule of check(file, target)) out.push({ rule, file, target })
    }
  }
  return out
}

const key = (v: Violation) => `${v.rule} ${v.file} ${v.target}`

/** The baseline's entries: `rule file target  # reason`, one a line; blank lines and `#` lines are comments. */
export function baseline(text: string): Map<string, string> {
  const entries = new Map<string, string>()
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const [entry = '', ...reason] = line.split('#')
    const parts = entry.trim().split(/\s+/)
    if (parts.length !== 3 || !['drizzle', 'modules', 'mail', 'web'].includes(parts[0] as string)) throw new Error(`boundaries baseline: cannot read "${line}" (expected: rule file target  # reason)`)
    if (!reason.join('#').trim()) throw new Error(`boundaries baseline: "${entry.trim()}" gives no reason`)
    entries.set(parts.join(' '), reason.join('#').trim())
  }
  return entries
}

if (import.meta.main) {
  const allowed = baseline(existsSync(BASELINE) ? readFileSync(BASELINE, 'utf8') : '')
  const found = violations()
  const seen = new Set(found.map(key))
  const fresh = found.filter((v) => !allowed.has(key(v)))
  const stale = [...allowed.keys()].filter((k) => !seen.has(k))
  const rules: Record<Rule, string> = {
    drizzle: 'only repos, src/db and src/jobs import drizzle-orm',
    modules: "a module imports another only through its service.ts or index.ts",
    mail: 'src/mail imports nothing from src/modules',
    web: 'web/ imports nothing from src/',
  }
  for (const v of fresh) console.log(`${v.file}: imports ${v.target}: ${rules[v.rule]}`)
  for (const k of stale) console.log(`scripts/boundaries-baseline.txt: "${k}" no longer happens: delete the line`)
  console.log(`boundaries: ${fresh.length} new violation(s), ${found.length - fresh.length} in the baseline, ${stale.length} baseline line(s) to delete`)
  if (fresh.length > 0) process.exit(1)
}
