/**
 * Counts the store forks of src/: the places where the code takes a different way on SQLite and on
 * PostgreSQL (issue 33 item 6: fewer forks, each with a reason and a parity test). `npm run dialect-forks`
 * prints the count in all, in src/db and outside it, per file, and each fork with its reason;
 * `--json` prints the same as JSON. test/dialect-forks.test.ts fails when a fork has no reason or when the
 * count is above CEILING below, so forks can only go down (lower CEILING when you remove one).
 *
 * A fork is, in a .ts file under src/ (read with TypeScript's parser, so comments and strings never count):
 * 1. a comparison (`===`, `!==`, `==`, `!=`) of an expression named `dialect` (`store.dialect`,
 *    `this.c.dialect`, a parameter `dialect`) with the literal 'pg' or 'sqlite';
 * 2. a `switch` on such an expression, or an element access keyed by it (`MIGRATIONS[store.dialect]`,
 *    a table with one entry per store);
 * 3. a read of `.singleWriter` (true exactly on SQLite), or a comparison of a store's `.file` (non-null
 *    only on a file-backed SQLite store; `store.file`, `this.store.file`) with null;
 * 4. each use of a name that holds the yes/no of a comparison or a trait of 1 and 3 (`const pg =
 *    store.dialect === 'pg'` then `if (pg)`, a getter `get pg() { return ... }` then `this.pg`): the
 *    binding itself is not counted, its uses are (a table's entry bound to a name is a value: it counts once);
 * 5. a pair of twin functions: two functions of one folder whose names are the same once `Pg`/`PG`/`pg`
 *    and `Sqlite`/`SQLITE`/`sqlite` are taken out, one with each (`buildPg` and `buildSqlite`). The pair
 *    counts once, at the first of them in path order.
 * Not forks: a dialect carried as data (`dialect: store.dialect` in a manifest), values that one store
 * answers with null by contract (`dataVersion()`), and the two schema files (src/db/schema/), which
 * declare the same tables in each store's types.
 *
 * A fork's reason is a comment on the line right before the fork's line, `// dialect: <reason>` (for a
 * twin pair, the line before the first twin's declaration). One comment covers every fork of its line.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'

const ROOT = join(import.meta.dir, '..')

/** The most forks src/ may hold. Lower it when forks go; it must never be raised. */
export const CEILING = 85

export interface Fork {
  /** Repository-relative path. */
  file: string
  /** 1-based line of the fork. */
  line: number
  kind: 'compare' | 'switch' | 'table' | 'trait' | 'alias' | 'twin'
  /** The fork's source text, on one line. */
  text: string
  /** The text after `// dialect:` on the line before, or null when there is none. */
  reason: string | null
}

const REASON = /^\s*\/\/\s*dialect:\s*(\S.*?)\s*$/
const STORE_LITERALS = new Set(['pg', 'sqlite'])
const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsToken,
])

function isDialectExpr(e: ts.Expression): boolean {
  const x = skipParens(e)
  return (ts.isIdentifier(x) && x.text === 'dialect') || (ts.isPropertyAccessExpression(x) && x.name.text === 'dialect')
}

function isStoreLiteral(e: ts.Expression): boolean {
  const x = skipParens(e)
  return ts.isStringLiteralLike(x) && STORE_LITERALS.has(x.text)
}

function isNull(e: ts.Expression): boolean {
  return skipParens(e).kind === ts.SyntaxKind.NullKeyword
}

/** `store.file`, `this.store.file`, `deps.store.file`: the file of a Store. */
function isStoreFile(e: ts.Expression): boolean {
  const x = skipParens(e)
  if (!ts.isPropertyAccessExpression(x) || x.name.text !== 'file') return false
  const obj = x.expression
  return (ts.isIdentifier(obj) && obj.text === 'store') || (ts.isPropertyAccessExpression(obj) && obj.name.text === 'store')
}

function skipParens(e: ts.Expression): ts.Expression {
  let x = e
  while (ts.isParenthesizedExpression(x)) x = x.expression
  return x
}

/** The kind of fork `node` is by rules 1-3, or null. */
function forkKind(node: ts.Node): Fork['kind'] | null {
  if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
    const { left, right } = node
    if ((isDialectExpr(left) && isStoreLiteral(right)) || (isDialectExpr(right) && isStoreLiteral(left))) return 'compare'
    if ((isStoreFile(left) && isNull(right)) || (isStoreFile(right) && isNull(left))) return 'trait'
  }
  if (ts.isSwitchStatement(node) && isDialectExpr(node.expression)) return 'switch'
  if (ts.isElementAccessExpression(node) && isDialectExpr(node.argumentExpression)) return 'table'
  if (ts.isPropertyAccessExpression(node) && node.name.text === 'singleWriter' && !isDeclaration(node)) return 'trait'
  return null
}

/** An object literal's `singleWriter: true` is a property assignment, not a property access: never a fork. */
function isDeclaration(node: ts.PropertyAccessExpression): boolean {
  const p = node.parent
  return ts.isBinaryExpression(p) && p.left === node && p.operatorToken.kind === ts.SyntaxKind.EqualsToken
}

/** The name a fork's value is bound to (rule 4): a const's name or a getter's, else null. */
function boundName(node: ts.Node): { name: string; getter: boolean } | null {
  let x: ts.Node = node
  while (ts.isParenthesizedExpression(x.parent)) x = x.parent
  const p = x.parent
  if (ts.isVariableDeclaration(p) && p.initializer === x && ts.isIdentifier(p.name)) return { name: p.name.text, getter: false }
  if (ts.isReturnStatement(p) && ts.isBlock(p.parent) && ts.isGetAccessorDeclaration(p.parent.parent) && p.parent.statements.length === 1) {
    const g = p.parent.parent
    if (ts.isIdentifier(g.name)) return { name: g.name.text, getter: true }
  }
  return null
}

const TWIN_TOKEN = /(Sqlite|SQLITE|sqlite|Pg|PG|pg)(?=[A-Z_]|$)/g

/** The name a twin shares with its other half, and which store its own half names, or null. */
function twinKey(name: string): { key: string; store: 'pg' | 'sqlite' } | null {
  const tokens = [...name.matchAll(TWIN_TOKEN)].map((m) => (m[1] as string).toLowerCase())
  if (tokens.length !== 1) return null
  return { key: name.replace(TWIN_TOKEN, '*'), store: tokens[0] as 'pg' | 'sqlite' }
}

interface FunctionDecl { file: string; dir: string; name: string; line: number; text: string }

/** Named functions of a file: declarations and `const name = (...) =>` / `function` expressions. */
function functionsOf(file: string, sf: ts.SourceFile): FunctionDecl[] {
  const out: FunctionDecl[] = []
  const add = (name: string, node: ts.Node) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1
    out.push({ file, dir: file.slice(0, file.lastIndexOf('/')), name, line, text: oneLine(sf, node) })
  }
  const visit = (node: ts.Node) => {
    if (ts.isFunctionDeclaration(node) && node.name) add(node.name.text, node)
    if (ts.isVariableStatement(node)) {
      for (const d of node.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.initializer && (ts.isArrowFunction(d.initializer) || ts.isFunctionExpression(d.initializer))) add(d.name.text, node)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return out
}

function oneLine(sf: ts.SourceFile, node: ts.Node): string {
  const text = node.getText(sf).replace(/\s+/g, ' ')
  return text.length > 100 ? `${text.slice(0, 97)}...` : text
}

function reasonAt(lines: string[], line: number): string | null {
  const m = REASON.exec(lines[line - 2] ?? '')
  return m ? (m[1] as string) : null
}

/** The forks of one file's text (rules 1-4; twins need the whole tree, see forksIn). */
export function forksOfText(file: string, text: string): { forks: Fork[]; functions: FunctionDecl[] } {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const lines = text.split('\n')
  const forks: Fork[] = []
  const aliases: Array<{ name: string; getter: boolean }> = []
  const at = (node: ts.Node, kind: Fork['kind']) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1
    forks.push({ file, line, kind, text: oneLine(sf, node), reason: reasonAt(lines, line) })
  }
  const visit = (node: ts.Node) => {
    const kind = forkKind(node)
    if (kind) {
      // Only a yes/no (which store, which trait) is a branch at each use; a table's entry is a value.
      const bound = kind === 'compare' || kind === 'trait' ? boundName(node) : null
      if (bound) aliases.push(bound)
      else at(node, kind)
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  if (aliases.length) {
    const uses = (node: ts.Node) => {
      for (const a of aliases) {
        if (a.getter && ts.isPropertyAccessExpression(node) && node.expression.kind === ts.SyntaxKind.ThisKeyword && node.name.text === a.name) at(node, 'alias')
        if (!a.getter && ts.isIdentifier(node) && node.text === a.name && isUse(node)) at(node, 'alias')
      }
      ts.forEachChild(node, uses)
    }
    uses(sf)
  }
  return { forks, functions: functionsOf(file, sf) }
}

/** An identifier that reads a variable: not a declared name (`const pg`, `get pg()`, `{ pg: 1 }`) nor a member (`x.pg`). */
function isUse(node: ts.Identifier): boolean {
  const p = node.parent
  if (ts.isShorthandPropertyAssignment(p)) return true
  if (ts.isPropertyAccessExpression(p)) return p.expression === node
  return (p as ts.Node & { name?: ts.Node }).name !== node
}

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name)
    if (e.isDirectory()) out.push(...sourceFiles(path))
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** Every fork of the .ts files under `root`/src (src/db/schema left out), in path and line order. */
export function forksIn(root = ROOT): Fork[] {
  const forks: Fork[] = []
  const functions: FunctionDecl[] = []
  const texts = new Map<string, string[]>()
  for (const path of sourceFiles(join(root, 'src')).sort()) {
    const file = relative(root, path)
    if (file.startsWith('src/db/schema/')) continue
    const text = readFileSync(path, 'utf8')
    texts.set(file, text.split('\n'))
    const found = forksOfText(file, text)
    forks.push(...found.forks)
    functions.push(...found.functions)
  }
  const byKey = new Map<string, FunctionDecl[]>()
  for (const f of functions) {
    const t = twinKey(f.name)
    if (!t) continue
    const key = `${f.dir}\0${t.key}`
    byKey.set(key, [...(byKey.get(key) ?? []), f])
  }
  for (const group of byKey.values()) {
    const stores = new Set(group.map((f) => twinKey(f.name)?.store))
    if (stores.size < 2) continue
    const first = group[0] as FunctionDecl
    const lines = texts.get(first.file) ?? []
    forks.push({ file: first.file, line: first.line, kind: 'twin', text: group.map((f) => `${f.name} (${f.file}:${f.line})`).join(' / '), reason: reasonAt(lines, first.line) })
  }
  return forks.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line))
}

export function summary(forks: Fork[]) {
  const perFile = new Map<string, number>()
  for (const f of forks) perFile.set(f.file, (perFile.get(f.file) ?? 0) + 1)
  const inDb = forks.filter((f) => f.file.startsWith('src/db/')).length
  return { total: forks.length, files: perFile.size, inDb, outsideDb: forks.length - inDb, perFile: Object.fromEntries(perFile) }
}

if (import.meta.main) {
  const forks = forksIn()
  const s = summary(forks)
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify({ ...s, ceiling: CEILING, forks }, null, 2))
  } else {
    console.log(`${s.total} store forks in ${s.files} files: ${s.inDb} in src/db, ${s.outsideDb} outside (ceiling ${CEILING})`)
    for (const [file, n] of Object.entries(s.perFile)) {
      console.log(`\n${file}: ${n}`)
      for (const f of forks.filter((x) => x.file === file)) console.log(`  ${f.line} ${f.kind}: ${f.text}\n      reason: ${f.reason ?? 'NONE'}`)
    }
  }
  const missing = forks.filter((f) => f.reason === null).length
  if (missing || s.total > CEILING) {
    if (missing) console.error(`${missing} forks have no \`// dialect: <reason>\` on the line before`)
    if (s.total > CEILING) console.error(`${s.total} forks, above the ceiling of ${CEILING}`)
    process.exit(1)
  }
}
