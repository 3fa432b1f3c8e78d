import Papa from 'papaparse'
import type { Ctx } from '../../deps'
import * as fieldsRepo from './repo/fields'
import * as listRepo from './repo/list'

/**
 * CSV export of every contact of a project (`mailctl contacts export`): id, email, subscribed,
 * createdAt, updatedAt, then one column per custom field (objects and arrays as JSON). The import
 * reads this format back unchanged (it ignores id, createdAt and updatedAt).
 */
export async function* exportCsv(ctx: Ctx): AsyncGenerator<string> {
  const keys = [...new Set((await fieldsRepo.fieldKinds(ctx.store, ctx.projectId)).map((k) => k.key))].sort()
  const header = ['id', 'email', 'subscribed', 'createdAt', 'updatedAt', ...keys]
  yield `${Papa.unparse([header], { newline: '\n' })}\n`
  const cell = (v: unknown): string | number | boolean => {
    if (v === undefined || v === null) return ''
    if (typeof v === 'object') return JSON.stringify(v)
    return v as string | number | boolean
  }
  for await (const rows of listRepo.iterateAll(ctx.store, ctx.projectId, 2000)) {
    const out = rows.map((r) => [r.id, r.email, r.subscribed, r.createdAt.toISOString(), r.updatedAt.toISOString(), ...keys.map((k) => cell(r.data?.[k]))])
    yield `${Papa.unparse(out, { newline: '\n' })}\n`
  }
}
