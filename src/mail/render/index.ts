/**
 * Template rendering for every outgoing message (send, campaigns, workflows):
 * the subject, the HTML body and its plain-text alternative.
 *
 * - sandbox.ts: Handlebars in an isolated environment, the restrictions checked at compile time, and
 *   the fast path for templates without blocks or helpers.
 * - cache.ts: compiled templates in a bounded LRU keyed by a hash of the source.
 * - variables.ts: what a template can reference (contact data, request data, the message URLs).
 * - text.ts: the text alternative derived once per template; html-to-text.ts: the conversion it uses,
 *   and the per-render fallback.
 *
 * - markdown.ts: Markdown bodies (variables first, as text, then Markdown) and the API's own Markdown.
 * - pool.ts: the render threads: renders that can be heavy (Markdown, `{{#each}}`) run there, with a
 *   deadline; the budgets of every render are in sandbox.ts.
 *
 * Subjects are text: not escaped, CR/LF in the result become one space. Bodies are HTML-escaped.
 */
import { validation, type FieldError } from '../../errors'
import { compileEntry, compileTemplate, type Compiled } from './cache'
import { htmlToText } from './html-to-text'
import { RenderLimitError, TemplateSyntaxError, type TemplateKind, type TemplateVars } from './sandbox'
import { renderDerivedText } from './text'

export { clearRenderCache, compileTemplate, RENDER_CACHE_MAX_ENTRIES, renderCacheStats, textStrategy } from './cache'
export { htmlToText } from './html-to-text'
export { markdownInlineToHtml, markdownToHtml } from './markdown'
export { checkTemplateSource, closeRenderPool, renderMessage } from './pool'
export {
  escapeHtml, MAX_TEMPLATE_EXPRESSIONS, MAX_TEMPLATE_NESTING, RENDER_MAX_OUTPUT, RENDER_TIMEOUT_MS, RENDER_WALL_MAX_MS,
  RenderLimitError, SUBJECT_MAX_OUTPUT, TemplateSyntaxError, type TemplateVars,
} from './sandbox'
export { templateVariables, type MessageUrls } from './variables'

/**
 * Checks a template's parts; throws a 422 VALIDATION_ERROR naming each part that does not compile
 * (field `subject` or `body`, with the Handlebars message). Compiling also warms the cache.
 */
export function validateTemplateSource(input: { subject?: string | null; body?: string | null; format?: BodyFormat }): void {
  const errors: FieldError[] = []
  const parts: Array<['subject' | 'body', string | null | undefined, TemplateKind]> = [
    ['subject', input.subject, 'text'], ['body', input.body, input.format === 'markdown' ? 'markdown' : 'html'],
  ]
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

export interface RenderedEmail { subject: string; html: string; text: string }

/** How a body's source is written: HTML (the default) or Markdown (rendered to HTML after its variables). */
export type BodyFormat = 'html' | 'markdown'

/** Renders a subject (text, CR/LF folded into one space). */
export function renderSubject(source: string, vars: TemplateVars): string {
  return inPart('subject', () => compileTemplate(source, 'text')(vars).replace(/[\r\n]+/g, ' '))
}

/** Runs a part's render, naming the part on a RenderLimitError it throws. */
function inPart<T>(part: 'subject' | 'body', fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof RenderLimitError && !err.part) err.part = part
    throw err
  }
}

/**
 * A render that exceeded a budget (or a stored source that no longer compiles) as the API's 422 (src/errors.ts):
 * VALIDATION_ERROR, field `subject` or `body`, code `render_<limit>_limit` (`work`, `output`, `time`,
 * `depth`) or `invalid_template`, the message naming the limit. Other errors are returned as they are.
 */
export function renderRefusal(err: unknown): unknown {
  if (err instanceof RenderLimitError) {
    const field = err.part ?? 'body'
    const message = `${field}: ${err.message}`
    return validation([{ field, message, code: `render_${err.limit}_limit` }], message)
  }
  if (err instanceof TemplateSyntaxError) {
    const message = `the template does not compile: ${err.message}`
    return validation([{ field: 'body', message, code: 'invalid_template' }], message)
  }
  return err
}

/**
 * Renders a message: subject, HTML body and its plain-text alternative. Sources must have passed
 * validateTemplateSource (at save time, or before queueing inline content); otherwise a
 * TemplateSyntaxError is thrown here. A Markdown body's text alternative is converted from its HTML.
 */
export function renderEmail(src: MessageSource, vars: TemplateVars): RenderedEmail {
  const subject = renderSubject(src.subject, vars)
  return inPart('body', () => {
    if (src.format === 'markdown') {
      const html = compileTemplate(src.body, 'markdown')(vars)
      return { subject, html, text: htmlToText(html) }
    }
    const entry = compileEntry(src.body, 'html') as Extract<Compiled, { kind: 'html' }>
    const html = entry.body.html(vars)
    const text = entry.body.text ? renderDerivedText(entry.body.text, vars) : htmlToText(html)
    return { subject, html, text }
  })
}

export interface MessageSource { subject: string; body: string; format?: BodyFormat }

/** Bodies longer than this are heavy whatever they hold: compiling and converting them costs milliseconds. */
export const HEAVY_SOURCE_CHARS = 64 * 1024

/**
 * True when a body can cost more than a little, linear work to compile or render: Markdown (its parser is
 * superlinear on some inputs), `each` anywhere in it (an `{{#each}}`, whose work depends on the data; a
 * textual check, so that deciding costs no compile), or a source over HEAVY_SOURCE_CHARS. Such a body is
 * compiled and rendered in a render thread (pool.ts). Subjects are always light (no `{{#each}}`, at most
 * 998 characters).
 */
export function isHeavy(src: { body?: string | null; format?: BodyFormat }): boolean {
  if (src.body == null) return false
  return src.format === 'markdown' || src.body.length > HEAVY_SOURCE_CHARS || src.body.includes('each')
}
