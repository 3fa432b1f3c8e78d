/**
 * The store forks of src/ (scripts/dialect-forks.ts, issue 33 item 6): each has its one-line reason, and
 * their count is the committed ceiling, which may only go down. The counter itself is tested on small
 * texts, so that a counter that stopped seeing forks cannot pass for a code base without them.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CEILING, forksIn, forksOfText, summary } from '../scripts/dialect-forks'

describe('the forks of src/', () => {
  const forks = forksIn()

  test('every fork has a `// dialect: <reason>` on the line before', () => {
    const missing = forks.filter((f) => f.reason === null).map((f) => `${f.file}:${f.line} ${f.text}`)
    expect(missing).toEqual([])
  })

  test('the count is the ceiling: above it fails, and below it the ceiling is lowered to the count', () => {
    const { total } = summary(forks)
    if (total < CEILING) throw new Error(`${total} forks, below the ceiling: lower CEILING in scripts/dialect-forks.ts to ${total}`)
    expect(total).toBe(CEILING)
  })
})

describe('what counts as a fork', () => {
  const kinds = (text: string) => forksOfText('src/x.ts', text).forks.map((f) => `${f.line} ${f.kind}`)

  test('a comparison of a dialect with a store literal, either way round, in if, ternary or &&', () => {
    expect(kinds([
      "if (store.dialect === 'sqlite') a()",
      "const x = 'pg' !== this.c.dialect ? 1 : 2",
      "f(dialect == 'pg' && y)",
      "if (store.dialect === other.dialect) a()",
      "const s = 'pg'",
    ].join('\n'))).toEqual(['1 compare', '2 compare', '3 compare'])
  })

  test('a switch on a dialect, a table keyed by one, the single-writer trait and a store file compared with null', () => {
    expect(kinds([
      'switch (store.dialect) { default: }',
      'const m = MIGRATIONS[store.dialect]',
      'const lanes = ctx.store.singleWriter ? 1 : 2',
      'const f = store.file === null ? null : store.file',
      'const g = upload.file === null',
    ].join('\n'))).toEqual(['1 switch', '2 table', '3 trait', '4 trait'])
  })

  test('a name bound to a fork counts at each use, not where it is bound', () => {
    expect(kinds([
      "const pg = store.dialect === 'pg'",
      'if (pg) a()',
      'const y = pg ? 1 : 2',
      'class C {',
      "  get pg() { return this.c.dialect === 'pg' }",
      '  f() { return this.pg ? 1 : 2 }',
      '}',
    ].join('\n'))).toEqual(['2 alias', '3 alias', '6 alias'])
  })

  test('comments, strings and templates are not code', () => {
    expect(kinds([
      "// if (store.dialect === 'pg')",
      "/* store.dialect === 'sqlite' */",
      "const s = \"store.dialect === 'pg'\"",
      `const t = \`store.singleWriter \${1}\``,
    ].join('\n'))).toEqual([])
  })

  test('the reason is the `// dialect:` comment right on the line before, one per line', () => {
    const { forks } = forksOfText('src/x.ts', [
      '  // dialect: SQLite has one writer',
      "  if (store.dialect === 'sqlite') a()",
      '  // an ordinary comment',
      "  if (store.dialect === 'pg') b()",
      '  // dialect:',
      "  if (store.dialect === 'pg') c()",
    ].join('\n'))
    expect(forks.map((f) => f.reason)).toEqual(['SQLite has one writer', null, null])
  })

  const dirs: string[] = []
  afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })

  test('twin functions of one folder count once, at the first of them; src/db/schema is left out', () => {
    const root = mkdtempSync(join(tmpdir(), 'mailctl-forks-'))
    dirs.push(root)
    mkdirSync(join(root, 'src/search'), { recursive: true })
    mkdirSync(join(root, 'src/other'), { recursive: true })
    mkdirSync(join(root, 'src/db/schema'), { recursive: true })
    writeFileSync(join(root, 'src/search/pg.ts'), 'export function buildPg() {}\nexport const catchUpPg = () => 1\n')
    writeFileSync(join(root, 'src/search/sqlite.ts'), '// dialect: two catch-ups\nexport function buildSqlite() {}\nexport function catchUpSqlite() {}\nexport function pgnothing() {}\n')
    writeFileSync(join(root, 'src/other/a.ts'), 'export function buildPg() {}\n')
    writeFileSync(join(root, 'src/db/schema/pg.ts'), "export const x = (d: string) => d === 'pg' ? (store.dialect === 'pg') : 0\n")
    const found = forksIn(root)
    expect(found.map((f) => `${f.file}:${f.line} ${f.kind} ${f.reason}`)).toEqual([
      'src/search/pg.ts:1 twin null',
      'src/search/pg.ts:2 twin null',
    ])
    expect(found[0]?.text).toBe('buildPg (src/search/pg.ts:1) / buildSqlite (src/search/sqlite.ts:2)')
    expect(summary(found)).toEqual({ total: 2, files: 1, inDb: 0, outsideDb: 2, perFile: { 'src/search/pg.ts': 2 } })
  })
})
