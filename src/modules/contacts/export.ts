import type { SQL } from 'drizzle-orm'
import Papa from 'papaparse'
import type { Ctx } from '../../deps'
import * as fieldsRepo from './repo/fields'
import * as listRepo from './repo/list'
import * as queryRepo from './repo/query'
import type { ContactRow } from './repo/rows'

/**
 * CSV export of every contact of a project (`mailctl contacts export`): id, email, subscribed,
 * createdAt, updatedAt, then one column per custom field (objects and arrays as JSON). The import
 * reads this format back unchanged (it ignores id, createdAt and updatedAt). With `where` (the dashboard's
 * filtered list, POST /contacts/export) only the contacts it matches, in creation order.
 */
export async function* exportCsv(ctx: Ctx, where?: SQL): AsyncGenerator<string> {
  const keys = [...new Set((await fieldsRepo.fieldKinds(ctx.store, ctx.projectId)).map((k) => k.key))].sort()
  const header = ['id', 'email', 'subscribed', 'createdAt', 'updatedAt', ...keys]
  yield `${Papa.unparse([header], { newline: '\n' })}\n`
  const cell = (v: unknown): string | number | boolean => {
    if (v === undefined || v === null) return ''
    if (typeof v === 'object') return JSON.stringify(v)
    return v as string | number | boolean
  }
  for await (const rows of where ? iterateWhere(ctx, where, 2000) : listRepo.iterateAll(ctx.store, ctx.projectId, 2000)) {
    const out = rows.map((r) => [r.id, r.email, r.subscribed, r.createdAt.toISOString(), r.updatedAt.toISOString(), ...keys.map((k) => cell(r.data?.[k]))])
    yield `${Papa.unparse(out, { newline: '\n' })}\n`
  }
}

async function* iterateWhere(ctx: Ctx, where: SQL, batch: number): AsyncGenerator<ContactRow[]> {
  let after: { value: number; id: string } | null = null
  for (;;) {
    const rows = await queryRepo.page(ctx.store, where, 'createdAt', 'asc', batch, after)
    if (rows.length) yield rows
    if (rows.length < batch) return
    const last = rows[rows.length - 1]
    after = { value: last.createdAt.getTime(), id: last.id }
  }
}
