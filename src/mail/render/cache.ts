/**
 * Compiled templates and their cache: a bounded LRU keyed by a hash of the source text (the source is
 * compared on a hit, so a hash collision can never serve another template). A body's entry holds its
 * HTML render function and, when the source allows it, its derived text template (text.ts).
 */
import { escapeAllOutputs, markdownBody } from './markdown'
import { COMPILE_OPTIONS, parse, SUBJECT_MAX_OUTPUT, TemplateSyntaxError, TEXT_COMPILE_OPTIONS, toRender, toRenderFn, usesEach, type RenderFn, type SimpleParts, type TemplateKind } from './sandbox'
import { deriveTextTemplate, type DerivedText } from './text'

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

/** `parts`: the HTML render's fast-path pieces (sandbox.ts), null when it runs Handlebars' runtime. */
export interface CompiledBody { html: RenderFn; text: DerivedText | null; parts: SimpleParts | null }
/**
 * `markdown`: the function renders the body's HTML (Handlebars, then Markdown; markdown.ts). `heavy`: a
 * render can cost more than linear work in its source and data (Markdown, or `{{#each}}`), so it is not
 * run on the thread that serves HTTP (pool.ts).
 */
export type Compiled = { kind: 'text' | 'markdown'; fn: RenderFn; heavy: boolean } | { kind: 'html'; fn: RenderFn; heavy: boolean; body: CompiledBody }

const cache = new Lru<Compiled>(RENDER_CACHE_MAX_ENTRIES, RENDER_CACHE_MAX_CHARS)

function cacheKey(kind: TemplateKind, source: string): string {
  return `${kind}:${Bun.hash.wyhash(source).toString(36)}`
}

export function compileEntry(source: string, kind: TemplateKind): Compiled {
  const key = cacheKey(kind, source)
  const hit = cache.get(key, source)
  if (hit) return hit
  const ast = parse(source)
  let entry: Compiled
  if (kind === 'text') {
    // Subjects are rendered on the main thread (once per campaign recipient at fan-out): no loops.
    if (usesEach(ast)) throw new TemplateSyntaxError('{{#each}} is not allowed in a subject')
    entry = { kind, fn: toRenderFn(ast, TEXT_COMPILE_OPTIONS, SUBJECT_MAX_OUTPUT), heavy: false }
  } else if (kind === 'markdown') {
    entry = { kind, fn: markdownBody(toRenderFn(escapeAllOutputs(ast), COMPILE_OPTIONS)), heavy: true }
  } else {
    const { fn: html, parts } = toRender(ast, COMPILE_OPTIONS)
    entry = { kind, fn: html, heavy: usesEach(ast), body: { html, text: deriveTextTemplate(source, ast), parts } }
  }
  cache.set(key, source, entry)
  return entry
}

/**
 * Compiles (or fetches from the cache) a template. `html`: values are HTML-escaped; `text`: they are not;
 * `markdown`: a Markdown body, rendered to HTML with its values as text (markdown.ts).
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
