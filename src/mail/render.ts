/**
 * Template rendering for every outgoing message (send, campaigns, workflows).
 *
 * - Handlebars in an isolated environment: `{{variable}}`, nested paths (`{{company.name}}`), and the
 *   built-in block helpers `if`, `unless`, `each`, `with`, `lookup` only. `log`, custom helpers,
 *   partials and decorators are refused when the template is compiled (a 422 at save time).
 * - Bodies are HTML: every `{{value}}` is HTML-escaped (`{{{value}}}` is the explicit, author-chosen way
 *   to insert raw HTML). Subjects are text: not escaped, CR/LF in the result become one space.
 * - A missing variable renders empty. Prototype properties and methods are never reachable.
 * - Compiled templates are cached in a bounded LRU keyed by a hash of the source text (the source is
 *   compared on a hit, so a hash collision can never serve another template).
 * - The plain-text alternative is derived from the HTML. For speed the conversion is done once per
 *   template, on the template source (each Handlebars construct held by a mark), yielding a text
 *   template rendered with the same variables; breaks that meet a block tag and links to a variable
 *   URL are settled after rendering. A property test checks that this equals converting the rendered
 *   HTML. When the source defeats it (raw `{{{html}}}`, `~` whitespace control, <pre>, a link whose
 *   label depends on a block), the rendered HTML is converted instead, on every render.
 */
import Handlebars from 'handlebars'
import { validation, type FieldError } from '../errors'

export type TemplateKind = 'html' | 'text'
export type TemplateVars = Record<string, unknown>
export type RenderFn = (vars: TemplateVars) => string

/** A template source that Handlebars (or mailctl's restrictions) refuses. */
export class TemplateSyntaxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TemplateSyntaxError'
  }
}

const hb = Handlebars.create()
hb.unregisterHelper('log')

/** The only helpers a template may call (Handlebars' own, minus `log`). */
const KNOWN_HELPERS = {
  if: true, unless: true, each: true, with: true, lookup: true,
  helperMissing: true, blockHelperMissing: true, log: false,
} as unknown as KnownHelpers

/** Argument counts of the built-in helpers, checked at compile time so no template fails at send time. */
const HELPER_ARITY = new Map<string, number>([['if', 1], ['unless', 1], ['with', 1], ['each', 1], ['lookup', 2]])

const COMPILE_OPTIONS: CompileOptions = { knownHelpersOnly: true, knownHelpers: KNOWN_HELPERS, strict: false, noEscape: false }
const TEXT_COMPILE_OPTIONS: CompileOptions = { ...COMPILE_OPTIONS, noEscape: true }
/** Explicit `false` (not the default `undefined`) also keeps Handlebars from logging denied look-ups. */
const RUNTIME_OPTIONS: RuntimeOptions = { allowProtoPropertiesByDefault: false, allowProtoMethodsByDefault: false }

// ---------------------------------------------------------------------------------------------------
// Compilation and the cache

type Node = hbs.AST.Node
type Program = hbs.AST.Program

/** Walks every node of a parsed template in source order. */
function walk(node: Node | null | undefined, visit: (n: Node) => void) {
  if (!node) return
  visit(node)
  const n = node as unknown as Record<string, unknown>
  switch (node.type) {
    case 'Program':
      for (const s of (node as Program).body) walk(s, visit)
      break
    case 'BlockStatement': case 'DecoratorBlock': case 'PartialBlockStatement':
      walk(n.path as Node, visit)
      for (const p of (n.params as Node[] | undefined) ?? []) walk(p, visit)
      walk(n.hash as Node | undefined, visit)
      walk(n.program as Node | undefined, visit)
      walk(n.inverse as Node | undefined, visit)
      break
    case 'MustacheStatement': case 'SubExpression': case 'Decorator': case 'PartialStatement':
      walk(n.path as Node ?? n.name as Node, visit)
      for (const p of (n.params as Node[] | undefined) ?? []) walk(p, visit)
      walk(n.hash as Node | undefined, visit)
      break
    case 'Hash':
      for (const pair of (n.pairs as Array<{ value: Node }>)) walk(pair.value, visit)
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

function parse(source: string): Program {
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
function simpleRenderer(ast: Program, escape: boolean): RenderFn | null {
  const statics: string[] = []
  const getters: Array<(v: TemplateVars) => unknown> = []
  const escaped: boolean[] = []
  let cur = ''
  for (const s of ast.body) {
    if (s.type === 'ContentStatement') { cur += (s as hbs.AST.ContentStatement).value; continue }
    if (s.type === 'CommentStatement') continue
    if (s.type !== 'MustacheStatement') return null
    const m = s as hbs.AST.MustacheStatement
    if (m.params.length || m.hash?.pairs.length || m.path.type !== 'PathExpression') return null
    const p = m.path as hbs.AST.PathExpression
    if (p.data || p.depth !== 0 || !p.parts.length || p.parts.some((x) => HELPER_NAMES.has(x))) return null
    statics.push(cur)
    cur = ''
    getters.push(pathGetter(p.parts))
    escaped.push(escape && m.escaped)
  }
  statics.push(cur)
  const n = getters.length
  return (vars) => {
    let out = statics[0]
    for (let i = 0; i < n; i++) {
      const v = getters[i](vars)
      if (v != null && typeof v !== 'function') out += escaped[i] ? escapeHtml(v) : '' + (v as string)
      out += statics[i + 1]
    }
    return out
  }
}

function toRenderFn(ast: Program, options: CompileOptions): RenderFn {
  const simple = simpleRenderer(ast, !options.noEscape)
  if (simple) return simple
  let template: HandlebarsTemplateDelegate
  try {
    // Handlebars compiles lazily; precompile-equivalent work happens on the first call below.
    template = hb.compile(ast, options)
    template({}, RUNTIME_OPTIONS)
  } catch (err) {
    throw new TemplateSyntaxError((err as Error).message)
  }
  return (vars) => template(vars, RUNTIME_OPTIONS)
}

interface CacheEntry<T> { source: string; value: T; size: number }

/** A small LRU (Map insertion order) bounded by entry count and by total source characters. */
class Lru<T> {
  private map = new Map<string, CacheEntry<T>>()
  private chars = 0
  hits = 0
  misses = 0
  constructor(private maxEntries: number, private maxChars: number) {}

  get(key: string, source: string): T | undefined {
    const e = this.map.get(key)
    if (!e || e.source !== source) { this.misses++; return undefined }
    this.hits++
    this.map.delete(key)
    this.map.set(key, e)
    return e.value
  }

  set(key: string, source: string, value: T) {
    const old = this.map.get(key)
    if (old) { this.map.delete(key); this.chars -= old.size }
    this.map.set(key, { source, value, size: source.length })
    this.chars += source.length
    for (const [k, e] of this.map) {
      if (this.map.size <= this.maxEntries && this.chars <= this.maxChars) break
      if (k === key) continue
      this.map.delete(k)
      this.chars -= e.size
    }
  }

  get size() { return this.map.size }
  clear() { this.map.clear(); this.chars = 0; this.hits = 0; this.misses = 0 }
}

/** Bounds of the compiled-template cache: 2,000 templates and 64 M characters of source. */
export const RENDER_CACHE_MAX_ENTRIES = 2_000
export const RENDER_CACHE_MAX_CHARS = 64 * 1024 * 1024

/** The text alternative as a template; `foldBreaks`: its output still carries break sentinels. */
interface DerivedText { render: RenderFn; foldBreaks: boolean; links: boolean }
interface CompiledBody { html: RenderFn; text: DerivedText | null }
type Compiled = { kind: 'text'; fn: RenderFn } | { kind: 'html'; fn: RenderFn; body: CompiledBody }

const cache = new Lru<Compiled>(RENDER_CACHE_MAX_ENTRIES, RENDER_CACHE_MAX_CHARS)

function cacheKey(kind: TemplateKind, source: string): string {
  return `${kind}:${Bun.hash.wyhash(source).toString(36)}`
}

function compileEntry(source: string, kind: TemplateKind): Compiled {
  const key = cacheKey(kind, source)
  const hit = cache.get(key, source)
  if (hit) return hit
  const ast = parse(source)
  let entry: Compiled
  if (kind === 'text') {
    entry = { kind, fn: toRenderFn(ast, TEXT_COMPILE_OPTIONS) }
  } else {
    const html = toRenderFn(ast, COMPILE_OPTIONS)
    entry = { kind, fn: html, body: { html, text: deriveTextTemplate(source, ast) } }
  }
  cache.set(key, source, entry)
  return entry
}

/**
 * Compiles (or fetches from the cache) a template. `html`: values are HTML-escaped; `text`: they are not.
 * Throws TemplateSyntaxError for a source that does not compile or uses what mailctl refuses.
 */
export function compileTemplate(source: string, kind: TemplateKind): RenderFn {
  return compileEntry(source, kind).fn
}

/**
 * How the text alternative of a body is produced: `template` (derived once from the source) or
 * `per-render` (the rendered HTML is converted each time). For tests and diagnostics.
 */
export function textStrategy(body: string): 'template' | 'per-render' {
  const entry = compileEntry(body, 'html') as Extract<Compiled, { kind: 'html' }>
  return entry.body.text ? 'template' : 'per-render'
}

/** Cache counters, for tests and diagnostics. */
export function renderCacheStats() {
  return { size: cache.size, hits: cache.hits, misses: cache.misses }
}

export function clearRenderCache() {
  cache.clear()
}

/**
 * Checks a template's parts; throws a 422 VALIDATION_ERROR naming each part that does not compile
 * (field `subject` or `body`, with the Handlebars message). Compiling also warms the cache.
 */
export function validateTemplateSource(input: { subject?: string | null; body?: string | null }): void {
  const errors: FieldError[] = []
  const parts: Array<['subject' | 'body', string | null | undefined, TemplateKind]> = [['subject', input.subject, 'text'], ['body', input.body, 'html']]
  for (const [field, source, kind] of parts) {
    if (source == null) continue
    try {
      compileEntry(source, kind)
    } catch (err) {
      if (!(err instanceof TemplateSyntaxError)) throw err
      errors.push({ field, message: `${field}: the template does not compile: ${err.message}`, code: 'invalid_template' })
    }
  }
  if (errors.length) throw validation(errors, errors.length === 1 ? errors[0].message : 'The subject and the body do not compile')
}

// ---------------------------------------------------------------------------------------------------
// Variables

/** Keys that request or contact data never supply (API.md contact data rule 5); the service sets them. */
export const RESERVED_DATA_KEYS = ['id', 'service_id', 'service_email', 'email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl'] as const
const RESERVED = new Set<string>(RESERVED_DATA_KEYS)

export interface MessageUrls { unsubscribeUrl?: string; subscribeUrl?: string; manageUrl?: string }

/** `{value, persistent}`: a request-only (persistent: false) or stored value, API.md contact data rule 4. */
function unwrapDataValue(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>
    const keys = Object.keys(o)
    if ('value' in o && typeof o.persistent === 'boolean' && keys.length === 2) return o.value
  }
  return v
}

const MARK_CHARS = /[\u0001-\u0003\uE000-\uE005]/
const MARK_CHARS_G = /[\u0001-\u0003\uE000-\uE005]/g

/**
 * Keys never copied into variables: `__proto__` would set a prototype, and own `toString`, `valueOf` or
 * `toHTML` values would make Handlebars' string conversion of the object throw at send time.
 */
const UNSAFE_KEYS = new Set(['__proto__', 'toString', 'valueOf', 'toHTML'])

/** A deep copy of JSON-like data: no functions, no unsafe keys, dates as ISO strings, bounded depth. */
function plain(v: unknown, depth = 0): unknown {
  // The characters that mark constructs in derived text templates never come from data.
  if (typeof v === 'string') return MARK_CHARS.test(v) ? v.replace(MARK_CHARS_G, '') : v
  if (v === null || typeof v !== 'object') return typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint' ? undefined : v
  if (depth > 32) return undefined
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1))
  if (v instanceof Date) return v.toISOString()
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v)) {
    if (!UNSAFE_KEYS.has(k)) out[k] = plain((v as Record<string, unknown>)[k], depth + 1)
  }
  return out
}

/**
 * The variables of one message: the contact's stored data, overlaid by the request's `data`
 * (`{value, persistent: false}` unwrapped; null removes a value for this message; an empty string
 * keeps the contact's value), then `email` and `id` of the contact and the message URLs.
 * Reserved keys coming from data are dropped.
 */
export function templateVariables(input: {
  contact?: { id?: string | null; email?: string | null; data?: Record<string, unknown> | null } | null
  data?: Record<string, unknown> | null
  urls?: MessageUrls | null
}): TemplateVars {
  const vars: TemplateVars = {}
  const contactData = input.contact?.data ?? {}
  for (const k of Object.keys(contactData)) {
    if (!RESERVED.has(k) && !UNSAFE_KEYS.has(k)) vars[k] = plain(contactData[k])
  }
  const data = input.data ?? {}
  for (const k of Object.keys(data)) {
    if (RESERVED.has(k) || UNSAFE_KEYS.has(k)) continue
    const v = unwrapDataValue(data[k])
    if (v === '' || v === undefined) continue
    if (v === null) { delete vars[k]; continue }
    vars[k] = plain(v)
  }
  if (input.contact?.email) vars.email = plain(input.contact.email)
  if (input.contact?.id) vars.id = plain(input.contact.id)
  const urls = input.urls ?? {}
  for (const k of ['unsubscribeUrl', 'subscribeUrl', 'manageUrl'] as const) {
    if (urls[k]) vars[k] = plain(urls[k])
  }
  return vars
}

// ---------------------------------------------------------------------------------------------------
// Rendering

export interface RenderedEmail { subject: string; html: string; text: string }

/** Renders a subject (text, CR/LF folded into one space). */
export function renderSubject(source: string, vars: TemplateVars): string {
  return compileTemplate(source, 'text')(vars).replace(/[\r\n]+/g, ' ')
}

/**
 * Renders a message: subject, HTML body and its plain-text alternative. Sources must have passed
 * validateTemplateSource (at save time, or before queueing inline content); otherwise a
 * TemplateSyntaxError is thrown here.
 */
export function renderEmail(src: { subject: string; body: string }, vars: TemplateVars): RenderedEmail {
  const entry = compileEntry(src.body, 'html') as Extract<Compiled, { kind: 'html' }>
  const html = entry.body.html(vars)
  let text: string
  if (entry.body.text) {
    const derived = entry.body.text
    text = derived.render(vars)
    if (derived.foldBreaks) text = foldBreaks(text)
    if (derived.links) text = settleLinks(text)
    text = tidyDerived(text)
  } else {
    text = htmlToText(html)
  }
  return { subject: renderSubject(src.subject, vars), html, text }
}

// ---------------------------------------------------------------------------------------------------
// HTML to plain text

/** Private-use characters around the index of a Handlebars construct while the HTML is converted. */
const MARK_OUTPUT = ['\uE000', '\uE001'] as const
/** A construct that outputs nothing itself (block tags, else, comments): it must not move line breaks. */
const MARK_SILENT = ['\uE002', '\uE003'] as const
const SILENT_ONLY = /^\s*(?:\uE002\d+\uE003\s*)+$/

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
function deriveTextTemplate(source: string, ast: Program): DerivedText | null {
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
      // (The typings call `original` StripFlags; at run time it is the raw source text.)
      if (source.slice(start, end) !== (c.original as unknown as string)) faithful = false
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

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', copy: '©', reg: '®', trade: '™', hellip: '…',
  mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”', laquo: '«', raquo: '»', bull: '•',
  middot: '·', euro: '€', pound: '£', yen: '¥', cent: '¢', deg: '°', times: '×', divide: '÷', zwnj: '', zwj: '',
  shy: '', ensp: ' ', emsp: ' ', thinsp: ' ', larr: '←', rarr: '→', uarr: '↑', darr: '↓', hearts: '♥', check: '✓',
}

function decodeEntities(s: string): string {
  if (s.indexOf('&') === -1) return s
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z][a-z0-9]*);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)
      if (!Number.isFinite(code) || code <= 0 || code > 0x10ffff) return m
      if (code === 0xa0) return ' '
      if (code === 0x200c || code === 0x200d || code === 0xad || code === 0x34f || code === 0x200b || code === 0xfeff) return ''
      return String.fromCodePoint(code)
    }
    const key = hasOwn.call(NAMED_ENTITIES, e) ? e : e.toLowerCase()
    return hasOwn.call(NAMED_ENTITIES, key) ? NAMED_ENTITIES[key] : m
  })
}

/** Elements whose content is not part of the text. */
const SKIP_CONTENT = new Set(['head', 'style', 'script', 'title', 'noscript', 'template', 'svg', 'object', 'iframe'])
/** Elements that start and end a paragraph (blank line). */
const PARAGRAPH = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'table', 'blockquote', 'pre', 'dl', 'figure'])
/** Elements that start and end a line. */
const LINE = new Set(['div', 'tr', 'li', 'section', 'article', 'header', 'footer', 'main', 'nav', 'aside', 'center', 'form', 'dt', 'dd', 'address', 'tbody', 'thead', 'tfoot', 'caption', 'figcaption', 'body', 'html'])
const VOID = new Set(['br', 'hr', 'img', 'meta', 'link', 'input', 'area', 'base', 'col', 'embed', 'source', 'track', 'wbr'])

const ATTR_RE: Record<string, RegExp> = {}
function attr(tag: string, name: string): string | null {
  if (tag.indexOf('=') === -1) return null
  const re = ATTR_RE[name] ??= new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i')
  const m = re.exec(tag)
  return m ? decodeEntities(m[1] ?? m[2] ?? m[3] ?? '') : null
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

/** Folds the output's whitespace: no trailing spaces, at most one blank line, no leading or trailing blank lines. */
function tidyText(s: string): string {
  return s.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()
}

/**
 * A small HTML to plain-text conversion for the text/plain alternative: paragraphs and line breaks,
 * list items as "* ", links as "text [url]", images as their alt text, head/style/script and
 * display:none content dropped, entities decoded, whitespace collapsed (kept inside <pre>).
 */
export function htmlToText(html: string): string {
  return tidyText(convertHtml(html, null).text)
}

/**
 * Conversion of a marked template source (constructs replaced by marks). Line and paragraph breaks are
 * written as the sentinels LINE_BREAK / PARAGRAPH_BREAK, folded later (see foldBreaks), because a break
 * that meets a block tag can only be settled once the block has rendered. `unfaithful` is set when the
 * result could differ from converting the rendered HTML in more than whitespace.
 */
interface Marked { gaps: string[]; unfaithful: boolean; linkMarks: boolean }

const LINE_BREAK = '\u0001'
const PARAGRAPH_BREAK = '\u0002'
/** <br>: adds a line. (A literal newline in a text template would trigger Handlebars' standalone-tag stripping.) */
const HARD_BREAK = '\u0003'
/** Around a " [url]" link suffix whose URL is a variable: dropped at render time when the URL is empty. */
const LINK_OPEN = '\uE004'
const LINK_CLOSE = '\uE005'
const MARK_RE = /[\uE000\uE002](\d+)[\uE001\uE003]/g

function convertHtml(html: string, marked: Marked | null): { text: string } {
  const out: string[] = []
  let last = ''
  let pendingBreak = 0
  let pre = 0
  let skip: { name: string; depth: number } | null = null
  const links: Array<{ href: string | null; at: number }> = []
  const breakLine = (n: number) => { if (n > pendingBreak) pendingBreak = n }
  const flushBreak = () => {
    if (pendingBreak && out.length) {
      out.push(marked ? (pendingBreak === 2 ? PARAGRAPH_BREAK : LINE_BREAK) : (pendingBreak === 2 ? '\n\n' : '\n'))
      last = '\n'
    }
    pendingBreak = 0
  }
  const emit = (text: string) => {
    if (!text) return
    // Leading spaces vanish at a line start (or where a break is pending); blank text moves no break.
    if (!pre && (pendingBreak || last === '' || last === '\n' || last === ' ') && text.charCodeAt(0) === 32) {
      text = text.replace(/^ +/, '')
      if (!text) return
    }
    flushBreak()
    out.push(text)
    last = text[text.length - 1]
  }
  let i = 0
  const len = html.length
  while (i < len) {
    const lt = html.indexOf('<', i)
    const end = lt === -1 ? len : lt
    if (end > i && !skip) {
      const chunk = decodeEntities(html.slice(i, end))
      if (marked && SILENT_ONLY.test(chunk)) {
        // A pending break goes before a block tag, never inside the block (where each iteration would
        // repeat it); foldBreaks settles the breaks that meet once the block has rendered.
        for (const piece of chunk.split(/(\uE002\d+\uE003)/)) {
          if (piece.charCodeAt(0) === 0xe002) {
            flushBreak()
            out.push(piece)
            // What precedes a block tag at render time is unknown here: keep the next space (the
            // render-time tidy folds doubled spaces and spaces at line starts).
            last = '\uE003'
          } else if (piece) emit(' ')
        }
      } else emit(pre ? chunk : chunk.replace(/[\s\u00a0]+/g, ' '))
    }
    if (lt === -1) break
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4)
      i = close === -1 ? len : close + 3
      continue
    }
    if (!/[a-zA-Z/!?]/.test(html[lt + 1] ?? '')) {
      // A "<" that opens no tag is text.
      if (!skip) emit('<')
      i = lt + 1
      continue
    }
    const gt = html.indexOf('>', lt + 1)
    if (gt === -1) break
    i = gt + 1
    const tag = html.slice(lt, gt + 1)
    const m = /^<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/.exec(tag)
    if (!m) continue
    const closing = m[1] === '/'
    const name = m[2].toLowerCase()
    if (skip) {
      if (name === skip.name && !VOID.has(name) && !tag.endsWith('/>')) skip.depth += closing ? -1 : 1
      if (skip.depth === 0) skip = null
      continue
    }
    if (!closing && !VOID.has(name) && !tag.endsWith('/>')) {
      if (SKIP_CONTENT.has(name) || /display\s*:\s*none/i.test(attr(tag, 'style') ?? '')) {
        skip = { name, depth: 1 }
        continue
      }
    }
    if (name === 'br') {
      if (marked) { flushBreak(); out.push(HARD_BREAK); last = '\n' } else emit('\n')
      continue
    }
    if (name === 'hr') { breakLine(2); emit('----'); breakLine(2); continue }
    if (name === 'img') {
      if (!closing) { const alt = attr(tag, 'alt'); if (alt) emit(alt.replace(/\s+/g, ' ')) }
      continue
    }
    if (name === 'pre') pre = Math.max(0, pre + (closing ? -1 : 1))
    if (name === 'a') {
      if (!closing) links.push({ href: attr(tag, 'href'), at: out.length })
      else {
        const link = links.pop()
        const href = link?.href?.trim()
        if (href && !href.startsWith('#') && !/^javascript:/i.test(href)) {
          const target = href.replace(/^mailto:/i, '')
          const label = out.slice(link!.at).join('').replace(/[\u0001-\u0003]/g, '').trim()
          if (marked && label && /[\uE000\uE002]/.test(label + target)) {
            // Whether the label is empty, or equals the URL, must not depend on the values.
            const restore = (t: string) => t.replace(MARK_RE, (_, n: string) => marked.gaps[Number(n)])
            const visible = label.replace(MARK_RE, '').trim()
            if (/[\uE002]/.test(label + target)) marked.unfaithful = true
            else if (visible) {
              if (/\uE000/.test(target)) { emit(`${LINK_OPEN} [${target}]${LINK_CLOSE}`); marked.linkMarks = true } else emit(` [${target}]`)
            } else if (restore(label) !== restore(target)) marked.unfaithful = true
          } else if (!label) emit(target)
          else if (label !== target) emit(` [${target}]`)
        }
      }
      continue
    }
    if (name === 'li' && !closing) { breakLine(1); emit('* '); continue }
    if (name === 'td' || name === 'th') { if (closing) emit(' '); continue }
    if (PARAGRAPH.has(name)) { breakLine(2); continue }
    if (LINE.has(name)) { breakLine(1); continue }
  }
  return { text: out.join('') }
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
 * at most one blank line results.
 */
function foldBreaks(s: string): string {
  return s.replace(/[ \t\n\u0001-\u0003]*[\u0001-\u0003][ \t\n\u0001-\u0003]*/g, (run) => {
    let lines = 0
    let group = 0
    for (let k = 0; k < run.length; k++) {
      const c = run.charCodeAt(k)
      if (c === 1) { if (group < 1) group = 1 } else if (c === 2) group = 2
      else if (c === 10 || c === 3) { lines += group + 1; group = 0 }
    }
    lines += group
    return lines >= 2 ? '\n\n' : '\n'
  })
}
