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

/** `mailctl contacts import PROJECT FILE.csv` and `mailctl contacts export PROJECT` (PROJECT: id or name). */
export function register(program: Command): void {
  const contacts = program.command('contacts').description('contacts: CSV import and export')
  contacts.command('import')
    .description('import a CSV file (header row with an email column; subscribed optional; other columns become custom fields). Runs in this process, without the 5 MB limit of the API; a progress bar is shown on a terminal; exits 1 when some rows were not imported')
    .argument('[project]', 'project id or name')
    .argument('[file]', 'CSV file')
    .action(async (projectArg: string | undefined, fileArg: string | undefined, _opts: unknown, cmd: Command) => {
      const ref = await need(projectArg, { flag: 'PROJECT', message: 'Project id or name' })
      const path = await need(fileArg, { flag: 'FILE', message: 'CSV file' })
      const file = Bun.file(path)
      if (!(await file.exists())) throw new UsageError(`no such file: ${path}`)
      const text = await file.text()
      const bar = progressBar(process.stderr)
      const { importCsv } = await import('../../src/modules/contacts/import')
      const result = await withDeps(cmd, async (deps) => {
        const ctx = await cliCtx(deps, ref)
        try {
          return await importCsv(ctx, text, async (done, total) => bar.update(done, total))
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
