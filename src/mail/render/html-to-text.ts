/**
 * A small HTML to plain-text conversion, for the text/plain alternative of every message. In its marked
 * mode it converts a template source whose Handlebars constructs are replaced by marks (marks.ts), the
 * first step of deriving the text alternative as a template (text.ts).
 */
import { HARD_BREAK, LINE_BREAK, LINK_CLOSE, LINK_OPEN, MARK_RE, MARK_SILENT, PARAGRAPH_BREAK, SILENT_ONLY } from './marks'

const hasOwn = Object.prototype.hasOwnProperty

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
      // Half of a surrogate pair is no character: U+FFFD, as a browser reads it (HTML, numeric character
      // reference end state), and as no store can hold it (src/storable.ts).
      if (code >= 0xd800 && code <= 0xdfff) return '\uFFFD'
      if (code === 0xa0) return ' '
      if (code === 0x200c || code === 0x200d || code === 0xad || code === 0x34f || code === 0x200b || code === 0xfeff) return ''
      return String.fromCodePoint(code)
    }
    const key = hasOwn.call(NAMED_ENTITIES, e) ? e : e.toLowerCase()
    return hasOwn.call(NAMED_ENTITIES, key) ? NAMED_ENTITIES[key] : m
  })
}

const isAlpha = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122)

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
  let re = ATTR_RE[name]
  if (!re) {
    re = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i')
    ATTR_RE[name] = re
  }
  const m = re.exec(tag)
  return m ? decodeEntities(m[1] ?? m[2] ?? m[3] ?? '') : null
}

/**
 * Folds the output's whitespace: no trailing spaces, at most one blank line, no leading or trailing blank
 * lines. Linear in its input: a regular expression for the trailing blanks (`[ \t]+\n`) re-scans a long
 * run of blanks from each of its positions when no line break follows (a <pre> of spaces).
 */
function tidyText(s: string): string {
  const lines = s.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    let end = line.length
    while (end > 0) {
      const c = line.charCodeAt(end - 1)
      if (c !== 32 && c !== 9) break
      end--
    }
    if (end !== line.length) lines[i] = line.slice(0, end)
  }
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trim()
}

/**
 * A list's `start` or an item's `value`: an integer, or null. In a template a value that holds a
 * construct is known only at render time: the derivation is then not faithful.
 */
function listNumber(value: string | null, marked: Marked | null): number | null {
  if (value === null) return null
  if (marked && /[\uE000\uE002]/.test(value)) { marked.unfaithful = true; return null }
  const m = /^\s*([+-]?\d{1,9})/.exec(value)
  return m ? Number(m[1]) : null
}

/**
 * Links nested deeper than this (invalid HTML: browsers do not nest anchors) keep their text but get no
 * " [url]": each open link's label is joined from the output when it closes, which would make deeply
 * nested links cost the square of their depth.
 */
const MAX_NESTED_LINKS = 8

/**
 * A small HTML to plain-text conversion for the text/plain alternative: paragraphs and line breaks,
 * list items as "* " (in an ordered list "1. ", "2. "..., following `start` and an item's `value`),
 * links as "text [url]", images as their alt text, head/style/script and display:none content dropped,
 * entities decoded, whitespace collapsed (kept inside <pre>).
 */
export function htmlToText(html: string): string {
  return tidyText(convertHtml(html, null).text)
}

/**
 * The state of a marked conversion: `gaps[i]` is the source of the construct marked `i`; `unfaithful` and
 * `linkMarks` are set by the conversion (see convertHtml).
 */
export interface Marked { gaps: string[]; unfaithful: boolean; linkMarks: boolean }

/**
 * The conversion of plain HTML (`marked` null), or of a marked template source (constructs replaced by
 * marks). In the marked mode line and paragraph breaks are written as the sentinels LINE_BREAK /
 * PARAGRAPH_BREAK, folded later (see foldBreaks in text.ts), because a break that meets a block tag can
 * only be settled once the block has rendered. `unfaithful` is set when the result could differ from
 * converting the rendered HTML in more than whitespace.
 */
export function convertHtml(html: string, marked: Marked | null): { text: string } {
  const out: string[] = []
  let last = ''
  let pendingBreak = 0
  let pre = 0
  let skip: { name: string; depth: number } | null = null
  const links: Array<{ href: string | null; at: number }> = []
  // Open lists, innermost last: an ordered one holds its next number (null: unordered).
  const lists: Array<{ next: number } | null> = []
  let ordered = 0
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
      // In a template, a block inside an ordered list can repeat or drop items: their numbers are known
      // only once it has rendered.
      if (marked && ordered && chunk.indexOf(MARK_SILENT[0]) !== -1) marked.unfaithful = true
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
    const first = html.charCodeAt(lt + 1)
    if (!(isAlpha(first) || first === 47 /* / */ || first === 33 /* ! */ || first === 63 /* ? */)) {
      // A "<" that opens no tag is text.
      if (!skip) emit('<')
      i = lt + 1
      continue
    }
    const gt = html.indexOf('>', lt + 1)
    if (gt === -1) break
    i = gt + 1
    const tag = html.slice(lt, gt + 1)
    // The name: a letter, then letters, digits and "-" (a scan: this runs once per tag of tenant HTML).
    const closing = first === 47
    const nameStart = closing ? lt + 2 : lt + 1
    if (!isAlpha(html.charCodeAt(nameStart))) continue
    let nameEnd = nameStart + 1
    for (let c = html.charCodeAt(nameEnd); isAlpha(c) || (c >= 48 && c <= 57) || c === 45; c = html.charCodeAt(++nameEnd));
    const name = html.slice(nameStart, nameEnd).toLowerCase()
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
      if (!closing) links.push({ href: links.length < MAX_NESTED_LINKS ? attr(tag, 'href') : null, at: out.length })
      else {
        const link = links.pop()
        const href = link?.href?.trim()
        if (link && href && !href.startsWith('#') && !/^javascript:/i.test(href)) {
          const target = href.replace(/^mailto:/i, '')
          // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0001-U+0003 are the pending-break marks of marks.ts, removed from a link's label
          const label = out.slice(link.at).join('').replace(/[\u0001-\u0003]/g, '').trim()
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
    if (name === 'ol' || name === 'ul') {
      if (!closing) {
        let list: { next: number } | null = null
        if (name === 'ol') {
          list = { next: listNumber(attr(tag, 'start'), marked) ?? 1 }
          ordered++
        }
        lists.push(list)
      } else if (lists.length) {
        if (lists.pop()) ordered--
      }
    }
    if (name === 'li' && !closing) {
      breakLine(1)
      const list = lists.length ? lists[lists.length - 1] : null
      if (list) {
        const value = listNumber(attr(tag, 'value'), marked)
        if (value !== null) list.next = value
        emit(`${list.next}. `)
        list.next++
      } else emit('* ')
      continue
    }
    if (name === 'td' || name === 'th') { if (closing) emit(' '); continue }
    if (PARAGRAPH.has(name)) { breakLine(2); continue }
    if (LINE.has(name)) breakLine(1)
  }
  return { text: out.join('') }
}
