/**
 * The visual editor's document and the email HTML made from it. The document is what the API
 * stores as `design`; `designToHtml` gives the `body` that is sent: tables for layout, inline styles, a
 * 600 px column that narrows on phones, and Outlook's conditional fixed-width wrapper.
 */
import { t } from '../i18n'

export type BlockType = 'heading' | 'text' | 'button' | 'image' | 'divider' | 'spacer' | 'columns' | 'social' | 'footer' | 'html'

export interface BlockStyle {
  color?: string
  background?: string
  font?: string
  fontSize?: number
  align?: 'left' | 'center' | 'right'
  padding?: number
  /** Button and image width in percent of the column (100 = full width). */
  width?: number
}

export interface SocialLink { network: string; url: string }

export interface Block {
  id: string
  type: BlockType
  style: BlockStyle
  /** heading: text (merge tags allowed); button: its label. */
  text?: string
  level?: 1 | 2 | 3
  /** text and footer: inline HTML (p, br, strong, em, u, a, ul, ol, li); html: raw HTML. */
  html?: string
  /** button and image: the link. */
  url?: string
  src?: string
  alt?: string
  height?: number
  columns?: Block[][]
  links?: SocialLink[]
}

export interface Settings {
  width: number
  background: string
  contentBackground: string
  font: string
  textColor: string
  linkColor: string
}

export interface Design {
  version: 1
  mode: 'visual' | 'markdown'
  settings: Settings
  blocks: Block[]
  /** mode markdown: the source. */
  markdown?: string
}

export const FONTS: Record<string, string> = {
  Sans: 'Helvetica, Arial, sans-serif',
  Serif: 'Georgia, \'Times New Roman\', serif',
  Mono: '\'Courier New\', Courier, monospace',
  Rounded: '\'Trebuchet MS\', Helvetica, sans-serif',
}

export const DEFAULT_SETTINGS: Settings = {
  width: 600, background: '#f4f4f5', contentBackground: '#ffffff', font: 'Sans', textColor: '#1f2937', linkColor: '#2563eb',
}

let seq = 0
export const newId = () => `b${Date.now().toString(36)}${(seq++).toString(36)}`

/** A new block of `type`, with the text it starts with in the language in effect (the catalogue's `ed.def.*`). */
export function newBlock(type: BlockType, n = 2): Block {
  const id = newId()
  switch (type) {
    case 'heading': return { id, type, text: t('ed.def.heading'), level: 1, style: { align: 'left', padding: 16 } }
    case 'text': return { id, type, html: t('ed.def.text'), style: { padding: 16 } }
    case 'button': return { id, type, text: t('ed.def.button'), url: 'https://example.com', style: { align: 'center', background: '#2563eb', color: '#ffffff', padding: 16 } }
    case 'image': return { id, type, src: '', alt: '', url: '', style: { align: 'center', width: 100, padding: 16 } }
    case 'divider': return { id, type, style: { color: '#e5e7eb', padding: 16 } }
    case 'spacer': return { id, type, height: 24, style: {} }
    case 'columns': return { id, type, columns: Array.from({ length: n }, () => [newBlock('text')]), style: { padding: 8 } }
    case 'social': return { id, type, links: [{ network: 'X', url: 'https://x.com/' }, { network: 'LinkedIn', url: 'https://www.linkedin.com/' }], style: { align: 'center', padding: 16 } }
    case 'footer': return { id, type, html: t('ed.def.footer'), style: { align: 'center', color: '#6b7280', fontSize: 12, padding: 16 } }
    case 'html': return { id, type, html: t('ed.def.html'), style: {} }
  }
}

export function emptyDesign(): Design {
  return {
    version: 1, mode: 'visual', settings: { ...DEFAULT_SETTINGS },
    blocks: [
      { ...newBlock('heading'), text: t('ed.def.greeting') },
      { ...newBlock('text'), html: t('ed.def.body') },
      newBlock('footer'),
    ],
  }
}

/** Reads a stored design; null for anything this editor did not write (the page then opens the HTML). */
export function asDesign(v: unknown): Design | null {
  if (!v || typeof v !== 'object') return null
  const d = v as Partial<Design>
  if (d.version !== 1 || !Array.isArray(d.blocks) || (d.mode !== 'visual' && d.mode !== 'markdown')) return null
  return { version: 1, mode: d.mode, settings: { ...DEFAULT_SETTINGS, ...(d.settings ?? {}) }, blocks: d.blocks, markdown: d.markdown }
}

// ---- tree helpers (blocks nest one level, inside columns) ----

export function mapBlocks(blocks: Block[], id: string, f: (b: Block) => Block | null): Block[] {
  const out: Block[] = []
  for (const b of blocks) {
    if (b.id === id) {
      const r = f(b)
      if (r) out.push(r)
      continue
    }
    out.push(b.columns ? { ...b, columns: b.columns.map((c) => mapBlocks(c, id, f)) } : b)
  }
  return out
}

export function findBlock(blocks: Block[], id: string): Block | null {
  for (const b of blocks) {
    if (b.id === id) return b
    for (const c of b.columns ?? []) {
      const hit = findBlock(c, id)
      if (hit) return hit
    }
  }
  return null
}

/** Moves the block `id` to index `to` of the list that holds it. */
export function moveBlock(blocks: Block[], id: string, to: number): Block[] {
  const i = blocks.findIndex((b) => b.id === id)
  if (i >= 0) {
    const next = blocks.slice()
    const [b] = next.splice(i, 1)
    next.splice(Math.max(0, Math.min(to, next.length)), 0, b)
    return next
  }
  return blocks.map((b) => (b.columns ? { ...b, columns: b.columns.map((c) => moveBlock(c, id, to)) } : b))
}

export function indexOf(blocks: Block[], id: string): { list: Block[]; index: number } | null {
  const i = blocks.findIndex((b) => b.id === id)
  if (i >= 0) return { list: blocks, index: i }
  for (const b of blocks) for (const c of b.columns ?? []) {
    const hit = indexOf(c, id)
    if (hit) return hit
  }
  return null
}

// ---- HTML ----

/** Escapes text for HTML, leaving merge tags `{{…}}` as written (Handlebars reads them before the HTML). */
export function escapeText(s: string): string {
  return splitTags(s).map(([tag, part]) => (tag ? cleanTag(part) : part.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'))).join('')
}

/** Escapes an attribute value; inside merge tags a double quote becomes a single one (both are fallback quotes). */
export function escapeAttr(s: string): string {
  return splitTags(s).map(([tag, part]) => (tag ? cleanTag(part).replace(/"/g, '\'') : part.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;'))).join('')
}

/** [isTag, text] runs of a string: merge tags `{{…}}` / `{{{…}}}` and the text between them. */
function splitTags(s: string): Array<[boolean, string]> {
  const out: Array<[boolean, string]> = []
  let last = 0
  for (const m of s.matchAll(/\{\{\{?[^{}]*\}?\}\}/g)) {
    if (m.index > last) out.push([false, s.slice(last, m.index)])
    out.push([true, m[0]])
    last = m.index + m[0].length
  }
  if (last < s.length) out.push([false, s.slice(last)])
  return out
}

/** A merge tag as typed in a rich text field: non-breaking spaces and entities the browser added undone. */
function cleanTag(tag: string): string {
  return tag.replace(/\u00a0|&nbsp;/g, ' ').replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>')
}

const px = (n: number | undefined, d: number) => `${n ?? d}px`

function fontOf(b: BlockStyle, s: Settings) {
  return FONTS[b.font ?? s.font] ?? FONTS.Sans
}

const ALLOWED = new Set(['P', 'BR', 'STRONG', 'B', 'EM', 'I', 'U', 'A', 'UL', 'OL', 'LI', 'SPAN', 'H1', 'H2', 'H3', 'H4', 'BLOCKQUOTE', 'CODE', 'PRE', 'HR', 'IMG', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'DEL', 'S'])

/**
 * Rich text made email-safe: only the tags above (others are unwrapped, scripts and styles dropped), links
 * keep href only, and every element gets inline styles (mail clients drop <style> and class names).
 */
export function inlineRichText(html: string, st: { color: string; link: string; font: string; size: number; align: string }): string {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html')
  const walk = (el: Element) => {
    for (const child of [...el.children]) {
      if (child.tagName === 'SCRIPT' || child.tagName === 'STYLE' || child.tagName === 'IFRAME' || child.tagName === 'OBJECT') { child.remove(); continue }
      walk(child)
      if (!ALLOWED.has(child.tagName)) { child.replaceWith(...child.childNodes); continue }
      const keep: Record<string, string> = {}
      if (child.tagName === 'A') keep.href = child.getAttribute('href') ?? ''
      if (child.tagName === 'IMG') { keep.src = child.getAttribute('src') ?? ''; keep.alt = child.getAttribute('alt') ?? '' }
      for (const a of [...child.attributes]) child.removeAttribute(a.name)
      for (const [k, v] of Object.entries(keep)) child.setAttribute(k, v)
      const style = TAG_STYLES[child.tagName]?.(st)
      if (style) child.setAttribute('style', style)
      if (child.tagName === 'A') child.setAttribute('target', '_blank')
    }
  }
  walk(doc.body)
  // Merge tags in attributes were quoted by the serializer: put them back as Handlebars wants them.
  // Merge tags as Handlebars wants them: in text the serializer's entities undone, in attributes the
  // fallback's double quotes made single (an attribute cannot hold them).
  const TAG = /\{\{\{?[^{}]*\}?\}\}/g
  return doc.body.innerHTML.replace(/<[^>]*>|[^<]+/g, (run) => (run.startsWith('<')
    ? run.replace(TAG, (t) => cleanTag(t).replace(/"/g, '\''))
    : run.replace(TAG, (t) => cleanTag(t))))
}

type St = { color: string; link: string; font: string; size: number; align: string }
const TAG_STYLES: Record<string, (s: St) => string> = {
  P: (s) => `margin:0 0 12px 0;font-family:${s.font};font-size:${s.size}px;line-height:1.5;color:${s.color};text-align:${s.align}`,
  A: (s) => `color:${s.link};text-decoration:underline`,
  UL: (s) => `margin:0 0 12px 0;padding:0 0 0 24px;font-family:${s.font};font-size:${s.size}px;line-height:1.5;color:${s.color}`,
  OL: (s) => `margin:0 0 12px 0;padding:0 0 0 24px;font-family:${s.font};font-size:${s.size}px;line-height:1.5;color:${s.color}`,
  LI: () => 'margin:0 0 4px 0',
  H1: (s) => `margin:0 0 12px 0;font-family:${s.font};font-size:28px;line-height:1.25;color:${s.color}`,
  H2: (s) => `margin:0 0 12px 0;font-family:${s.font};font-size:22px;line-height:1.3;color:${s.color}`,
  H3: (s) => `margin:0 0 12px 0;font-family:${s.font};font-size:18px;line-height:1.3;color:${s.color}`,
  BLOCKQUOTE: (s) => `margin:0 0 12px 0;padding:0 0 0 12px;border-left:3px solid #d1d5db;color:${s.color}`,
  PRE: () => 'margin:0 0 12px 0;padding:12px;background:#f3f4f6;font-family:\'Courier New\',monospace;font-size:13px;white-space:pre-wrap',
  CODE: () => 'font-family:\'Courier New\',monospace;font-size:13px',
  HR: () => 'border:0;border-top:1px solid #e5e7eb;margin:16px 0',
  IMG: () => 'max-width:100%;height:auto;border:0',
  TD: (s) => `padding:4px 8px;border:1px solid #e5e7eb;font-family:${s.font};font-size:${s.size}px`,
  TH: (s) => `padding:4px 8px;border:1px solid #e5e7eb;font-family:${s.font};font-size:${s.size}px;text-align:left`,
}

function blockHtml(b: Block, s: Settings, inner: number): string {
  const st = b.style ?? {}
  const align = st.align ?? 'left'
  const font = fontOf(st, s)
  const color = st.color ?? s.textColor
  const pad = px(st.padding, 0)
  const bg = st.background ? `background-color:${st.background};` : ''
  const cell = (content: string, cellBg = bg) => `<tr><td align="${align}" style="${cellBg}padding:${pad}">${content}</td></tr>`
  switch (b.type) {
    case 'heading': {
      const size = st.fontSize ?? ({ 1: 28, 2: 22, 3: 18 } as const)[b.level ?? 1]
      return cell(`<h${b.level ?? 1} style="margin:0;font-family:${font};font-size:${size}px;line-height:1.25;font-weight:bold;color:${color};text-align:${align}">${escapeText(b.text ?? '')}</h${b.level ?? 1}>`)
    }
    case 'text':
    case 'footer':
      return cell(inlineRichText(b.html ?? '', { color, link: b.type === 'footer' ? color : s.linkColor, font, size: st.fontSize ?? (b.type === 'footer' ? 12 : 16), align }))
    case 'button': {
      // The style's background is the button's fill, not the row's.
      const w = st.width && st.width < 100 ? ` width="${st.width}%"` : ''
      const fill = st.background ?? '#2563eb'
      return cell(`<table role="presentation" cellpadding="0" cellspacing="0" border="0" align="${align}"${w} style="margin:0 ${align === 'center' ? 'auto' : '0'}"><tr><td align="center" bgcolor="${fill}" style="border-radius:6px;background-color:${fill}"><a href="${escapeAttr(b.url ?? '')}" target="_blank" style="display:block;padding:12px 24px;font-family:${font};font-size:${st.fontSize ?? 16}px;font-weight:bold;line-height:1.2;color:${st.color ?? '#ffffff'};text-decoration:none;border-radius:6px">${escapeText(b.text ?? '')}</a></td></tr></table>`, '')
    }
    case 'image': {
      if (!b.src) return ''
      const wpx = Math.round((inner - 2 * (st.padding ?? 0)) * ((st.width ?? 100) / 100))
      const img = `<img src="${escapeAttr(b.src)}" alt="${escapeAttr(b.alt ?? '')}" width="${wpx}" style="display:block;width:100%;max-width:${wpx}px;height:auto;border:0;outline:none;text-decoration:none;${align === 'center' ? 'margin:0 auto' : align === 'right' ? 'margin:0 0 0 auto' : ''}">`
      return cell(b.url ? `<a href="${escapeAttr(b.url)}" target="_blank">${img}</a>` : img)
    }
    case 'divider':
      return cell(`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr><td style="border-top:${st.fontSize ?? 1}px solid ${st.color ?? '#e5e7eb'};font-size:0;line-height:0">&nbsp;</td></tr></table>`)
    case 'spacer':
      return `<tr><td style="${bg}height:${b.height ?? 24}px;font-size:0;line-height:0">&nbsp;</td></tr>`
    case 'social': {
      const links = (b.links ?? []).filter((l) => l.url).map((l) => `<a href="${escapeAttr(l.url)}" target="_blank" style="display:inline-block;margin:0 4px;padding:6px 12px;border-radius:14px;background-color:#eef2ff;font-family:${font};font-size:13px;color:${st.color ?? s.linkColor};text-decoration:none">${escapeText(l.network)}</a>`)
      return cell(links.join(''))
    }
    case 'columns': {
      const cols = b.columns ?? []
      const w = Math.floor(100 / Math.max(1, cols.length))
      const colPx = Math.floor((inner - 2 * (st.padding ?? 0)) / Math.max(1, cols.length))
      const tds = cols.map((c) => `<td class="mc-col" width="${w}%" valign="top" style="width:${w}%;vertical-align:top"><table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">${c.map((x) => blockHtml(x, s, colPx)).join('')}</table></td>`)
      return cell(`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr>${tds.join('')}</tr></table>`)
    }
    case 'html':
      return `<tr><td style="${bg}padding:${pad}">${b.html ?? ''}</td></tr>`
  }
}

/** The email: a full HTML document, tables and inline styles, `settings.width` wide (600 by default). */
export function designToHtml(d: Design, contentHtml?: string): string {
  const s = d.settings
  const w = s.width || 600
  const rows = contentHtml !== undefined
    ? `<tr><td style="padding:24px">${inlineRichText(contentHtml, { color: s.textColor, link: s.linkColor, font: FONTS[s.font] ?? FONTS.Sans, size: 16, align: 'left' })}</td></tr>`
    : d.blocks.map((b) => blockHtml(b, s, w)).join('\n')
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="x-apple-disable-message-reformatting"><title></title>
<style>@media only screen and (max-width:${w + 20}px){.mc-container{width:100%!important}.mc-col{display:block!important;width:100%!important}}</style></head>
<body style="margin:0;padding:0;background-color:${s.background}">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:${s.background}"><tr><td align="center" style="padding:24px 8px">
<!--[if mso]><table role="presentation" width="${w}" cellpadding="0" cellspacing="0" border="0"><tr><td><![endif]-->
<table role="presentation" class="mc-container" width="${w}" cellpadding="0" cellspacing="0" border="0" style="width:${w}px;max-width:${w}px;background-color:${s.contentBackground};font-family:${FONTS[s.font] ?? FONTS.Sans};color:${s.textColor}">
${rows}
</table>
<!--[if mso]></td></tr></table><![endif]-->
</td></tr></table>
</body></html>`
}
