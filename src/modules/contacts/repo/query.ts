import { and, asc, count, desc, eq, gt, lt, or, sql, type SQL } from 'drizzle-orm'
import type { Db, Store } from '../../../db/client'
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
}

/** The text values of the top-level custom fields that contain `term`. */
function dataSearch(store: Store, term: string): SQL {
  return store.dialect === 'pg'
    ? sql`EXISTS (SELECT 1 FROM jsonb_each(contacts.data) e WHERE jsonb_typeof(e.value) = 'string' AND (e.value #>> '{}') ~ ${regexPattern(term)})`
    : sql`EXISTS (SELECT 1 FROM json_each(contacts.data) j WHERE j.type = 'text' AND j.value GLOB ${globPattern(term)})`
}

export function whereOf(store: Store, projectId: string, w: QueryWhere): SQL {
  const c = store.t.contacts
  const parts: SQL[] = [eq(c.projectId, projectId) as SQL]
  if (w.subscribed !== undefined) parts.push(eq(c.subscribed, w.subscribed) as SQL)
  if (w.condition) parts.push(sql`(${w.condition})`)
  if (w.search) parts.push(sql`(contacts.email LIKE ${likePattern(w.search)} ESCAPE '\\' OR ${dataSearch(store, w.search)})`)
  return and(...parts) as SQL
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
