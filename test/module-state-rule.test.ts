/**
 * What the process runs on its store (the node registry, the group committer, the track writer, the
 * outbox's recent events) is built by the composition root, `storeRuntime` in src/main.ts, and reached
 * through `deps.runtime` (src/deps.ts, StoreRuntime): a reader of main.ts sees all of it. A module does not
 * make such a thing on first use and remember it in a module-level WeakMap (or WeakSet, or a Map keyed by
 * the store, the deps or the settings). The ones left are caches and marks, listed below with how many
 * each file has and why it is not state: each runs nothing, and dropping it changes no behaviour, only
 * the cost of the next call. A new one elsewhere, or one more in a listed file, fails here: put what runs
 * in StoreRuntime, or add the file with its reason (docs/architecture.md, "What a process runs").
 */
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

const ALLOWED: Record<string, [count: number, why: string]> = {
  'src/db/sqlite-statements.ts': [1, "cache: a table's column mapping, computed from its definition"],
  'src/db/insert-all.ts': [1, "cache: a table's PostgreSQL insert statement, computed from its definition"],
  'src/secrets.ts': [1, 'cache: the DKIM master key read or derived from the settings'],
  'src/modules/hooks/signing.ts': [1, 'cache: the webhook secrets key, derived from the settings'],
  'src/modules/billing/payments.ts': [1, "cache: the payment provider's stateless HTTP client"],
  'src/modules/uploads/storage.ts': [1, "cache: the uploads' stateless storage client (a directory or S3)"],
  'src/modules/domains/repo.ts': [2, 'cache: a compiled statement per SQLite store; the PostgreSQL gate look-ups of one turn, empty between turns'],
  'src/modules/contacts/repo/list.ts': [1, 'cache: compiled reads per store, by SQL text'],
  'src/modules/contacts/search/index.ts': [1, 'cache: the exact in-memory copy of the searchable columns, rebuilt from the database when dropped'],
  'src/modules/projects/repo.ts': [2, "cache: API keys (SQLite's exact; on PostgreSQL for writes that confirm them); the PostgreSQL key look-ups of one turn, empty between turns"],
  'src/modules/emails/service.ts': [1, 'mark: a render refusal noted on a send request of a batch'],
  'src/modules/events/outbox.ts': [2, 'mark: event rows no consumer is owed; the stores this process committed events to since they were last settled (settleEvents in tests)'],
  'src/mail/outbound/data-content.ts': [1, "cache: a message's SMTP DATA content, made where the message was built"],
  'src/http/bodies.ts': [1, 'mark: parse hooks that read no body'],
  // Not a cache: dropping it brings back the postgres.js faults it works around. It is the driver's, not the
  // store's: one per postgres.js pool (by its options object), made with the pool and gone with it.
  'src/db/pg-reserved.ts': [1, "the driver's: a postgres.js pool's connections and waiting reservations, beside the pool (openPool)"],
}

/** A module-level (unindented) declaration whose value is a WeakMap, a WeakSet, or a Map keyed by the store, the deps or the settings. */
const DECLARATION = /^(?:export\s+)?(?:const|let|var)\s[^=]*=\s*new\s+(?:Weak(?:Map|Set)\b|Map\s*<\s*(?:Store|Deps|Config)\b)/

function declarations(): Map<string, number> {
  const found = new Map<string, number>()
  for (const f of readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })) {
    if (!f.endsWith('.ts')) continue
    const n = readFileSync(join(ROOT, 'src', f), 'utf8').split('\n').filter((line) => DECLARATION.test(line)).length
    if (n) found.set(`src/${f}`, n)
  }
  return found
}

test('per-store state is built by the composition root: module-level WeakMaps are only the listed caches and marks', () => {
  const found = declarations()
  const unlisted = [...found].filter(([f]) => !(f in ALLOWED)).map(([f, n]) => `${f}: ${n}`)
  expect(unlisted).toEqual([])
  // A listed file with fewer than listed: lower its count (or drop it); more: justify the new one.
  const counts = Object.fromEntries([...found].filter(([f]) => f in ALLOWED))
  const listed = Object.fromEntries(Object.entries(ALLOWED).map(([f, [n]]) => [f, n]))
  expect(counts).toEqual(listed)
})

test('the pattern finds module-level per-store maps, not maps inside functions nor maps of plain keys', () => {
  expect(DECLARATION.test('const perStore = new WeakMap<Store, GroupCommit>()')).toBe(true)
  expect(DECLARATION.test('export const seen = new WeakSet<object>()')).toBe(true)
  expect(DECLARATION.test('let told = new Map<Store, Deps>()')).toBe(true)
  expect(DECLARATION.test('  const byStore = new WeakMap<Store, Statement>()')).toBe(false)
  expect(DECLARATION.test('const names = new Map<string, string>()')).toBe(false)
})
