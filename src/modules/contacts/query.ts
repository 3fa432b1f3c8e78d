import type { SQL } from 'drizzle-orm'
import type { Ctx } from '../../deps'
import { prepareFilter, whereOf as conditionSql } from '../../filters'
import type { ContactFilter, CountBody, QueryBody } from './model'
import * as q from './repo/query'
import { errorFields } from '../../log'
import { allMatches, builtIndex, foldText, type Matches, pageCandidates, scanText, searchableTerm } from './search'
import { clampLimit, decodeCursor, encodeCursor, toContact } from './service'

/**
 * The dashboard's contacts page over a filter: a segment condition (the segment builder's tree, checked
 * and compiled by src/filters), the subscription state and a search over the email and the text fields.
 * GET /contacts stays the fast path of the unfiltered list (its search covers the email only, through
 * the in-memory index); this path is SQL.
 */

async function conditionOf(ctx: Ctx, f: ContactFilter | undefined, path: string): Promise<SQL | undefined> {
  if (f?.condition === undefined || f.condition === null) return undefined
  return conditionSql(ctx, await prepareFilter(ctx, f.condition, { path }))
}

/**
 * The WHERE of a filter in the project of `ctx`, all in SQL (bulk jobs and the CSV export, which walk
 * every match anyway); 422 with paths under `path` for a bad condition.
 */
export async function filterWhere(ctx: Ctx, f: ContactFilter | undefined, path = 'condition'): Promise<SQL> {
  const condition = await conditionOf(ctx, f, path)
  return q.whereOf(ctx.store, ctx.projectId, { condition, subscribed: f?.subscribed, search: f?.search?.trim() || undefined })
}

/** A search with at most this many candidates is read by key; a larger one is tested row by row in SQL. */
export const KEYED_MAX = 20_000

/**
 * The WHERE of the page and its count. A search is first looked up in the project's in-memory copy
 * (search/, ADR 0006: the emails and the folded JSON text of the custom fields): with at most KEYED_MAX
 * candidates, the WHERE names them by key (`keyed`) and tests the search on them only, so neither the page
 * nor the count reads the other contacts; a rare term no longer walks the whole project. A term with more
 * candidates is searched in SQL (`where`), and its candidates are handed back (`wide`) for the page to
 * try the first of them in page order by key (see widePage). On SQLite the copy is brought to this turn's
 * read snapshot and the caller runs its queries in the same turn (no await in between but on statements
 * of this store), so they all see the same rows.
 */
async function pageWhere(ctx: Ctx, f: ContactFilter, keyedMax: number): Promise<{ where: SQL; keyed: boolean; wide?: { m: Matches; condition?: SQL; search: string } }> {
  const condition = await conditionOf(ctx, f, 'condition')
  const search = f.search?.trim() || undefined
  if (search && searchableTerm(search)) {
    // While the copy is first built (seconds for a million contacts after a restart), SQL answers.
    const ix = await builtIndex(ctx.store, ctx.projectId, (err) => ctx.deps.log.warn('building the contact search copy failed', errorFields(err)))
    const m = ix && scanText(ix, search.toLowerCase(), foldText(search))
    if (m && m.total <= keyedMax) return { where: q.whereOf(ctx.store, ctx.projectId, { condition, subscribed: f.subscribed, search, keys: allMatches(m) }), keyed: true }
    if (m) return { where: q.whereOf(ctx.store, ctx.projectId, { condition, subscribed: f.subscribed, search }), keyed: false, wide: { m, condition, search } }
  }
  return { where: q.whereOf(ctx.store, ctx.projectId, { condition, subscribed: f.subscribed, search }), keyed: false }
}

/** Candidates tried by key in page order before a wide search walks the project in SQL. */
const WIDE_STEPS = { createdAt: [1000, 4000, 16_000], email: [1000] } as const

/**
 * A page of a search with more than KEYED_MAX candidates, from its first candidates in page order (the
 * copy orders them: search/chunks.ts pageCandidates), read by key and tested in SQL: if `limit` of them
 * match, they are the page (every match is a candidate, so no match past them can come first). A term
 * whose matches are many but sparse in page order (a name of the 100,000s, the newest rows elsewhere)
 * would make SQL walk most of the project to fill a page. null when the steps do not fill the page: SQL.
 */
async function widePage(ctx: Ctx, wide: { m: Matches; condition?: SQL; search: string }, subscribed: boolean | undefined, sort: q.SortKey, dir: q.SortDir, limit: number, after: { value: string | number; id: string } | null) {
  for (const k of WIDE_STEPS[sort]) {
    const keys = pageCandidates(wide.m, sort, dir, k, after)
    const rows = await q.page(ctx.store, q.whereOf(ctx.store, ctx.projectId, { condition: wide.condition, subscribed, search: wide.search, keys }), sort, dir, limit, after)
    if (rows.length >= limit || keys.length < k) return rows
  }
  return null
}

/** POST /contacts/query: keyset pages of the filtered list (the cursor of GET /contacts). */
export async function queryContacts(ctx: Ctx, body: QueryBody, keyedMax = KEYED_MAX) {
  const limit = clampLimit(body.limit)
  const cur = body.cursor ? decodeCursor(body.cursor) : null
  const sort = cur?.s ?? body.sort ?? 'createdAt'
  const dir = cur?.d ?? body.dir ?? 'desc'
  const { where, keyed, wide } = await pageWhere(ctx, body, keyedMax)
  const after = cur ? { value: cur.v, id: cur.i } : null
  const [rows, total] = await Promise.all([
    (wide ? widePage(ctx, wide, body.subscribed, sort, dir, limit + 1, after) : Promise.resolve(null)).then((r) => r ?? q.page(ctx.store, where, sort, dir, limit + 1, after)),
    cur || body.total === false ? Promise.resolve(0) : keyed ? q.total(ctx.store, where) : countMatches(ctx, where).then((c) => c.total),
  ])
  const hasMore = rows.length > limit
  const pageRows = hasMore ? rows.slice(0, limit) : rows
  const last = pageRows[pageRows.length - 1]
  const cursor = hasMore && last ? encodeCursor({ s: sort, d: dir, v: sort === 'email' ? last.email : last.createdAt.getTime(), i: last.id }) : null
  return { data: pageRows.map(toContact), cursor, hasMore, total }
}

/** POST /contacts/query/count: the number of contacts the filter matches, exact or (`estimate`) estimated. */
export async function countContacts(ctx: Ctx, f: CountBody, keyedMax = KEYED_MAX) {
  const { where, keyed, wide } = await pageWhere(ctx, f, keyedMax)
  // A keyed search reads at most KEYED_MAX contacts by key: counted exactly in one statement.
  if (keyed) return { total: await q.total(ctx.store, where), estimated: false }
  if (wide && f.estimate) {
    const sampled = await candidateSample(ctx, wide, f.subscribed)
    if (sampled) return sampled
  }
  return countMatches(ctx, where, f.estimate ? ESTIMATE : undefined)
}

/** Candidates of a wide search tested to estimate its count. */
export const CANDIDATE_SAMPLE = 2000

/**
 * The count of a search with more candidates than are read by key, estimated from a uniform random
 * sample of its candidates (every match is one) tested in SQL: matches in the sample / sample x
 * candidates. Candidates are drawn one by one, not in ranges of the table, so clustered matches do not
 * widen the error: about 3 % (one standard deviation) when a third of the candidates match, 10 % at one
 * in twenty. null when fewer than ESTIMATE.minHits of the sample match (the candidates are mostly keys or
 * numbers the folded text held): counted over the table instead.
 */
async function candidateSample(ctx: Ctx, wide: { m: Matches; condition?: SQL; search: string }, subscribed: boolean | undefined) {
  const all = allMatches(wide.m)
  const n = Math.min(CANDIDATE_SAMPLE, all.length)
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(Math.random() * (all.length - i))
    const x = all[i]; all[i] = all[j]; all[j] = x
  }
  const sample = all.slice(0, n)
  const hits = await q.total(ctx.store, q.whereOf(ctx.store, ctx.projectId, { condition: wide.condition, subscribed, search: wide.search, keys: sample }))
  if (hits < ESTIMATE.minHits) return null
  return { total: twoDigits((hits / n) * all.length), estimated: true }
}

/**
 * How long an estimated count counts before it may stop, and the matches and slices it needs to have seen
 * to stop.
 */
export const ESTIMATE = { budgetMs: 300, minHits: 30, minSlices: 32 }

export interface CountOptions {
  budgetMs: number
  minHits: number
  minSlices: number
  /** Rowids or blocks per slice (repo/query.ts); smaller in tests, to have several slices of a few rows. */
  sliceSize?: number
}

/**
 * The contacts of `where`, counted without holding the process: on a million contacts a condition over the
 * custom fields reads every row (1-10 s), and SQLite reads synchronously, so one statement would stop every
 * other request for that long. The table is counted in slices of its physical order (repo/query.ts), one
 * statement per slice with a turn of the event loop between them.
 *
 * Without `opts` every slice is counted: the exact total (PostgreSQL counts in one statement instead: it
 * does not hold this process, and its parallel scan is faster than the slices).
 *
 * With `opts` (the dashboard) the slices are visited in a random order, and once `budgetMs` has passed with
 * at least `minHits` matches in at least `minSlices` slices seen, the count stops and answers the estimate
 * matches seen x slices / slices read, rounded to two significant digits, with `estimated: true`. Visiting
 * the slices at random makes it a random sample of the table's ranges, so the estimate is unbiased wherever
 * the matches lie; its error grows with how much they cluster (all in a few slices: large) and shrinks with
 * the slices read (hence small slices and a minimum of them). A rare filter (fewer matches than minHits in
 * the budget) keeps counting to the exact total: an estimate from a handful of matches would be a guess.
 */
export async function countMatches(ctx: Ctx, where: SQL, opts?: CountOptions): Promise<{ total: number; estimated: boolean }> {
  // dialect: PostgreSQL counts in one parallel statement; SQLite counts by slices so as not to hold the process
  if (!opts && ctx.store.dialect === 'pg') return { total: await q.total(ctx.store, where), estimated: false }
  const all = await q.slices(ctx.store, opts?.sliceSize)
  if (opts) shuffle(all)
  const started = performance.now()
  let hits = 0
  for (let i = 0; i < all.length; i++) {
    if (i > 0) await nextTurn()
    hits += await q.countSlice(ctx.store, where, all[i])
    if (opts && i + 1 < all.length && i + 1 >= opts.minSlices && hits >= opts.minHits && performance.now() - started >= opts.budgetMs) {
      return { total: twoDigits((hits * all.length) / (i + 1)), estimated: true }
    }
  }
  return { total: hits, estimated: false }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

function shuffle<T>(xs: T[]): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const x = xs[i]; xs[i] = xs[j]; xs[j] = x
  }
}

/** 333,817 -> 330,000; 1,234 -> 1,200; 87 -> 87. */
function twoDigits(n: number): number {
  if (n < 100) return Math.round(n)
  const unit = 10 ** (Math.floor(Math.log10(n)) - 1)
  return Math.round(n / unit) * unit
}
