/**
 * Markdown bodies (`type: "markdown"` on POST /v1/send) and Markdown in the API's own descriptions
 * (/docs), both through marked (CommonMark with GitHub's extensions).
 *
 * A Markdown body is rendered in two steps: Handlebars first (blocks decide the structure with the real
 * values), then Markdown. Values must stay text whatever they hold: a contact's `**`, `[a](b)`, `# `,
 * `<b>` or a line break must not become markup. So every character of a value that Markdown or HTML
 * could read as syntax (ASCII punctuation, spaces, line breaks) is swapped for a private-use stand-in
 * before Markdown runs, and swapped back in the HTML it produced: `<`, `>`, `&`, `"` and `'` as entities,
 * the others as they are. `{{{value}}}` is escaped too in a Markdown body: raw HTML comes only from the
 * source, where it passes through as Markdown allows (the sender can send any HTML with `type: "html"`).
 */
import { Marked, type Tokens } from 'marked'
import { escapeHtml, MARKDOWN_MAX_DEPTH, outputLimitError, RENDER_MAX_OUTPUT, RenderLimitError, walk, type Program, type TemplateVars } from './sandbox'

/** Stand-ins: U+F700 + the character code, for the characters below (all of them < 0x80). */
const STAND_IN_BASE = 0xf700
const STAND_IN_RANGE = /[\uF700-\uF77F]/g
/** What Markdown or HTML could read as syntax in a value: ASCII punctuation, spaces and line breaks. */
const SYNTAX_CHARS = /[\t\n\r !-/:-@[-`{-~]/g
/** A stand-in percent-encoded by marked inside a link destination (UTF-8 EF 9C/9D 80-BF). */
const STAND_IN_ENCODED = /%EF%9[CD]%[89AB][0-9A-F]/gi
/** What a stand-in becomes in the HTML: the HTML-special characters as entities, the others as they are. */
const RESTORED: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

function toStandIns(s: string): string {
  return s.replace(STAND_IN_RANGE, '').replace(SYNTAX_CHARS, (c) => String.fromCharCode(STAND_IN_BASE + c.charCodeAt(0)))
}

function restore(standIn: string): string {
  const c = String.fromCharCode(standIn.charCodeAt(0) - STAND_IN_BASE)
  return RESTORED[c] ?? c
}

function fromStandIns(html: string): string {
  return html.replace(STAND_IN_ENCODED, (m) => decodeURIComponent(m)).replace(STAND_IN_RANGE, restore)
}

/** Every string of the variables (deeply, keys untouched) with its Markdown syntax made inert. */
function inertValues(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return toStandIns(v)
  if (v === null || typeof v !== 'object' || depth > 64) return v
  if (Array.isArray(v)) return v.map((x) => inertValues(x, depth + 1))
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v)) out[k] = inertValues((v as Record<string, unknown>)[k], depth + 1)
  return out
}

/** Makes every `{{{value}}}` and `{{& value}}` of a Markdown body an escaped `{{value}}`. */
export function escapeAllOutputs(ast: Program): Program {
  walk(ast, (n) => {
    if (n.type === 'MustacheStatement') (n as hbs.AST.MustacheStatement).escaped = true
  })
  return ast
}

const bodyMarked = new Marked({ gfm: true, breaks: false, async: false })

/**
 * Turns a Handlebars render function of a Markdown body (compiled from escapeAllOutputs' tree, with
 * escaping on) into one that returns the body's HTML.
 */
export function markdownBody(render: (vars: TemplateVars) => string): (vars: TemplateVars) => string {
  return (vars) => {
    const source = render(inertValues(vars) as TemplateVars)
    checkMarkdownDepth(source)
    let html: string
    try {
      html = fromStandIns(bodyMarked.parse(source, { async: false }))
    } catch (err) {
      // The parser recurses per level of inline nesting too; its stack is the last bound.
      if (err instanceof RangeError) throw new RenderLimitError('depth', `the Markdown is nested too deeply to render (${err.message.split('\n')[0]})`)
      throw err
    }
    if (html.length > RENDER_MAX_OUTPUT) throw outputLimitError(RENDER_MAX_OUTPUT)
    return html
  }
}

const isBlank = (c: number) => c === 32 || c === 9
const isDigit = (c: number) => c >= 48 && c <= 57

/**
 * Refuses Markdown whose block containers nest deeper than MARKDOWN_MAX_DEPTH on some line: the block
 * quote and list markers at the line's start, plus its indentation (a level per four columns). One pass.
 */
export function checkMarkdownDepth(source: string): void {
  const len = source.length
  let i = 0
  while (i < len) {
    let depth = 0
    let columns = 0
    for (;;) {
      while (i < len && isBlank(source.charCodeAt(i))) { columns += source.charCodeAt(i) === 9 ? 4 : 1; i++ }
      const c = source.charCodeAt(i)
      if (c === 62 /* > */) { depth++; i++; continue }
      if ((c === 45 || c === 43 || c === 42) && isBlank(source.charCodeAt(i + 1))) { depth++; i += 2; continue }
      if (isDigit(c)) {
        let j = i
        while (j < len && j - i < 10 && isDigit(source.charCodeAt(j))) j++
        const d = source.charCodeAt(j)
        if ((d === 46 || d === 41) && isBlank(source.charCodeAt(j + 1))) { depth++; i = j + 2; continue }
      }
      break
    }
    if (depth + Math.floor(columns / 4) > MARKDOWN_MAX_DEPTH) {
      throw new RenderLimitError('depth', `the Markdown nests block quotes and lists deeper than ${MARKDOWN_MAX_DEPTH} levels`)
    }
    const nl = source.indexOf('\n', i)
    i = nl === -1 ? len : nl + 1
  }
}

/**
 * Markdown of the API's own texts (OpenAPI descriptions) to HTML. Raw HTML in them is shown as text,
 * not interpreted: the texts are ours, but nothing in them should be able to become markup by accident.
 */
const textMarked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text)
    },
  },
})

export function markdownToHtml(markdown: string): string {
  return textMarked.parse(markdown, { async: false })
}

/** The same for a short text shown inline (a summary): no surrounding paragraph. */
export function markdownInlineToHtml(markdown: string): string {
  return textMarked.parseInline(markdown, { async: false })
}
