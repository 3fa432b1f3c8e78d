import type { SQL } from 'drizzle-orm'
import type { Ctx } from '../../deps'
import { prepareFilter, whereOf as conditionSql } from '../../filters'
import type { ContactFilter, QueryBody } from './model'
import * as q from './repo/query'
import { clampLimit, decodeCursor, encodeCursor, toContact } from './service'

/**
 * The dashboard's contacts page over a filter: a segment condition (the segment builder's tree, checked
 * and compiled by src/filters), the subscription state and a search over the email and the text fields.
 * GET /contacts stays the fast path of the unfiltered list (its search covers the email only, through
 * the in-memory index); this path is SQL.
 */

/** The WHERE of a filter in the project of `ctx`; 422 with paths under `path` for a bad condition. */
export async function filterWhere(ctx: Ctx, f: ContactFilter | undefined, path = 'condition'): Promise<SQL> {
  let condition: SQL | undefined
  if (f?.condition !== undefined && f.condition !== null) {
    const prepared = await prepareFilter(ctx, f.condition, { path })
    condition = conditionSql(ctx, prepared)
  }
  return q.whereOf(ctx.store, ctx.projectId, { condition, subscribed: f?.subscribed, search: f?.search?.trim() || undefined })
}

/** POST /contacts/query: keyset pages of the filtered list (the cursor of GET /contacts). */
export async function queryContacts(ctx: Ctx, body: QueryBody) {
  const limit = clampLimit(body.limit)
  const cur = body.cursor ? decodeCursor(body.cursor) : null
  const sort = cur?.s ?? body.sort ?? 'createdAt'
  const dir = cur?.d ?? body.dir ?? 'desc'
  const where = await filterWhere(ctx, body)
  const [rows, total] = await Promise.all([
    q.page(ctx.store, where, sort, dir, limit + 1, cur ? { value: cur.v, id: cur.i } : null),
    cur || body.total === false ? Promise.resolve(0) : q.total(ctx.store, where),
  ])
  const hasMore = rows.length > limit
  const pageRows = hasMore ? rows.slice(0, limit) : rows
  const last = pageRows[pageRows.length - 1]
  const cursor = hasMore && last ? encodeCursor({ s: sort, d: dir, v: sort === 'email' ? last.email : last.createdAt.getTime(), i: last.id }) : null
  return { data: pageRows.map(toContact), cursor, hasMore, total }
}

/** POST /contacts/query/count: the number of contacts the filter matches. */
export async function countContacts(ctx: Ctx, f: ContactFilter) {
  return { total: await q.total(ctx.store, await filterWhere(ctx, f)) }
}
