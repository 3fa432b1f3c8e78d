/**
 * Click and open tracking in an email's HTML, applied by the sending pipeline when the email is built
 * for a project with tracking on (projects.tracking_enabled): every absolute http(s) link of an <a> or
 * <area> becomes a signed click URL (the target is inside the token: src/mail/links.ts), and a 1x1
 * pixel goes before </body>. With tracking off the HTML is returned unchanged: no pixel, no rewritten link.
 *
 * Left alone: mailto:, tel:, anchors and other non-http links, mailctl's own links (subscription pages and
 * tracking URLs under MAILCTL_PUBLIC_URL), and any link whose tag carries `data-notrack`.
 */
import { checkedClickUrl, isTrackableUrl, LINK_PATHS, openPixelUrl, type LinkDeps } from '../../mail/links'

export interface RewriteInput<H extends string | null | undefined = string> {
  emailId: string
  html: H
  trackingEnabled: boolean
}

const TAG_RE = /<(a|area)\b(?:[^>"']|"[^"]*"|'[^']*')*>/gi
const HREF_RE = /(\shref\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))/i
const NOTRACK_RE = /\sdata-notrack(?:[\s=>/]|$)/i

const NAMED: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>', nbsp: '\u00a0' }

/** Decodes the character references an attribute value may use (what a browser would follow). */
export function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return NAMED[ref.toLowerCase()] ?? whole
  })
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

function ownLink(deps: LinkDeps, url: string): boolean {
  const base = deps.config.publicUrl
  if (!url.startsWith(`${base}/`)) return false
  const path = url.slice(base.length)
  return Object.values(LINK_PATHS).some((p) => path === p || path.startsWith(`${p}/`))
}

/**
 * The targets a link tag may be rewritten to, by the tag's text: null when the tag stays as written.
 * Shared by every email (a campaign's links repeat in each of its messages): what is left per email is
 * the token. Bounded (tags up to TAG_CACHE_CHARS long, TARGETS_MAX of them: a few MB at most per
 * thread); cleared when full. The public URL is part of the key (ownLink depends on it).
 */
const targets = new Map<string, { before: string; target: string; after: string } | null>()
const TARGETS_MAX = 4096
const TAG_CACHE_CHARS = 512

function tagTarget(deps: LinkDeps, tag: string): { before: string; target: string; after: string } | null {
  const key = `${deps.config.publicUrl}\0${tag}`
  let t = targets.get(key)
  if (t !== undefined) return t
  t = null
  const m = NOTRACK_RE.test(tag) ? null : HREF_RE.exec(tag)
  if (m) {
    const target = decodeAttribute(m[2] ?? m[3] ?? m[4] ?? '').trim()
    if (isTrackableUrl(target) && !ownLink(deps, target)) t = { before: tag.slice(0, m.index) + m[1], target, after: tag.slice(m.index + m[0].length) }
  }
  if (tag.length > TAG_CACHE_CHARS) return t
  if (targets.size >= TARGETS_MAX) targets.clear()
  targets.set(key, t)
  return t
}

/** The HTML with tracked links and the open pixel (unchanged when tracking is off or there is no HTML). */
export function rewriteForTracking<H extends string | null | undefined>(deps: LinkDeps, input: RewriteInput<H>): H {
  const html = input.html
  if (!input.trackingEnabled || !html) return html
  // A link that appears more than once in the email gets the same URL (the token is a function of the
  // email and the target): it is signed once.
  const signed = new Map<string, string>()
  const withLinks = html.replace(TAG_RE, (tag) => {
    const t = tagTarget(deps, tag)
    if (!t) return tag
    let url = signed.get(t.target)
    if (url === undefined) {
      url = escapeAttribute(checkedClickUrl(deps, input.emailId, t.target))
      signed.set(t.target, url)
    }
    return `${t.before}"${url}"${t.after}`
  })
  const pixel = `<img src="${escapeAttribute(openPixelUrl(deps, input.emailId))}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`
  const close = withLinks.search(/<\/body\s*>(?![\s\S]*<\/body\s*>)/i)
  return (close >= 0 ? withLinks.slice(0, close) + pixel + withLinks.slice(close) : withLinks + pixel) as H
}
