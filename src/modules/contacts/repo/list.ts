import { sql, type SQL } from 'drizzle-orm'
import type { Store } from '../../../db/client'
import { boolLiteral, momentParam } from '../../../db/dialect'
import { allMatches, currentIndex, pageCandidates, scan, type Matches } from '../search'
import { CONTACT_COLS, fromPg, fromRaw, likePattern, type ContactRow, type PgContact, type RawContact } from './rows'

/** Pages, counts and searches of a project's contacts. */

export type SortKey = 'createdAt' | 'email'
export type SortDir = 'asc' | 'desc'

export interface ListFilter {
  search?: string
  subscribed?: boolean
}

/** The position after the last row of a page: the sort value and the id of that row. */
export interface After { value: string | number; id: string }

/**
 * The list queries (a page, the total) as SQL text compiled once per shape and reused: the page of every
 * GET /contacts is built from these, and drizzle's query builder cost several times more than the query.
 * The shape (sort, direction, keyset, filters) picks the text; values travel as parameters. Both stores
 * accept the same text; they differ only in how a row comes back (fromStore).
 */
type Param = string | number | null
interface ListQuery { text: string; params: Param[] }

function listWhere(store: Store, projectId: string, f: ListFilter, params: Param[]): string {
  params.push(projectId)
  let where = `project_id = $${params.length}`
  if (f.subscribed !== undefined) where += ` AND subscribed = ${boolLiteral(store, f.subscribed)}`
  if (f.search) {
    params.push(likePattern(f.search))
    where += ` AND email LIKE $${params.length} ESCAPE '\\'`
  }
  return where
}

/** Rows strictly after `after` in (sort, id) order; the range lets both stores walk the (project_id, created_at, id) index. */
function keysetText(store: Store, sort: SortKey, dir: SortDir, after: After, params: Param[]): string {
  const cmp = dir === 'asc' ? '>' : '<'
  if (sort === 'email') {
    params.push(String(after.value))
    return ` AND email ${cmp} $${params.length}`
  }
  const at = Number(after.value)
  params.push(momentParam(store, at), after.id)
  const [t, id] = [params.length - 1, params.length]
  return ` AND created_at ${cmp}= $${t} AND (created_at ${cmp} $${t} OR id ${cmp} $${id})`
}

function pageQuery(store: Store, projectId: string, f: ListFilter, sort: SortKey, dir: SortDir, limit: number, after: After | null): ListQuery {
  const params: Param[] = []
  let text = `SELECT ${CONTACT_COLS} FROM contacts WHERE ${listWhere(store, projectId, f, params)}`
  if (after) text += keysetText(store, sort, dir, after, params)
  const d = dir === 'asc' ? 'ASC' : 'DESC'
  params.push(limit)
  text += sort === 'email' ? ` ORDER BY email ${d}` : ` ORDER BY created_at ${d}, id ${d}`
  text += ` LIMIT $${params.length}`
  return { text, params }
}

// A cache, not state: the compiled reads of a store by SQL text.
const compiled = new WeakMap<Store, Map<string, (...p: Param[]) => Promise<unknown[]>>>()

/** Runs a read through `store.prepared`, compiling each distinct text once per store. */
function runCompiled<T>(store: Store, q: ListQuery): Promise<T[]> {
  let byText = compiled.get(store)
  if (!byText) {
    byText = new Map()
    compiled.set(store, byText)
  }
  let run = byText.get(q.text)
  if (!run) {
    run = store.prepared(q.text)
    byText.set(q.text, run)
  }
  return run(...q.params) as Promise<T[]>
}

function fromStore(store: Store, r: RawContact | PgContact): ContactRow {
  // dialect: the rows come back typed from PostgreSQL and raw from SQLite's compiled statements
  return store.dialect === 'pg' ? fromPg(r as PgContact) : fromRaw(r as RawContact)
}

/**
 * How a list query finds contacts whose email contains the search term: from the project's in-memory
 * search index (../search/), brought up to date first (SQLite: this turn's read snapshot;
 * PostgreSQL: a snapshot taken by the catch-up). The scan gives the exact total and the keys (rowid,
 * search_key) of the rows that can be on the page, which one query orders and pages, rechecking each
 * row's email, project and state. The plan is resolved once, by whichever of listPage and countMatching
 * runs first. A project too large to hold in memory searches in SQL (LIKE; pg_trgm on PostgreSQL).
 */
export type SearchPlan =
  | { kind: 'plain' }
  | { kind: 'indexed'; matches?: Promise<Matches | null> }

export async function planSearch(_store: Store, f: ListFilter): Promise<SearchPlan> {
  return f.search ? { kind: 'indexed' } : { kind: 'plain' }
}

/**
 * PostgreSQL orders emails by the database's collation, which the index does not know: with email
 * order, up to this many matches are all handed to the page query; more are dense enough that the walk
 * of the (project_id, email) index meets a page quickly.
 */
const PG_EMAIL_CANDIDATES = 10_000

/** A page of contacts among those of `keys` (contact_search_keys) on PostgreSQL, rechecked like rawConds. */
async function pgCandidatePage(store: Store, projectId: string, f: ListFilter, keys: number[], sort: SortKey, dir: SortDir, limit: number, after: After | null): Promise<ContactRow[]> {
  const cmp = dir === 'asc' ? sql`>` : sql`<`
  const d = dir === 'asc' ? sql`ASC` : sql`DESC`
  if (!keys.length) return []
  const parts: SQL[] = [sql`k.project_id = ${projectId}`, sql`k.search_key = ANY(${`{${keys.join(',')}}`}::bigint[])`, sql`c.project_id = ${projectId}`, sql`c.email LIKE ${likePattern(f.search ?? '')} ESCAPE '\\'`]
  if (f.subscribed !== undefined) parts.push(sql`c.subscribed = ${f.subscribed}`)
  if (after && sort === 'email') parts.push(sql`c.email ${cmp} ${String(after.value)}`)
  if (after && sort === 'createdAt') parts.push(sql`(c.created_at, c.id) ${cmp} (${new Date(Number(after.value)).toISOString()}::timestamptz, ${after.id})`)
  const order = sort === 'email' ? sql`c.email ${d}` : sql`c.created_at ${d}, c.id ${d}`
  const rows = await store.rows<PgContact>(sql`
    SELECT ${sql.raw(CONTACT_COLS.split(', ').map((col) => `c.${col}`).join(', '))} FROM contact_search_keys k JOIN contacts c ON c.id = k.contact_id
    WHERE ${sql.join(parts, sql` AND `)} ORDER BY ${order} LIMIT ${limit}`)
  return rows.map(fromPg)
}

function resolveMatches(store: Store, projectId: string, f: ListFilter, plan: SearchPlan & { kind: 'indexed' }): Promise<Matches | null> {
  // An indexed plan has a search term (planSearch).
  if (!plan.matches) plan.matches = currentIndex(store, projectId).then((ix) => ix && scan(ix, (f.search ?? '').toLowerCase(), f.subscribed))
  return plan.matches
}

/** Raw SQL of the filter over `c` (the SQLite queries driven by collected rowids). */
function rawConds(projectId: string, f: ListFilter, extra: SQL[] = []): SQL {
  const parts: SQL[] = [sql`c.project_id = ${projectId}`, sql`c.email LIKE ${likePattern(f.search ?? '')} ESCAPE '\\'`]
  if (f.subscribed !== undefined) parts.push(sql`c.subscribed = ${f.subscribed ? 1 : 0}`)
  return sql.join([...parts, ...extra], sql` AND `)
}

/**
 * One page in (sort, id) order strictly after `after`. Keyset paging: rows inserted while a client pages
 * never shift the rows it has not seen yet, so no row is skipped or repeated.
 */
export async function listPage(store: Store, projectId: string, f: ListFilter, sort: SortKey, dir: SortDir, limit: number, after: After | null, plan: SearchPlan = { kind: 'plain' }): Promise<ContactRow[]> {
  const matches = plan.kind === 'indexed' ? await resolveMatches(store, projectId, f, plan) : null
  // dialect: PostgreSQL pages through the search's candidates by key; SQLite's planner takes the joined query
  if (matches && store.dialect === 'pg') {
    if (sort !== 'email') return pgCandidatePage(store, projectId, f, pageCandidates(matches, sort, dir, limit, after), sort, dir, limit, after)
    if (matches.total <= PG_EMAIL_CANDIDATES) return pgCandidatePage(store, projectId, f, allMatches(matches), sort, dir, limit, after)
  } else if (matches) {
    const rowids = pageCandidates(matches, sort, dir, limit, after)
    if (!rowids.length) return []
    const keyset: SQL[] = []
    const cmp = dir === 'asc' ? sql`>` : sql`<`
    if (after && sort === 'email') keyset.push(sql`c.email ${cmp} ${String(after.value)}`)
    if (after && sort === 'createdAt') keyset.push(sql`(c.created_at, c.id) ${cmp} (${Number(after.value)}, ${after.id})`)
    const d = dir === 'asc' ? sql`ASC` : sql`DESC`
    const order = sort === 'email' ? sql`c.email ${d}` : sql`c.created_at ${d}, c.id ${d}`
    const rows = await store.rows<RawContact>(sql`
      SELECT ${sql.raw(CONTACT_COLS.split(', ').map((col) => `c.${col}`).join(', '))}
      FROM json_each(${JSON.stringify(rowids)}) j CROSS JOIN contacts c ON c.rowid = j.value
      WHERE ${rawConds(projectId, f, keyset)}
      ORDER BY ${order} LIMIT ${limit}`)
    return rows.map(fromRaw)
  }
  const rows = await runCompiled<RawContact | PgContact>(store, pageQuery(store, projectId, f, sort, dir, limit, after))
  return rows.map((r) => fromStore(store, r))
}

/** The exact number of matching contacts (see SearchPlan). */
export async function countMatching(store: Store, projectId: string, f: ListFilter, plan: SearchPlan = { kind: 'plain' }): Promise<number> {
  const matches = plan.kind === 'indexed' ? await resolveMatches(store, projectId, f, plan) : null
  if (matches) return matches.total
  const params: Param[] = []
  const text = `SELECT count(*) AS n FROM contacts WHERE ${listWhere(store, projectId, f, params)}`
  const [row] = await runCompiled<{ n: number | string }>(store, { text, params })
  return Number(row?.n ?? 0)
}

/** Every contact of the project in creation order, `batch` rows at a time (CLI export). */
export async function* iterateAll(store: Store, projectId: string, batch = 1000): AsyncGenerator<ContactRow[]> {
  let after: After | null = null
  for (;;) {
    const rows = await listPage(store, projectId, {}, 'createdAt', 'asc', batch, after)
    if (!rows.length) return
    yield rows
    const last = rows[rows.length - 1]
    after = { value: last.createdAt.getTime(), id: last.id }
    if (rows.length < batch) return
  }
}

export async function countContacts(store: Store, projectId: string): Promise<number> {
  return countMatching(store, projectId, {})
}
