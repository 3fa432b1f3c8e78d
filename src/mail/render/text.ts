/**
 * The plain-text alternative, derived from the HTML body. For speed the conversion is done once per
 * template, on the template source (each Handlebars construct held by a mark), yielding a text template
 * rendered with the same variables; breaks that meet a block tag and links to a variable URL are settled
 * after rendering. A property test checks that this equals converting the rendered HTML. When the source
 * defeats it (raw `{{{html}}}`, `~` whitespace control, <pre>, a link whose label depends on a block),
 * deriveTextTemplate returns null and the rendered HTML is converted instead, on every render.
 */
import { convertHtml, type Marked } from './html-to-text'
import { MARK_CHARS, MARK_OUTPUT, MARK_RE, MARK_SILENT, LINK_CLOSE, LINK_OPEN } from './marks'
import { parse, TEXT_COMPILE_OPTIONS, toRenderFn, walk, type Program, type RenderFn, type TemplateVars } from './sandbox'

/** The text alternative as a template; `foldBreaks`: its output still carries break sentinels. */
export interface DerivedText { render: RenderFn; foldBreaks: boolean; links: boolean }

/** Offsets of the start of each line (Handlebars locations are line 1-based, column 0-based). */
function lineStarts(source: string): number[] {
  const starts = [0]
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) starts.push(i + 1)
  return starts
}

/** The block structure of a template: it must survive the conversion for the text template to be used. */
function skeleton(ast: Program): string {
  let out = ''
  const visit = (p: Program | undefined) => {
    for (const s of p?.body ?? []) {
      if (s.type !== 'BlockStatement') continue
      const b = s as hbs.AST.BlockStatement
      out += `<${(b.path as hbs.AST.PathExpression).original ?? ''}`
      visit(b.program)
      out += '|'
      visit(b.inverse)
      out += '>'
    }
  }
  visit(ast)
  return out
}

/**
 * The text alternative, as a template: each Handlebars construct is replaced by a placeholder, the HTML
 * is converted, and the constructs are put back. Null when that would not be faithful; the caller then
 * converts each rendered HTML instead.
 */
export function deriveTextTemplate(source: string, ast: Program): DerivedText | null {
  // The source itself must not contain the private-use characters that mark constructs.
  if (MARK_CHARS.test(source)) return null
  let raw = false
  const contents: Array<{ start: number; end: number; value: string }> = []
  const outputs: Array<{ start: number; end: number }> = []
  const starts = lineStarts(source)
  const offset = (p: hbs.AST.Position) => starts[p.line - 1] + p.column
  let faithful = true
  walk(ast, (n) => {
    if (n.type === 'MustacheStatement') {
      if (!(n as hbs.AST.MustacheStatement).escaped) raw = true
      outputs.push({ start: offset(n.loc.start), end: offset(n.loc.end) })
    }
    if (n.type === 'ContentStatement') {
      const c = n as hbs.AST.ContentStatement
      const start = offset(c.loc.start)
      const end = offset(c.loc.end)
      // The typings call `original` StripFlags; at run time it is the raw source text.
      const original: unknown = c.original
      if (source.slice(start, end) !== original) faithful = false
      contents.push({ start, end, value: c.value })
    }
  })
  if (raw || !faithful) return null
  contents.sort((a, b) => a.start - b.start)
  const gaps: string[] = []
  let marked = ''
  let pos = 0
  outputs.sort((a, b) => a.start - b.start)
  let next = 0 // outputs before `pos` are consumed: gaps come in source order
  const mark = ([open, close]: readonly [string, string], from: number, to: number) => {
    if (to <= from) return
    marked += `${open}${gaps.length}${close}`
    gaps.push(source.slice(from, to))
  }
  // The source between two contents: output mustaches each get an output mark, the block tags and
  // comments around them silent marks.
  const gap = (end: number) => {
    let at = pos
    while (next < outputs.length && outputs[next].start < at) next++
    while (next < outputs.length && outputs[next].start < end) {
      mark(MARK_SILENT, at, outputs[next].start)
      mark(MARK_OUTPUT, outputs[next].start, outputs[next].end)
      at = outputs[next].end
      next++
    }
    mark(MARK_SILENT, at, end)
  }
  for (const c of contents) {
    gap(c.start)
    // The content as Handlebars outputs it (standalone block lines and `~` already stripped).
    marked += c.value
    pos = c.end
  }
  gap(source.length)
  // Whitespace control (`{{~x}}`) would strip the line breaks the conversion put next to a construct;
  // <pre> keeps whitespace that the render-time tidy would fold.
  if (gaps.some((g) => /\{~|~\}/.test(g)) || /<pre[\s>]/i.test(source)) return null
  const state: Marked = { gaps, unfaithful: false, linkMarks: false }
  let converted = convertHtml(marked, state).text
  if (state.unfaithful) return null
  // Braces or backslashes produced by the conversion (decoded entities, escaped mustaches) would be
  // read as Handlebars syntax in the text template.
  if (/[{}\\]/.test(converted)) return null
  // Without block tags or comments nothing can come between two breaks at render time: fold them now.
  const blocks = converted.indexOf(MARK_SILENT[0]) !== -1
  if (!blocks) converted = foldBreaks(converted)
  const textSource = converted.replace(MARK_RE, (_, i: string) => gaps[Number(i)])
  try {
    const textAst = parse(textSource)
    if (skeleton(textAst) !== skeleton(ast)) return null
    return { render: toRenderFn(textAst, TEXT_COMPILE_OPTIONS), foldBreaks: blocks, links: state.linkMarks }
  } catch {
    return null
  }
}

/** The text alternative of one message, from the derived template and the message's variables. */
export function renderDerivedText(derived: DerivedText, vars: TemplateVars): string {
  let text = derived.render(vars)
  if (derived.foldBreaks) text = foldBreaks(text)
  if (derived.links) text = settleLinks(text)
  return tidyDerived(text)
}

/**
 * The derived text template is tidy; only values (or empty ones, or block branches) can leave doubled
 * spaces, spaces at line ends or starts, or extra blank lines. Cheap scans first: usually nothing to do.
 * (Bodies with <pre> never take the derived path, so collapsing spaces is always right here.)
 */
function tidyDerived(s: string): string {
  if (s.indexOf('  ') === -1 && s.indexOf(' \n') === -1 && s.indexOf('\n ') === -1 && s.indexOf('\n\n\n') === -1 && s.indexOf('\t') === -1) return s.trim()
  return s.replace(/[ \t]{2,}/g, ' ').replace(/ ?\n ?/g, '\n').replace(/\n{3,}/g, '\n\n').trim()
}

/** A variable link target renders as " [url]" like a static one, and as nothing when it is empty. */
function settleLinks(s: string): string {
  let i = s.indexOf(LINK_OPEN)
  if (i === -1) return s
  let out = ''
  let last = 0
  while (i !== -1) {
    const j = s.indexOf(LINK_CLOSE, i)
    if (j === -1) break
    // Between the marks: " [" + url + "]"
    const url = s.slice(i + 3, j - 1).trim()
    out += s.slice(last, i)
    if (url && !url.startsWith('#') && !/^javascript:/i.test(url)) out += ` [${url.replace(/^mailto:/i, '')}]`
    last = j + 1
    i = s.indexOf(LINK_OPEN, last)
  }
  return out + s.slice(last)
}

/**
 * Settles each run of break sentinels (with the spaces and newlines around them) the way the direct
 * conversion does: consecutive breaks count once at their largest, a newline from <br> adds one, and
 * at most one blank line results. One pass: a regular expression for the runs re-scanned a long run of
 * blanks without a sentinel (a value of spaces) from each of its positions.
 */
function foldBreaks(s: string): string {
  let out = ''
  let last = 0
  const len = s.length
  let i = 0
  while (i < len) {
    const c = s.charCodeAt(i)
    if (!(c === 32 || c === 9 || c === 10 || (c >= 1 && c <= 3))) { i++; continue }
    const start = i
    let sentinel = false
    let lines = 0
    let group = 0
    for (; i < len; i++) {
      const k = s.charCodeAt(i)
      if (k === 1) { sentinel = true; if (group < 1) group = 1 } else if (k === 2) { sentinel = true; group = 2 } else if (k === 3) { sentinel = true; lines += group + 1; group = 0 } else if (k === 10) { lines += group + 1; group = 0 } else if (k !== 32 && k !== 9) break
    }
    if (!sentinel) continue
    lines += group
    out += s.slice(last, start) + (lines >= 2 ? '\n\n' : '\n')
    last = i
  }
  return last === 0 ? s : out + s.slice(last)
}
