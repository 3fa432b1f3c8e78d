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
 *
 * Subjects are text: not escaped, CR/LF in the result become one space. Bodies are HTML-escaped.
 */
import { validation, type FieldError } from '../../errors'
import { compileEntry, compileTemplate, type Compiled } from './cache'
import { htmlToText } from './html-to-text'
import { TemplateSyntaxError, type TemplateKind, type TemplateVars } from './sandbox'
import { renderDerivedText } from './text'

export { clearRenderCache, compileTemplate, RENDER_CACHE_MAX_CHARS, RENDER_CACHE_MAX_ENTRIES, renderCacheStats, textStrategy } from './cache'
export { htmlToText } from './html-to-text'
export { markdownInlineToHtml, markdownToHtml } from './markdown'
export {
  escapeHtml, MAX_TEMPLATE_EXPRESSIONS, MAX_TEMPLATE_NESTING, TemplateSyntaxError, type RenderFn, type TemplateKind, type TemplateVars,
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
  return compileTemplate(source, 'text')(vars).replace(/[\r\n]+/g, ' ')
}

/**
 * Renders a message: subject, HTML body and its plain-text alternative. Sources must have passed
 * validateTemplateSource (at save time, or before queueing inline content); otherwise a
 * TemplateSyntaxError is thrown here. A Markdown body's text alternative is converted from its HTML.
 */
export function renderEmail(src: { subject: string; body: string; format?: BodyFormat }, vars: TemplateVars): RenderedEmail {
  if (src.format === 'markdown') {
    const html = compileTemplate(src.body, 'markdown')(vars)
    return { subject: renderSubject(src.subject, vars), html, text: htmlToText(html) }
  }
  const entry = compileEntry(src.body, 'html') as Extract<Compiled, { kind: 'html' }>
  const html = entry.body.html(vars)
  let text: string
  if (entry.body.text) {
    text = renderDerivedText(entry.body.text, vars)
  } else {
    text = htmlToText(html)
  }
  return { subject: renderSubject(src.subject, vars), html, text }
}

