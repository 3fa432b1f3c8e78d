import { t } from 'elysia'
import Papa from 'papaparse'
import type { Ctx } from '../../deps'
import { ctxFor } from '../../deps'
import { invalidField, notFound, tooLarge, validation, type FieldError } from '../../errors'
import { defineJob, enqueue, getJob, type JobRow } from '../../jobs/queue'
import { notifyEvents } from '../events/stream'
import { parseInput } from '../validate'
import { isStorableText } from '../../storable'
import { checkDataLimits, isDataLimitError, isEmail, normalizeEmail, RESERVED_DATA_KEYS, type ContactData } from './data'
import { convertValue, STANDARD_NAMES, type FieldType } from './fields'
import { ImportMapping, type ColumnMap } from './model'
import * as fieldsRepo from './repo/fields'
import * as repo from './repo/imports'
import { againIfVanished, upsertMany, type UpsertInput } from './service'

/**
 * CSV import (docs/decisions.md, Limits: multipart, at most 5 MB, queued). The upload is stored in `contact_imports` and a
 * `contacts.import` job (payload: the upload id) processes it in batches, one transaction per batch;
 * a bad row is reported and skipped, never aborting the rest. Every row is an upsert by the data rules,
 * so importing the same file again changes nothing.
 *
 * Header row: `email` (also "e-mail", "email address"; any case) is required, `subscribed` is optional
 * (true/false, yes/no, 1/0), `createdAt`/`updatedAt` (as written by `mailctl contacts export`) and `id`
 * are ignored, every other column is a custom field. Values keep their types: integers and decimals
 * become numbers (not those with leading zeros, or beyond 2^53), true/false become booleans, ISO 8601
 * dates stay ISO strings (date-times normalised to UTC), cells holding a JSON object or array become
 * that object or array, empty cells are ignored (rule 3). Rows of one email merge in file order.
 * `row` in the error report is the record number in the file, the header being row 1.
 */

export const IMPORT_JOB = 'contacts.import'
export const MAX_IMPORT_BYTES = 5 * 1024 * 1024
const BATCH = 1000
/** Progress rows are written at most this often (each is a commit). */
const PROGRESS_EVERY_MS = 250
const MAX_REPORTED_ERRORS = 1000

export interface ImportResult {
  created: number
  updated: number
  skipped: number
  failed: number
  errors: Array<{ row: number; message: string }>
}

const EMAIL_HEADERS = new Set(['email', 'e-mail', 'emailaddress', 'email_address', 'mail'])
const SUBSCRIBED_HEADERS = new Set(['subscribed', 'issubscribed', 'subscribe', 'optin', 'opted_in'])
/** Standard fields written by `mailctl contacts export`; they are not custom fields (id is a reserved key anyway). */
const IGNORED_HEADERS = new Set(['createdat', 'updatedat'])

/** How a column's cells are read: `auto` types each value (typedValue); the others convert or fail the row. */
export type CellType = 'auto' | FieldType

interface Columns { email: number; subscribed: number; fields: Array<{ index: number; name: string; type: CellType }> }

/** A header or field name compared case- and space-insensitively ("Signup Date" ~ "signupdate" ~ "signup_date"). */
export function matchKey(name: string): string {
  return name.replace(/^\uFEFF/, '').toLowerCase().replace(/[\s_-]+/g, '')
}

/**
 * The name a new field gets from a header: words lower-cased and joined by "_" ("Signup Date" ->
 * signup_date), a capitalised word lower-cased ("Name" -> name); one identifier as written (firstName,
 * first_name), so API clients' headers keep naming the fields their templates use.
 */
export function fieldNameOf(header: string): string {
  const h = header.replace(/^\uFEFF/, '').trim().replace(/\s+/g, ' ')
  if (h.includes(' ')) return h.split(' ').join('_').toLowerCase()
  return /^\p{Lu}[\p{Ll}\d]*$/u.test(h) ? h.toLowerCase() : h
}

/** An existing field of the project, by name and its single type (string/number/boolean/date; else auto). */
export interface KnownField { name: string; type: string }

/**
 * The automatic mapping of a header (docs/decisions.md, Import mapping): the email column and `subscribed`
 * by their usual names, `createdAt`/`updatedAt` ignored, a column whose name matches an existing field
 * case- and space-insensitively goes to that field (with its type), any other to a new field named by
 * fieldNameOf, typed from its values.
 */
export function suggestMapping(header: string[], known: KnownField[]): ColumnMap[] {
  const byKey = new Map<string, KnownField>()
  for (const f of known) if (!byKey.has(matchKey(f.name))) byKey.set(matchKey(f.name), f)
  let email = false
  let subscribed = false
  return header.map((raw) => {
    const column = raw.replace(/^\uFEFF/, '').trim()
    const key = matchKey(column)
    if (!email && EMAIL_HEADERS.has(key)) { email = true; return { column, to: 'email' as const } }
    if (!subscribed && SUBSCRIBED_HEADERS.has(key)) { subscribed = true; return { column, to: 'subscribed' as const } }
    if (!column || IGNORED_HEADERS.has(key) || key === 'id') return { column, to: 'ignore' as const }
    const f = byKey.get(key)
    if (f) return { column, to: 'field' as const, field: f.name, type: (['string', 'number', 'boolean', 'date'].includes(f.type) ? f.type : 'auto') as CellType }
    return { column, to: 'field' as const, field: fieldNameOf(column), type: 'auto' as const }
  })
}

/**
 * The columns of a header under `mapping` (entries by column name override the automatic mapping of
 * suggestMapping). 422 naming `mapping.<i>.column` for a column not in the header, and `file` when no
 * column is the email.
 */
function mapHeader(header: string[], mapping: ColumnMap[] = [], known: KnownField[] = []): Columns {
  const auto = suggestMapping(header, known)
  const names = header.map((h) => h.replace(/^\uFEFF/, '').trim())
  // A column's name becomes a field's name (stored in the job and on contacts): one no store can hold is
  // refused before anything is queued. (Cells are checked row by row: checkDataLimits fails such a row.)
  const unstorable = names.findIndex((n) => !isStorableText(n))
  if (unstorable >= 0) throw invalidField('file', `The CSV header's column ${unstorable + 1} contains a NUL character or a lone UTF-16 surrogate, which cannot be stored`, 'invalid_text')
  const errors: FieldError[] = []
  const given = new Map<string, ColumnMap>()
  mapping.forEach((m, i) => {
    const column = m.column.trim()
    if (!names.includes(column)) errors.push({ field: `mapping.${i}.column`, message: `mapping.${i}.column: the file has no column "${column}"`, code: 'unknown_column', received: m.column })
    else if (m.to === 'field' && !m.field?.trim()) errors.push({ field: `mapping.${i}.field`, message: `mapping.${i}.field: required when to is "field"`, code: 'required' })
    else if (m.to === 'field' && (RESERVED_DATA_KEYS.has(m.field?.trim() ?? '') || STANDARD_NAMES.has(m.field?.trim() ?? ''))) errors.push({ field: `mapping.${i}.field`, message: `mapping.${i}.field: ${m.field} is a standard or reserved name`, code: 'reserved_field', received: m.field })
    else given.set(column, m)
  })
  if (errors.length) throw validation(errors, errors[0].message)
  let email = -1
  let subscribed = -1
  const fields: Columns['fields'] = []
  const fromGiven = new Set(given.keys())
  names.forEach((name, index) => {
    const m = given.get(name) ?? auto[index]
    // A column the mapping sends to email or subscribed takes it from an automatic one.
    if (m.to === 'email') { if (email < 0 || fromGiven.has(name)) email = index }
    else if (m.to === 'subscribed') { if (subscribed < 0 || fromGiven.has(name)) subscribed = index }
    else if (m.to === 'field' && m.field) fields.push({ index, name: m.field.trim(), type: m.type ?? 'auto' })
  })
  if (email < 0) throw invalidField('file', 'The CSV needs an email column: name one "email" or map a column to email', 'missing_email_column', header.join(','))
  return { email, subscribed, fields: fields.filter((f) => f.index !== email && f.index !== subscribed) }
}

function parseCsv(text: string, preview = 0): string[][] {
  const out = Papa.parse<string[]>(text.replace(/^\uFEFF/, ''), { header: false, skipEmptyLines: false, preview })
  return out.data
}

/** Reads the header of an upload so that a file without an email column is refused at once (422). */
export function checkHeader(text: string, mapping?: ColumnMap[]): string[] {
  const [header] = parseCsv(text, 1)
  if (!header?.some((h) => h.trim())) throw invalidField('file', 'The CSV file is empty: it needs a header row with an "email" column', 'empty_file')
  mapHeader(header, mapping)
  return header
}

const INT_RE = /^-?(0|[1-9]\d*)$/
const DEC_RE = /^-?(0|[1-9]\d*)\.\d+$/
const DATETIME_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/

/** A CSV cell as a typed value ('' stays '' so that rule 3 ignores it). */
export function typedValue(cell: string): unknown {
  const v = cell.trim()
  if (v === '') return ''
  const lower = v.toLowerCase()
  if (lower === 'true') return true
  if (lower === 'false') return false
  if (INT_RE.test(v)) { const n = Number(v); return Number.isSafeInteger(n) ? n : v }
  if (DEC_RE.test(v) && v.length <= 17) return Number(v)
  if ((v.startsWith('{') && v.endsWith('}')) || (v.startsWith('[') && v.endsWith(']'))) {
    try { return JSON.parse(v) as unknown } catch { return v }
  }
  if (DATETIME_RE.test(v)) {
    const t = Date.parse(v.replace(' ', 'T'))
    return Number.isNaN(t) ? v : new Date(t).toISOString()
  }
  return v
}

/** A cell as the column's type: '' stays '' (ignored), undefined when it does not fit. */
export function cellValue(cell: string, type: CellType): unknown {
  if (type === 'auto') return typedValue(cell)
  const v = cell.trim()
  if (v === '') return ''
  return convertValue(v, type)
}

function parseSubscribed(cell: string): boolean | undefined | null {
  const v = cell.trim().toLowerCase()
  if (v === '') return undefined
  if (['true', 'yes', 'y', '1'].includes(v)) return true
  if (['false', 'no', 'n', '0'].includes(v)) return false
  return null
}

// ---------------------------------------------------------------------------------------------------
// Upload and poll

/** The project's custom fields with their single type (auto when mixed), for the automatic mapping. */
export async function knownFields(ctx: Ctx): Promise<KnownField[]> {
  const kinds = await fieldsRepo.fieldKinds(ctx.store, ctx.projectId)
  const byName = new Map<string, Set<string>>()
  for (const k of kinds) {
    if (k.kind === 'null') continue
    const s = byName.get(k.key) ?? new Set<string>()
    s.add(k.kind)
    byName.set(k.key, s)
  }
  return [...byName].map(([name, types]) => ({ name, type: types.size === 1 ? [...types][0] : 'auto' }))
}

/** The `mapping` form field (JSON text), checked against the ImportMapping model: 422 naming `mapping...`. */
export function parseMapping(value: unknown): ColumnMap[] | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return undefined
  // The multipart parser hands JSON text over already parsed; the CLI and a hand-made form may send text.
  let raw: unknown = value
  if (typeof value === 'string') {
    try { raw = JSON.parse(value) } catch { throw invalidField('mapping', 'mapping: not valid JSON', 'invalid_json', value.slice(0, 100)) }
  }
  return parseInput(t.Object({ mapping: ImportMapping }), { mapping: raw }).mapping
}

/**
 * The complete mapping of `header`: every column named, `given` entries over the automatic ones. It is
 * what the job runs with, so a field created between the upload and the job does not change the import.
 */
export function fullMapping(header: string[], given: ColumnMap[] | undefined, known: KnownField[]): ColumnMap[] {
  const cols = mapHeader(header, given, known)
  const auto = suggestMapping(header, known)
  return header.map((_, index) => {
    const column = auto[index].column
    if (index === cols.email) return { column, to: 'email' as const }
    if (index === cols.subscribed) return { column, to: 'subscribed' as const }
    const f = cols.fields.find((x) => x.index === index)
    return f ? { column, to: 'field' as const, field: f.name, type: f.type } : { column, to: 'ignore' as const }
  })
}

/** POST /contacts/import: stores the file and queues its job (with its complete mapping) in one transaction. */
export async function queueImport(ctx: Ctx, file: { name: string; size: number; arrayBuffer(): Promise<ArrayBuffer> }, mapping?: ColumnMap[]) {
  if (file.size > MAX_IMPORT_BYTES) throw tooLarge(`The CSV file is ${file.size} bytes; imports are limited to 5 MB (${MAX_IMPORT_BYTES} bytes)`)
  if (!isStorableText(file.name)) throw invalidField('file', 'The file name contains a NUL character or a lone UTF-16 surrogate, which cannot be stored', 'invalid_text')
  const bytes = new Uint8Array(await file.arrayBuffer())
  const header = checkHeader(new TextDecoder().decode(bytes.subarray(0, Math.min(bytes.length, 64 * 1024))), mapping)
  const full = fullMapping(header, mapping, await knownFields(ctx))
  const id = Bun.randomUUIDv7()
  const jobId = await ctx.store.tx(async (db) => {
    await repo.insertImport(ctx.store, db, { id, projectId: ctx.projectId, filename: file.name || 'import.csv', size: bytes.length, content: bytes, createdAt: new Date() })
    return enqueue(ctx.store, IMPORT_JOB, { importId: id, mapping: full }, { wake: ctx.deps, now: ctx.deps.clock.date(), projectId: ctx.projectId, maxAttempts: 3 }, db)
  })
  if (!jobId) throw new Error(`the ${IMPORT_JOB} job was not queued`)
  return { jobId, status: 'queued' as const }
}

const PREVIEW_ROWS = 10
const PREVIEW_ERRORS = 100

/**
 * POST /contacts/import/preview (and `mailctl contacts import --dry-run`): the complete mapping of the
 * file's columns, its first rows, and every row that would fail under that mapping (a cell that does not
 * fit its column's type, a missing or invalid email, a bad subscribed value), counted before anything is
 * written. Nothing is stored.
 */
export async function previewImport(ctx: Ctx, text: string, mapping?: ColumnMap[]) {
  const records = parseCsv(text)
  const header = records[0]
  if (!header?.some((h) => h.trim())) throw invalidField('file', 'The CSV file is empty: it needs a header row with an "email" column', 'empty_file')
  const known = await knownFields(ctx)
  const full = fullMapping(header, mapping, known)
  const cols = mapHeader(header, full, known)
  const result: ImportResult = { created: 0, updated: 0, skipped: 0, failed: 0, errors: [] }
  const rows = readRows(records, cols, result)
  const existing = new Set(known.map((k) => k.name))
  const columns = full.map((m, index) => {
    let misfit = 0
    const f = cols.fields.find((x) => x.index === index)
    if (f && f.type !== 'auto') {
      for (let r = 1; r < records.length; r++) {
        const cell = records[r][index]
        if (cell !== undefined && cellValue(cell, f.type) === undefined) misfit++
      }
    }
    return { ...m, existing: m.to === 'field' && existing.has(m.field ?? ''), misfit }
  })
  return {
    columns,
    rows: records.slice(1).filter((r) => !(r.length === 1 && r[0].trim() === '')).slice(0, PREVIEW_ROWS),
    totalRows: rows.length + result.failed,
    errors: result.errors.slice(0, PREVIEW_ERRORS),
    failing: result.failed,
  }
}

/** The job record of docs/decisions.md (Job records) for an import or bulk job. */
export function jobRecord(job: JobRow, type: string) {
  const total = job.total
  const progress = job.status === 'completed' ? 100 : total > 0 ? Math.min(100, Math.floor((job.processed / total) * 100)) : 0
  return {
    id: job.id,
    type,
    status: job.status as 'queued' | 'running' | 'completed' | 'failed',
    progress,
    total,
    processed: job.processed,
    result: (job.result as ImportResult | null) ?? null,
    ...(job.status === 'failed' && job.lastError ? { error: job.lastError } : {}),
    createdAt: job.createdAt.toISOString(),
    finishedAt: job.finishedAt ? job.finishedAt.toISOString() : null,
  }
}

export async function getImportJob(ctx: Ctx, jobId: string) {
  const job = await getJob(ctx.store, ctx.projectId, jobId, [IMPORT_JOB])
  if (!job) throw notFound('import job')
  return jobRecord(job, 'import')
}

// ---------------------------------------------------------------------------------------------------
// The job

interface Parsed { row: number; input: UpsertInput }

/** Turns records into upsert inputs and per-row errors. */
export function readRows(records: string[][], cols: Columns, result: ImportResult): Parsed[] {
  const out: Parsed[] = []
  const fail = (row: number, message: string) => {
    result.failed++
    if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ row, message })
  }
  for (let r = 1; r < records.length; r++) {
    const rec = records[r]
    const row = r + 1
    if (rec.length === 1 && rec[0].trim() === '') continue // blank line
    const rawEmail = (rec[cols.email] ?? '').trim()
    if (!rawEmail) { fail(row, 'Missing email'); continue }
    if (!isEmail(rawEmail)) { fail(row, `Invalid email "${rawEmail.slice(0, 100)}"`); continue }
    let subscribed: boolean | undefined
    if (cols.subscribed >= 0) {
      const s = parseSubscribed(rec[cols.subscribed] ?? '')
      if (s === null) { fail(row, `Invalid subscribed value "${String(rec[cols.subscribed]).slice(0, 50)}": use true or false`); continue }
      subscribed = s
    }
    const data: ContactData = {}
    let bad: string | null = null
    for (const f of cols.fields) {
      const cell = rec[f.index]
      if (cell === undefined) continue
      const v = cellValue(cell, f.type)
      if (v === undefined) { bad = `Column ${f.name}: "${cell.trim().slice(0, 50)}" is not a ${f.type}`; break }
      data[f.name] = v
    }
    if (bad) { fail(row, bad); continue }
    // A JSON cell too deep or too big: this row fails, the others go on.
    try { checkDataLimits(data) } catch (err) {
      if (!isDataLimitError(err)) throw err
      fail(row, err.message)
      continue
    }
    out.push({ row, input: { email: normalizeEmail(rawEmail), subscribed, data, dataChecked: true } })
  }
  return out
}

interface Group { rows: number[]; input: UpsertInput }

/**
 * Rows of one email are merged in file order (a later non-empty cell wins, empty cells are ignored),
 * so the file applies as one upsert per email: importing it again finds nothing to change.
 */
function groupByEmail(rows: Parsed[]): Group[] {
  const byEmail = new Map<string, Group>()
  for (const p of rows) {
    const g = byEmail.get(p.input.email)
    if (!g) { byEmail.set(p.input.email, { rows: [p.row], input: p.input }); continue }
    g.rows.push(p.row)
    const data: ContactData = { ...(g.input.data ?? {}) }
    for (const [k, v] of Object.entries(p.input.data ?? {})) if (v !== '') data[k] = v
    g.input = { email: g.input.email, subscribed: p.input.subscribed ?? g.input.subscribed, data }
  }
  return [...byEmail.values()]
}

function batches(groups: Group[]): Group[][] {
  const out: Group[][] = []
  for (let i = 0; i < groups.length; i += BATCH) out.push(groups.slice(i, i + BATCH))
  return out
}

/**
 * One batch's upsert in a transaction of its own. A contact deleted by another writer between the batch's
 * insert and its read rolls the batch back whole: it runs again (and creates that contact anew) instead of
 * failing the import, whose earlier batches have committed.
 */
function writeBatch(ctx: Ctx, batch: Group[]) {
  return againIfVanished(ctx.store, () => ctx.store.tx((db) => upsertMany(ctx, db, batch.map((b) => b.input), { defaultSubscribed: true })))
}

/** Imports `text` into the project of `ctx`; `progress` is told after every committed batch. */
export async function importCsv(ctx: Ctx, text: string, progress: (processed: number, total: number) => Promise<void>, mapping?: ColumnMap[]): Promise<ImportResult> {
  const result: ImportResult = { created: 0, updated: 0, skipped: 0, failed: 0, errors: [] }
  const records = parseCsv(text)
  if (!records.length) return result
  const cols = mapHeader(records[0], mapping, mapping ? [] : await knownFields(ctx))
  const rows = readRows(records, cols, result)
  const total = rows.length + result.failed
  let processed = result.failed
  await progress(processed, total)
  let lastProgress = Date.now()
  for (const batch of batches(groupByEmail(rows))) {
    const { outcomes, refused, events } = await writeBatch(ctx, batch)
    outcomes.forEach((o, i) => {
      const n = batch[i].rows.length
      // The first row of an email creates, updates or leaves the contact; its later rows update it (or leave it).
      // Refused: the rows of this email, merged or with the contact's stored data, break a limit of data.
      if (o === 'refused') {
        result.failed += n
        for (const row of batch[i].rows) if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ row, message: refused[i] ?? 'data breaks a limit' })
      } else if (o === 'created') { result.created++; result.updated += n - 1 }
      else if (o === 'updated') result.updated += n
      else result.skipped += n
      processed += n
    })
    await notifyEvents(ctx, events)
    if (Date.now() - lastProgress >= PROGRESS_EVERY_MS || processed === total) {
      lastProgress = Date.now()
      await progress(processed, total)
    }
  }
  result.errors.sort((a, b) => a.row - b.row)
  return result
}

export const importJob = defineJob<{ importId: string; mapping?: ColumnMap[] }>({
  name: IMPORT_JOB,
  maxAttempts: 3,
  leaseMs: 120_000,
  async run(jc, payload) {
    const projectId = jc.job.projectId
    if (!projectId) throw new Error('import job without a project')
    const ctx = ctxFor(jc.deps, projectId, { kind: 'job', name: IMPORT_JOB })
    const upload = await repo.findImport(ctx.store, projectId, payload.importId)
    if (!upload) throw new Error(`upload ${payload.importId} not found`)
    try {
      const result = await importCsv(ctx, new TextDecoder().decode(upload.content), (processed, total) => jc.progress(processed, total), payload.mapping)
      await ctx.store.tx((db) => repo.deleteImport(ctx.store, db, projectId, upload.id))
      return { ...result }
    } catch (err) {
      if (jc.job.attempts >= jc.job.maxAttempts) await ctx.store.tx((db) => repo.deleteImport(ctx.store, db, projectId, upload.id))
      throw err
    }
  },
})
