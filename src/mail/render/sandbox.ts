/**
 * The Handlebars sandbox: the isolated environment, the restrictions checked when a template is
 * compiled, and the compilation of a parsed template into a render function.
 *
 * - `{{variable}}`, nested paths (`{{company.name}}`), and the built-in block helpers `if`, `unless`,
 *   `each`, `with`, `lookup` only. `log`, custom helpers, partials and decorators are refused when the
 *   template is compiled (a 422 at save time).
 * - Bodies are HTML: every `{{value}}` is HTML-escaped (`{{{value}}}` is the explicit, author-chosen way
 *   to insert raw HTML). Subjects are text: not escaped.
 * - A missing variable renders empty. Prototype properties and methods are never reachable.
 * - Fallbacks: Plunk's Liquid-style `{{ name | default: "there" }}` (or 'there') renders the
 *   literal when the value is missing, null, false, 0, or an empty string or list, as LiquidJS's `default`
 *   does with Plunk's `jsTruthy`. `parse` rewrites it, in place and at the same length, to a call of the
 *   internal helper FALLBACK, so positions in the source stay those of the tree.
 */
import Handlebars from 'handlebars'

export type TemplateKind = 'html' | 'text' | 'markdown'
export type TemplateVars = Record<string, unknown>
export type RenderFn = (vars: TemplateVars) => string

/** A template source that Handlebars (or mailctl's restrictions) refuses. */
export class TemplateSyntaxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TemplateSyntaxError'
  }
}

/**
 * The budgets of one render. A template is tenant code run with tenant data: without a
 * bound, three nested `{{#each}}` over 200 keys took 10.6 s of the thread that serves HTTP.
 *
 * - work: every iteration of an `{{#each}}` costs 1 plus the number of statements its block holds
 *   (text, `{{value}}`s, inner blocks); a render may spend RENDER_MAX_WORK (about 0.1 s of CPU at most).
 * - output: a rendered body (HTML, its text alternative, a Markdown body's HTML) is at most
 *   RENDER_MAX_OUTPUT characters, a subject SUBJECT_MAX_OUTPUT; checked while `each` accumulates, so the
 *   memory of a render is bounded too.
 * - subjects may not use `{{#each}}` (they are rendered on the main thread, once per campaign recipient).
 * - Markdown: containers (block quotes, list items) nested deeper than MARKDOWN_MAX_DEPTH on a line are
 *   refused before the parser sees them (it recurses per level: 200,000 levels overflowed its stack), and a
 *   Markdown render runs off the main thread with a deadline (pool.ts): RENDER_TIMEOUT_MS of the render
 *   thread's own CPU time (on Linux; elsewhere of wall-clock time), and RENDER_WALL_MAX_MS of wall-clock
 *   time whatever the CPU: the parser is superlinear on some inputs ("_a" x 300,000 took about 270 s).
 */
export const RENDER_MAX_WORK = 200_000
export const RENDER_MAX_OUTPUT = 2_000_000
export const SUBJECT_MAX_OUTPUT = 16_384
export const MARKDOWN_MAX_DEPTH = 32
export const RENDER_TIMEOUT_MS = 2_000
export const RENDER_WALL_MAX_MS = 20_000

export type RenderLimit = 'work' | 'output' | 'time' | 'depth'

/** A render that exceeds one of its budgets; `limit` names it, the message says it in words. */
export class RenderLimitError extends Error {
  /** The part of the message whose render exceeded it, once known (renderEmail sets it). */
  part: 'subject' | 'body' | null = null
  constructor(readonly limit: RenderLimit, message: string) {
    super(message)
    this.name = 'RenderLimitError'
  }
}

export function workLimitError(): RenderLimitError {
  return new RenderLimitError('work', `rendering needs more than ${RENDER_MAX_WORK.toLocaleString('en-US')} steps (the work budget of a render: {{#each}} iterations times the size of their blocks)`)
}

export function outputLimitError(max: number): RenderLimitError {
  return new RenderLimitError('output', `the rendered result is longer than ${max.toLocaleString('en-US')} characters (the output budget of a render)`)
}

const hb = Handlebars.create()
hb.unregisterHelper('log')

/** The internal helper a fallback becomes: `{{__fb path "literal"}}` (short: it must fit where `|default:` was). */
export const FALLBACK = '__fb'
/** The value, or the literal when LiquidJS's `default` (with `jsTruthy`) would use it. */
export function fallbackValue(value: unknown, literal: string): unknown {
  if (typeof value === 'string' || Array.isArray(value)) return value.length ? value : literal
  return value ? value : literal
}
hb.registerHelper(FALLBACK, (value: unknown, literal: unknown) => fallbackValue(value, String(literal)))

/**
 * The meter of the render in progress (renders are synchronous, so one at a time per thread): the work
 * spent, the output budget, and the weight of each `each` block of the template, by its location.
 */
interface Meter { work: number; maxOutput: number; weights: Map<string, number> }
let meter: Meter | null = null

const locKey = (loc: hbs.AST.SourceLocation | undefined) => (loc ? `${loc.start.line}:${loc.start.column}` : '')

const builtinEach = hb.helpers.each as (this: unknown, context: unknown, options: Handlebars.HelperOptions) => string
hb.registerHelper('each', function (this: unknown, context: unknown, options: Handlebars.HelperOptions & { loc?: hbs.AST.SourceLocation }) {
  const m = meter
  if (!m) return builtinEach.call(this, context, options)
  const weight = 1 + (m.weights.get(locKey(options.loc)) ?? 0)
  const fn = options.fn
  let produced = 0
  const metered = ((ctx: unknown, opts?: Handlebars.RuntimeOptions) => {
    m.work += weight
    if (m.work > RENDER_MAX_WORK) throw workLimitError()
    const out = fn(ctx, opts)
    produced += out.length
    if (produced > m.maxOutput) throw outputLimitError(m.maxOutput)
    return out
  }) as Handlebars.TemplateDelegate
  return builtinEach.call(this, context, { ...options, fn: metered })
})

/** The only helpers a template may call (Handlebars' own, minus `log`). */
const KNOWN_HELPERS: KnownHelpers = {
  if: true, unless: true, each: true, with: true, lookup: true, [FALLBACK]: true,
  helperMissing: true, blockHelperMissing: true, log: false,
}

/** Argument counts of the built-in helpers, checked at compile time so no template fails at send time. */
const HELPER_ARITY = new Map<string, number>([['if', 1], ['unless', 1], ['with', 1], ['each', 1], ['lookup', 2], [FALLBACK, 2]])

/** Bodies (HTML, values escaped) and subjects or derived text templates (values as they are). */
export const COMPILE_OPTIONS: CompileOptions = { knownHelpersOnly: true, knownHelpers: KNOWN_HELPERS, strict: false, noEscape: false }
export const TEXT_COMPILE_OPTIONS: CompileOptions = { ...COMPILE_OPTIONS, noEscape: true }
/** Explicit `false` (not the default `undefined`) also keeps Handlebars from logging denied look-ups. */
const RUNTIME_OPTIONS: RuntimeOptions = { allowProtoPropertiesByDefault: false, allowProtoMethodsByDefault: false }

// ---------------------------------------------------------------------------------------------------
// Parsing and the restrictions

export type Node = hbs.AST.Node
export type Program = hbs.AST.Program

/** The child nodes a node can hold; each node type has only some of them (the others read undefined). */
interface NodeChildren {
  path?: Node; name?: Node; params?: Node[]; hash?: Node; program?: Node; inverse?: Node
}

/** Walks every node of a parsed template in source order. */
export function walk(node: Node | null | undefined, visit: (n: Node) => void) {
  if (!node) return
  visit(node)
  const n = node as NodeChildren
  switch (node.type) {
    case 'Program':
      for (const s of (node as Program).body) walk(s, visit)
      break
    case 'BlockStatement': case 'DecoratorBlock': case 'PartialBlockStatement':
      walk(n.path, visit)
      for (const p of n.params ?? []) walk(p, visit)
      walk(n.hash, visit)
      walk(n.program, visit)
      walk(n.inverse, visit)
      break
    case 'MustacheStatement': case 'SubExpression': case 'Decorator': case 'PartialStatement':
      walk(n.path ?? n.name, visit)
      for (const p of n.params ?? []) walk(p, visit)
      walk(n.hash, visit)
      break
    case 'Hash':
      for (const pair of (node as hbs.AST.Hash).pairs) walk(pair.value, visit)
      break
  }
}

/**
 * Limits that keep one template from pinning a core: Handlebars' parser slows down sharply with deep
 * block nesting (1,000 levels take seconds) and costs roughly per expression.
 */
export const MAX_TEMPLATE_EXPRESSIONS = 5_000
export const MAX_TEMPLATE_NESTING = 32

/** A linear pre-scan of `{{` expressions and block depth, before the parser sees the source. */
function prescan(source: string) {
  let count = 0
  let depth = 0
  for (let i = source.indexOf('{{'); i !== -1; i = source.indexOf('{{', i + 2)) {
    if (++count > MAX_TEMPLATE_EXPRESSIONS) throw new TemplateSyntaxError(`More than ${MAX_TEMPLATE_EXPRESSIONS} {{...}} expressions`)
    let j = i + 2
    while (source.charCodeAt(j) === 123 /* { */) j++
    if (source.charCodeAt(j) === 126 /* ~ */) j++
    const c = source.charCodeAt(j)
    if (c === 35 /* # */ || c === 94 /* ^ */) {
      if (++depth > MAX_TEMPLATE_NESTING) throw new TemplateSyntaxError(`Blocks nested deeper than ${MAX_TEMPLATE_NESTING} levels`)
    } else if (c === 47 /* / */) {
      depth--
    }
  }
}

/**
 * `{{ path | default: "literal" }}` (or `{{{ … }}}`, single quotes) on one line. The literal keeps its
 * quotes: Handlebars reads both kinds of string literal.
 */
const LIQUID_DEFAULT = /\{\{(\{?)[ \t]*([A-Za-z_][\w.-]*)[ \t]*\|[ \t]*default:[ \t]*("[^"\n]*"|'[^'\n]*')[ \t]*(\}?)\}\}/g

/** Fallbacks rewritten to FALLBACK calls of the same length (padded with spaces before the braces). */
export function rewriteFallbacks(source: string): string {
  if (source.indexOf('default:') === -1) return source
  return source.replace(LIQUID_DEFAULT, (all, open: string, path: string, literal: string, close: string) => {
    const call = `{{${open}${FALLBACK} ${path} ${literal}`
    return `${call}${' '.repeat(all.length - call.length - close.length - 2)}${close}}}`
  })
}

export function parse(source: string): Program {
  source = rewriteFallbacks(source)
  prescan(source)
  let ast: Program
  try {
    ast = hb.parse(source)
  } catch (err) {
    throw new TemplateSyntaxError((err as Error).message)
  }
  walk(ast, (n) => {
    if (n.type === 'PartialStatement' || n.type === 'PartialBlockStatement') throw new TemplateSyntaxError(`Partials are not supported (line ${n.loc.start.line})`)
    if (n.type === 'Decorator' || n.type === 'DecoratorBlock') throw new TemplateSyntaxError(`Decorators are not supported (line ${n.loc.start.line})`)
    if (n.type === 'MustacheStatement' || n.type === 'BlockStatement' || n.type === 'SubExpression') {
      const call = n as hbs.AST.MustacheStatement
      const name = call.path.type === 'PathExpression' ? (call.path as hbs.AST.PathExpression).original : ''
      const arity = HELPER_ARITY.get(name)
      if (arity !== undefined && call.params.length !== arity) {
        throw new TemplateSyntaxError(`${name} takes exactly ${arity} argument${arity > 1 ? 's' : ''} (line ${n.loc.start.line})`)
      }
    }
  })
  return ast
}

// ---------------------------------------------------------------------------------------------------
// Compilation: the fast path, or Handlebars' runtime

const HELPER_NAMES = new Set(Object.keys(KNOWN_HELPERS))

/**
 * Handlebars' escapeExpression, character for character (& < > " ' ` = and the same entity spellings, the
 * same handling of non-strings), without its per-character regex callback, which dominated render time.
 */
export function escapeHtml(value: unknown): string {
  let s: string
  if (typeof value === 'string') s = value
  else if (value == null) return ''
  else if (typeof (value as { toHTML?: unknown }).toHTML === 'function') return (value as { toHTML(): string }).toHTML()
  else if (!value) return `${value as string}`
  else s = `${value as string}`
  let out = ''
  let last = 0
  for (let i = 0; i < s.length; i++) {
    let rep: string
    switch (s.charCodeAt(i)) {
      case 38: rep = '&amp;'; break
      case 60: rep = '&lt;'; break
      case 62: rep = '&gt;'; break
      case 34: rep = '&quot;'; break
      case 39: rep = '&#x27;'; break
      case 96: rep = '&#x60;'; break
      case 61: rep = '&#x3D;'; break
      default: continue
    }
    if (i > last) out += s.slice(last, i)
    out += rep
    last = i + 1
  }
  return last === 0 ? s : last < s.length ? out + s.slice(last) : out
}
const hasOwn = Object.prototype.hasOwnProperty

/** Reads an own-property path the way Handlebars' lookupProperty does when prototype access is denied. */
function pathGetter(parts: string[]): (vars: TemplateVars) => unknown {
  if (parts.length === 1) {
    const [a] = parts
    return (v) => (hasOwn.call(v, a) ? v[a] : undefined)
  }
  return (v) => {
    let cur: unknown = v
    for (const p of parts) {
      if (cur == null) return cur
      cur = hasOwn.call(cur, p) ? (cur as Record<string, unknown>)[p] : undefined
    }
    return cur
  }
}

/**
 * The fast path for the common template: text and plain `{{path}}` / `{{{path}}}` only (no blocks, no
 * helpers, no `..` or `@data`). It produces exactly what Handlebars produces for such a template (the same
 * whitespace handling, through the parsed content values, and the same escaping function), several times
 * faster. Null when the template needs the full Handlebars runtime.
 */
function simpleRenderer(ast: Program, escapeValues: boolean, maxOutput: number): { fn: RenderFn; parts: SimpleParts } | null {
  const statics: string[] = []
  const getters: Array<(v: TemplateVars) => unknown> = []
  const escaped: boolean[] = []
  const names: Array<string | null> = []
  let cur = ''
  for (const s of ast.body) {
    if (s.type === 'ContentStatement') { cur += (s as hbs.AST.ContentStatement).value; continue }
    if (s.type === 'CommentStatement') continue
    if (s.type !== 'MustacheStatement') return null
    const m = s as hbs.AST.MustacheStatement
    if (m.hash?.pairs.length || m.path.type !== 'PathExpression') return null
    let p = m.path as hbs.AST.PathExpression
    let literal: string | null = null
    if (m.params.length) {
      // A fallback: FALLBACK with a plain path and a string literal.
      const [arg, lit] = m.params
      if (p.original !== FALLBACK || m.params.length !== 2 || arg.type !== 'PathExpression' || lit.type !== 'StringLiteral') return null
      p = arg as hbs.AST.PathExpression
      literal = (lit as hbs.AST.StringLiteral).value
    }
    if (p.data || p.depth !== 0 || !p.parts.length || p.parts.some((x) => HELPER_NAMES.has(x))) return null
    statics.push(cur)
    cur = ''
    names.push(literal === null && p.parts.length === 1 ? p.parts[0] : null)
    const get = pathGetter(p.parts)
    if (literal === null) getters.push(get)
    else {
      const fallback = literal
      getters.push((v) => fallbackValue(get(v), fallback))
    }
    escaped.push(escapeValues && m.escaped)
  }
  statics.push(cur)
  const n = getters.length
  const fn: RenderFn = (vars) => {
    let out = statics[0]
    for (let i = 0; i < n; i++) {
      const v = getters[i](vars)
      if (v != null && typeof v !== 'function') out += escaped[i] ? escapeHtml(v) : (v as string)
      out += statics[i + 1]
      if (out.length > maxOutput) throw outputLimitError(maxOutput)
    }
    if (out.length > maxOutput) throw outputLimitError(maxOutput)
    return out
  }
  return { fn, parts: { statics, getters, escaped, names, maxOutput } }
}

/**
 * A fast-path render function's pieces: the text around each output (`statics`, one more than the outputs),
 * each output's value getter, whether it is HTML-escaped, and its variable when it is a plain one-part path
 * (`{{name}}`, else null). The function renders `statics[0] + value(0) + statics[1] + ...`, a value being
 * '' when null, undefined or a function, else escapeHtml of it when escaped. For src/mail/render/plan.ts (through the compiled body, cache.ts).
 */
export interface SimpleParts {
  statics: readonly string[]
  getters: ReadonlyArray<(vars: TemplateVars) => unknown>
  escaped: readonly boolean[]
  names: ReadonlyArray<string | null>
  maxOutput: number
}

/** The statements each `{{#each}}` block of a template holds (all depths), by the block's location. */
function eachWeights(ast: Program): Map<string, number> {
  const weights = new Map<string, number>()
  walk(ast, (n) => {
    if (n.type !== 'BlockStatement') return
    const b = n as hbs.AST.BlockStatement
    if (b.path.type !== 'PathExpression' || (b.path as hbs.AST.PathExpression).original !== 'each') return
    let count = 0
    walk(b.program, (x) => { if (x.type === 'ContentStatement' || x.type === 'MustacheStatement' || x.type === 'BlockStatement') count++ })
    walk(b.inverse, (x) => { if (x.type === 'ContentStatement' || x.type === 'MustacheStatement' || x.type === 'BlockStatement') count++ })
    weights.set(locKey(b.loc), count)
  })
  return weights
}

/** True when a template uses `{{#each}}`: its work depends on the data (the others are linear in source and data). */
export function usesEach(ast: Program): boolean {
  let found = false
  walk(ast, (n) => {
    if (n.type === 'BlockStatement' && (n as hbs.AST.BlockStatement).path.type === 'PathExpression' && ((n as hbs.AST.BlockStatement).path as hbs.AST.PathExpression).original === 'each') found = true
  })
  return found
}

/**
 * A render function within the budgets above: `maxOutput` characters of output (RENDER_MAX_OUTPUT
 * unless given) and RENDER_MAX_WORK of work. Throws RenderLimitError past either.
 */
export function toRenderFn(ast: Program, options: CompileOptions, maxOutput = RENDER_MAX_OUTPUT): RenderFn {
  return toRender(ast, options, maxOutput).fn
}

/** toRenderFn, and the fast path's parts of the function when it is that path's (else null). */
export function toRender(ast: Program, options: CompileOptions, maxOutput = RENDER_MAX_OUTPUT): { fn: RenderFn; parts: SimpleParts | null } {
  const simple = simpleRenderer(ast, !options.noEscape, maxOutput)
  if (simple) return simple
  let template: HandlebarsTemplateDelegate
  const weights = eachWeights(ast)
  try {
    // Handlebars compiles lazily; precompile-equivalent work happens on the first call below.
    template = hb.compile(ast, options)
    template({}, RUNTIME_OPTIONS)
  } catch (err) {
    throw new TemplateSyntaxError((err as Error).message)
  }
  const fn: RenderFn = (vars) => {
    const outer = meter
    meter = { work: 0, maxOutput, weights }
    let out: string
    try {
      out = template(vars, RUNTIME_OPTIONS)
    } finally {
      meter = outer
    }
    if (out.length > maxOutput) throw outputLimitError(maxOutput)
    return out
  }
  return { fn, parts: null }
}
