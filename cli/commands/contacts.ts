import type { Command } from 'commander'
import { ctxFor, type Deps } from '../../src/deps'
import type { ImportResult } from '../../src/modules/contacts/import'
import { emit, need, UsageError, withDeps } from '../shared'

async function cliCtx(deps: Deps, projectRef: string) {
  const { findProject } = await import('../../src/modules/projects/service')
  const project = await findProject(deps.store, projectRef)
  return ctxFor(deps, project.id, { kind: 'cli' })
}

/** A one-line progress bar on stderr when it is a terminal; nothing otherwise. */
export function progressBar(stream: { isTTY?: boolean; write(s: string): unknown; columns?: number }) {
  let last = -1
  return {
    update(done: number, total: number) {
      if (!stream.isTTY || total <= 0) return
      const pct = Math.floor((done / total) * 100)
      if (pct === last && done !== total) return
      last = pct
      const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - 40))
      const filled = Math.round((width * done) / total)
      stream.write(`\r[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${String(pct).padStart(3)}%  ${done.toLocaleString('en')}/${total.toLocaleString('en')} rows`)
    },
    end() { if (stream.isTTY && last >= 0) stream.write('\n') },
  }
}

function summary(file: string, r: ImportResult): string {
  const lines = [
    `imported   ${file}`,
    `created    ${r.created}`,
    `updated    ${r.updated}`,
    `unchanged  ${r.skipped}`,
    `failed     ${r.failed}`,
  ]
  if (r.errors.length) {
    lines.push('', 'rows not imported (row 1 is the header):')
    for (const e of r.errors.slice(0, 50)) lines.push(`  row ${e.row}: ${e.message}`)
    if (r.failed > 50) lines.push(`  ... and ${r.failed - 50} more (use --json for the first 1,000)`)
  }
  return lines.join('\n')
}

/** One --map flag as a mapping entry (checked with the API's ImportMapping model afterwards). */
export function parseMapFlag(flag: string): Record<string, string> {
  const at = flag.lastIndexOf('=')
  if (at <= 0) throw new UsageError(`--map ${flag}: use COLUMN=email, COLUMN=subscribed, COLUMN=- or COLUMN=FIELD[:TYPE]`)
  const column = flag.slice(0, at)
  const target = flag.slice(at + 1).trim()
  if (target === 'email' || target === 'subscribed') return { column, to: target }
  if (target === '-' || target === '') return { column, to: 'ignore' }
  const colon = target.lastIndexOf(':')
  if (colon > 0) return { column, to: 'field', field: target.slice(0, colon), type: target.slice(colon + 1) }
  return { column, to: 'field', field: target }
}

async function readMappingFile(path: string): Promise<unknown[]> {
  const f = Bun.file(path)
  if (!(await f.exists())) throw new UsageError(`no such file: ${path}`)
  let v: unknown
  try { v = JSON.parse(await f.text()) } catch { throw new UsageError(`--mapping ${path}: not valid JSON`) }
  if (!Array.isArray(v)) throw new UsageError(`--mapping ${path}: expected a JSON array of column mappings`)
  return v
}

interface PreviewOut {
  columns: Array<{ column: string; to: string; field?: string; type?: string; existing: boolean; misfit: number }>
  totalRows: number
  failing: number
  errors: Array<{ row: number; message: string }>
}

function previewText(file: string, p: PreviewOut): string {
  const lines = [`preview    ${file} (${p.totalRows} rows, ${p.failing} would fail; nothing written)`, '', 'columns:']
  for (const c of p.columns) {
    const target = c.to === 'field' ? `${c.existing ? 'field' : 'new field'} ${c.field} (${c.type ?? 'auto'})` : c.to
    lines.push(`  ${c.column.padEnd(24)} -> ${target}${c.misfit ? `, ${c.misfit} values do not fit` : ''}`)
  }
  if (p.errors.length) {
    lines.push('', 'rows that would fail (row 1 is the header):')
    for (const e of p.errors.slice(0, 50)) lines.push(`  row ${e.row}: ${e.message}`)
  }
  return lines.join('\n')
}

/** `mailctl contacts import PROJECT FILE.csv` and `mailctl contacts export PROJECT` (PROJECT: id or name). */
export function register(program: Command): void {
  const contacts = program.command('contacts').description('contacts: CSV import and export')
  contacts.command('import')
    .description('import a CSV file (an email column; subscribed optional; other columns go to the custom field their header matches case- and space-insensitively, else a new one). Runs in this process, without the 5 MB limit of the API; a progress bar is shown on a terminal; exits 1 when some rows were not imported')
    .argument('[project]', 'project id or name')
    .argument('[file]', 'CSV file')
    .option('--map <column=target>', 'map a column: COLUMN=email, COLUMN=subscribed, COLUMN=- (ignore), COLUMN=FIELD or COLUMN=FIELD:TYPE (TYPE auto, string, number, boolean or date); repeatable', (v: string, all: string[]) => [...all, v], [] as string[])
    .option('--mapping <file.json>', 'the mapping as JSON, as the API takes it: [{column, to: email|subscribed|field|ignore, field?, type?}]')
    .option('--dry-run', 'only show the mapping of every column and the rows that would fail; nothing is written')
    .action(async (projectArg: string | undefined, fileArg: string | undefined, opts: { map: string[]; mapping?: string; dryRun?: boolean }, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const path = await need(fileArg, { flag: 'FILE', message: 'CSV file' })
      const file = Bun.file(path)
      if (!(await file.exists())) throw new UsageError(`no such file: ${path}`)
      const text = await file.text()
      const given = [...(opts.mapping ? await readMappingFile(opts.mapping) : []), ...opts.map.map(parseMapFlag)]
      const bar = progressBar(process.stderr)
      const { fullMapping, importCsv, knownFields, parseMapping, previewImport } = await import('../../src/modules/contacts/import')
      const mapping = parseMapping(given.length ? given : undefined)
      if (opts.dryRun) {
        const preview = await withDeps(cmd, async (deps) => previewImport(await cliCtx(deps, ref), text, mapping))
        emit(cmd, preview, () => previewText(path, preview))
        if (preview.failing) process.exitCode = 1
        return
      }
      const result = await withDeps(cmd, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        // The same complete mapping the API's job runs with (automatic for the columns not named).
        const header = (await import('papaparse')).default.parse<string[]>(text.replace(/^\uFEFF/, ''), { preview: 1 }).data[0] ?? []
        const full = header.length ? fullMapping(header, mapping, await knownFields(ctx)) : undefined
        try {
          return await importCsv(ctx, text, async (done, total) => bar.update(done, total), full)
        } finally { bar.end() }
      })
      emit(cmd, result, () => summary(path, result))
      if (result.failed) process.exitCode = 1
    })
  contacts.command('export')
    .description('write every contact of PROJECT as CSV to stdout (id, email, subscribed, createdAt, updatedAt, one column per custom field); `contacts import` reads it back')
    .argument('[project]', 'project id or name')
    .action(async (projectArg: string | undefined, _opts: unknown, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const { exportCsv } = await import('../../src/modules/contacts/export')
      await withDeps(cmd, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        for await (const chunk of exportCsv(ctx)) {
          if (!process.stdout.write(chunk)) await new Promise<void>((r) => process.stdout.once('drain', () => r()))
        }
      })
    })
}
