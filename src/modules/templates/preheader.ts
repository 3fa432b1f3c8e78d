import { t } from 'elysia'

/**
 * Preheaders: the preview text an inbox shows after the subject. It is kept as a field of
 * templates and campaigns and, so that every way of sending them shows it without knowing about it (the
 * send API, workflows, campaign fan-out in the signer threads), as a hidden block at the top of `body`
 * between two marker comments: saving a preheader puts the block there (replacing an earlier one), saving
 * none takes it out. Merge tags in it render like the body's.
 */

export const Preheader = t.String({
  maxLength: 255, pattern: '^[^\\r\\n]*$',
  error: 'preheader must be at most 255 characters without line breaks',
  description: 'Inbox preview text, shown after the subject; merge tags allowed. The body gets it as a hidden block at its top (and loses the block when the preheader is null or left out of a PUT).',
})

const START = '<!--mailctl:preheader-->'
const END = '<!--/mailctl:preheader-->'
const BLOCK = /<!--mailctl:preheader-->[\s\S]*?<!--\/mailctl:preheader-->/g
/** Fillers after the text keep the start of the body out of the preview in clients that show more. */
const FILLER = '&#847;&zwnj;&nbsp;'.repeat(40)

/** HTML-escapes the text, leaving merge tags `{{…}}` as written. */
function escapeKeepingTags(s: string): string {
  let out = ''
  let last = 0
  for (const m of s.matchAll(/\{\{\{?[^{}]*\}?\}\}/g)) {
    out += s.slice(last, m.index).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;') + m[0]
    last = m.index + m[0].length
  }
  return out + s.slice(last).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** The body without a preheader block. */
export function withoutPreheader(body: string): string {
  return body.indexOf(START) === -1 ? body : body.replace(BLOCK, '')
}

/** The body with `preheader` as its hidden first block (after `<body …>` when it has one), or without any. */
export function withPreheader(body: string, preheader: string | null | undefined): string {
  const bare = withoutPreheader(body)
  if (!preheader) return bare
  const block = `${START}<div style="display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all">${escapeKeepingTags(preheader)}${FILLER}</div>${END}`
  const open = /<body[^>]*>/i.exec(bare)
  if (!open) return block + bare
  const at = open.index + open[0].length
  return bare.slice(0, at) + block + bare.slice(at)
}
