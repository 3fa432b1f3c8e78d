import { and, asc, count, desc, eq, gt, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../../db/client'
import { searchableTerm } from '../search/fold'
import { likePattern, type ContactRow } from './rows'

/**
 * The dashboard's contact queries (POST /contacts/query, bulk jobs over a filter, CSV export of a filter):
 * the project, an optional compiled segment condition (src/filters), the subscription state and a search
 * over the email and the custom fields' text values, as one WHERE over `contacts`.
 *
 * Search matching (docs/decisions.md, Contacts search): the email by a case-insensitive LIKE (emails are
 * stored lower-cased); a text value of a top-level custom field by a pattern in which every letter is a
 * class of its case and accent variants ("muller" and "MÜLLER" both find "Müller"). SQLite runs it as a
 * GLOB (character classes are UTF-8 aware there, unlike LIKE and lower()), PostgreSQL as a regular
 * expression, so both stores answer the same rows without an extension.
 */

/** Base letter -> the Latin letters (U+0041-U+024F, Latin Extended) that fold to it. */
const VARIANTS: Map<string, string[]> = (() => {
  const out = new Map<string, Set<string>>()
  const add = (base: string, ch: string) => {
    let s = out.get(base)
    if (!s) { s = new Set(); out.set(base, s) }
    s.add(ch)
  }
  for (let cp = 0x41; cp <= 0x24f; cp++) {
    const ch = String.fromCodePoint(cp)
    if (!/\p{L}/u.test(ch)) continue
    const base = ch.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()
    if (base.length !== 1 || !/[a-z]/.test(base)) continue
    add(base, ch)
  }
  return new Map([...out].map(([k, v]) => [k, [...v]]))
})()

/** The variants of one character: its accent and case variants for a Latin letter, its two cases for another letter. */
export function variantsOf(ch: string): string[] {
  const base = ch.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()
  const latin = base.length === 1 ? VARIANTS.get(base) : undefined
  if (latin) return latin
  return [...new Set([ch, ch.toLowerCase(), ch.toUpperCase()].filter((c) => [...c].length === 1))]
}

/** A GLOB pattern (SQLite) matching any text that contains `term`, folding case and accents. */
export function globPattern(term: string): string {
  let out = '*'
  for (const ch of term) {
    const v = variantsOf(ch)
    if (v.length > 1) out += `[${v.join('')}]`
    else if (ch === '*' || ch === '?' || ch === '[') out += `[${ch}]`
    else out += ch
  }
  return `${out}*`
}

/** A regular expression (PostgreSQL ARE) matching any text that contains `term`, folding case and accents. */
export function regexPattern(term: string): string {
  let out = ''
  for (const ch of term) {
    const v = variantsOf(ch)
    if (v.length > 1) out += `[${v.join('')}]`
    else if (/[\p{L}\p{N}]/u.test(ch)) out += ch
    else out += `\\${ch}`
  }
  return out
}

export interface QueryWhere {
  /** A compiled segment condition over `contacts` (src/filters whereOf). */
  condition?: SQL
  subscribed?: boolean
  search?: string
  /**
   * With `search`: its candidates as the in-memory copy found them (search/: SQLite rowids, PostgreSQL
   * search_keys), read by key; the search is tested on them only.
   */
  keys?: number[]
}


/**
 * The text values of the top-level custom fields that contain `term`. Before the test of each value, the
 * same pattern over the whole stored JSON text: a value that contains the term puts it in that text
 * unchanged when the term has no character JSON escapes, so this test only drops rows that cannot match,
 * and it costs a fraction of walking the values (a million rows: 0.9 s of CPU against 1.8 s on SQLite,
 * 1.6 s against 18 s on PostgreSQL, docs/benchmarks.md). Keys and other values may pass it; the per-value
 * test decides.
 */
function dataSearch(store: Store, term: string): SQL {
  // dialect: the dashboard search: a regular expression on jsonb values against GLOB on json_each
  const values = store.dialect === 'pg'
    ? sql`EXISTS (SELECT 1 FROM jsonb_each(contacts.data) e WHERE jsonb_typeof(e.value) = 'string' AND (e.value #>> '{}') ~ ${regexPattern(term)})`
    : sql`EXISTS (SELECT 1 FROM json_each(contacts.data) j WHERE j.type = 'text' AND j.value GLOB ${globPattern(term)})`
  if (!searchableTerm(term)) return values
  // dialect: the pre-test of the stored JSON text: a regular expression on PostgreSQL, GLOB on SQLite
  const text = store.dialect === 'pg' ? sql`contacts.data::text ~ ${regexPattern(term)}` : sql`contacts.data GLOB ${globPattern(term)}`
  return sql`(${text} AND ${values})`
}

export function whereOf(store: Store, projectId: string, w: QueryWhere): SQL {
  const c = store.t.contacts
  // Keyed on SQLite: `+` keeps the planner off the (project_id, created_at) index, which it would otherwise
  // walk in page order testing each row against the keys (a whole project for a rare term); the keys lead.
  // dialect: a planner hint only SQLite needs: it has no statistics to choose between indexes
  const parts: SQL[] = [w.keys && store.dialect !== 'pg' ? sql`+contacts.project_id = ${projectId}` : eq(c.projectId, projectId) as SQL]
  if (w.subscribed !== undefined) parts.push(eq(c.subscribed, w.subscribed) as SQL)
  if (w.condition) parts.push(sql`(${w.condition})`)
  if (w.keys) parts.push(keysIn(store, projectId, w.keys))
  if (w.search) parts.push(sql`(contacts.email LIKE ${likePattern(w.search)} ESCAPE '\\' OR ${dataSearch(store, w.search)})`)
  return and(...parts) as SQL
}

/**
 * The contacts of `keys`. PostgreSQL: the ids as one array computed once (an InitPlan), so that the
 * contacts are read by their primary key rather than by walking the project in page order; the keys are
 * joined one by one to contact_search_keys' index (a `search_key = ANY(...)` filter there is planned as a
 * walk of the whole project when its statistics are stale, as after an import: 846 ms against 35 ms for
 * 1,000 keys of a million).
 */
function keysIn(store: Store, projectId: string, keys: number[]): SQL {
  // dialect: PostgreSQL's search keys join contact_search_keys as a bigint array; SQLite's keys are the rowids, as a JSON list
  if (store.dialect === 'pg') {
    return sql`contacts.id = ANY(ARRAY(SELECT k.contact_id FROM unnest(${`{${keys.join(',')}}`}::bigint[]) AS u(key)
      JOIN contact_search_keys k ON k.project_id = ${projectId} AND k.search_key = u.key))`
  }
  return sql`contacts.rowid IN (SELECT value FROM json_each(${JSON.stringify(keys)}))`
}

export type SortKey = 'createdAt' | 'email'
export type SortDir = 'asc' | 'desc'

/** One keyset page in (sort, id) order strictly after `after`. */
export async function page(store: Store, where: SQL, sort: SortKey, dir: SortDir, limit: number, after: { value: string | number; id: string } | null): Promise<ContactRow[]> {
  const c = store.t.contacts
  const cmp = dir === 'asc' ? gt : lt
  const order = dir === 'asc' ? asc : desc
  let keyset: SQL | undefined
  if (after && sort === 'email') keyset = cmp(c.email, String(after.value))
  if (after && sort === 'createdAt') {
    const at = new Date(Number(after.value))
    keyset = or(cmp(c.createdAt, at), and(eq(c.createdAt, at), cmp(c.id, after.id)))
  }
  const q = store.db.select().from(c).where(keyset ? and(where, keyset) : where)
  const ordered = sort === 'email' ? q.orderBy(order(c.email)) : q.orderBy(order(c.createdAt), order(c.id))
  return ordered.limit(limit)
}

export async function total(store: Store, where: SQL, db?: Db): Promise<number> {
  const c = store.t.contacts
  const [row] = await (db ?? store.db).select({ n: count() }).from(c).where(where)
  return Number(row?.n ?? 0)
}

/** Ids of the matching contacts in id order after `afterId` (bulk jobs walk every match this way). */
export async function idsAfter(store: Store, where: SQL, afterId: string, limit: number, db?: Db): Promise<string[]> {
  const c = store.t.contacts
  const rows = await (db ?? store.db).select({ id: c.id }).from(c).where(and(where, gt(c.id, afterId))).orderBy(asc(c.id)).limit(limit)
  return rows.map((r) => r.id)
}

/**
 * Counting a filter slice by slice (query.ts countMatches): a slice is a range of the table's physical
 * order, SQLite's rowid or PostgreSQL's block number (read by a TID range scan), so that each is one short
 * range read. The slices cover the whole table, every project's rows.
 */
export type Slice = readonly [number, number]

/**
 * Rowids (SQLite) or blocks of 8 KB (PostgreSQL, about 50 contacts each) per slice: small, so that an
 * estimate reads many slices in its time (matches often cluster: an import, a range of sign-ups).
 */
export const SLICE_ROWIDS = 4096
export const SLICE_BLOCKS = 64

/** The table's slices in physical order, `size` rowids or blocks each (the defaults above). */
export async function slices(store: Store, size?: number): Promise<Slice[]> {
  const out: Slice[] = []
  // dialect: slices are heap blocks on PostgreSQL, rowid ranges on SQLite
  if (store.dialect === 'pg') {
    const [row] = await store.rows<{ blocks: string | number }>(sql`SELECT pg_relation_size('contacts') / current_setting('block_size')::int AS blocks`)
    const blocks = Number(row?.blocks ?? 0)
    const step = size ?? SLICE_BLOCKS
    for (let b = 0; b < blocks; b += step) out.push([b, b + step])
    // Rows added past the end since the size was read: the last slice is open-ended.
    if (out.length) out[out.length - 1] = [out[out.length - 1][0], Number.MAX_SAFE_INTEGER]
    else out.push([0, Number.MAX_SAFE_INTEGER])
    return out
  }
  const [row] = await store.rows<{ lo: number | null; hi: number | null }>(sql`SELECT (SELECT min(rowid) FROM contacts) AS lo, (SELECT max(rowid) FROM contacts) AS hi`)
  const lo = Number(row?.lo ?? 1)
  const hi = Number(row?.hi ?? 0)
  const step = size ?? SLICE_ROWIDS
  for (let r = lo; r <= hi; r += step) out.push([r, r + step])
  if (out.length) out[out.length - 1] = [out[out.length - 1][0], Number.MAX_SAFE_INTEGER]
  else out.push([lo, Number.MAX_SAFE_INTEGER])
  return out
}

/** The contacts of `where` in one slice: [from, to) of rowids or blocks. */
export async function countSlice(store: Store, where: SQL, [from, to]: Slice): Promise<number> {
  // dialect: a slice is a ctid range on PostgreSQL, a rowid range on SQLite
  const range = store.dialect === 'pg'
    ? sql`contacts.ctid >= ${`(${from},0)`}::tid AND contacts.ctid < ${`(${Math.min(to, 4_294_967_295)},0)`}::tid`
    : sql`contacts.rowid >= ${from} AND contacts.rowid < ${to}`
  const [row] = await store.rows<{ n: string | number }>(sql`SELECT count(*) AS n FROM contacts WHERE ${range} AND ${where}`)
  return Number(row?.n ?? 0)
}
