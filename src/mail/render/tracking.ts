/**
 * Click and open tracking in an email's HTML, applied by the sending pipeline when the email is built
 * for a project with tracking on (projects.tracking_enabled): every absolute http(s) link of an <a> or
 * <area> becomes a signed click URL (the target is inside the token: src/mail/links.ts), and a 1x1
 * pixel goes before </body>. With tracking off the HTML is returned unchanged: no pixel, no rewritten link.
 *
 * Left alone: mailto:, tel:, anchors and other non-http links, mailctl's own links (subscription pages and
 * tracking URLs under MAILCTL_PUBLIC_URL), and any link whose tag carries `data-notrack`.
 *
 * The HTML is a tenant's: every scan here is linear in its length (the regular expressions this
 * replaced backtracked, 7.7 s for "<a " x 300,000). Tags and attributes are read the way a browser's
 * tokenizer reads them: a tag ends at the first ">" outside a quoted attribute value, and a tag that the end
 * of the HTML cuts (no ">", or a quote never closed) is no tag, nor is anything after it.
 */
import { checkedClickUrl, isTrackableUrl, LINK_PATHS, openPixelUrl, type LinkDeps } from '../links'
import { pastImageOnlyBands } from './image-only'

export interface RewriteInput<H extends string | null | undefined = string> {
  emailId: string
  html: H
  trackingEnabled: boolean
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 12 || c === 13
const isWord = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95

/**
 * The end (index after ">") of the tag opened at `lt`, or -1 when the end of the HTML cuts it. Quoted
 * attribute values may hold ">".
 */
function tagEnd(html: string, lt: number): number {
  let i = lt + 1
  const len = html.length
  while (i < len) {
    const c = html.charCodeAt(i)
    if (c === 62 /* > */) return i + 1
    if (c === 34 /* " */ || c === 39 /* ' */) {
      const close = html.indexOf(c === 34 ? '"' : "'", i + 1)
      if (close === -1) return -1
      i = close + 1
    } else i++
  }
  return -1
}

/** The length of the link tag name (`a` or `area`, any case) at `i`, followed by a non-word character; 0 if none. */
function linkTagName(html: string, i: number): number {
  const c = html.charCodeAt(i) | 0x20
  if (c !== 97 /* a */) return 0
  if (!isWord(html.charCodeAt(i + 1))) return 1
  if ((html.charCodeAt(i + 1) | 0x20) === 114 && (html.charCodeAt(i + 2) | 0x20) === 101 && (html.charCodeAt(i + 3) | 0x20) === 97 && !isWord(html.charCodeAt(i + 4))) return 4
  return 0
}

interface Attr { name: string; value: string | null; valueStart: number; valueEnd: number }

/**
 * The attributes of a tag's text (`<a ...>`), in order, as a browser's tokenizer reads them: names end at
 * whitespace, "/", "=" or ">", values are quoted or end at whitespace or ">". One pass over the tag.
 * `valueStart`/`valueEnd` span the value with its quotes.
 */
function attributes(tag: string, from: number): Attr[] {
  const out: Attr[] = []
  const end = tag.length - 1 // the closing ">"
  let i = from
  while (i < end) {
    let c = tag.charCodeAt(i)
    if (isSpace(c) || c === 47 /* / */) { i++; continue }
    const nameStart = i
    i++
    while (i < end) {
      c = tag.charCodeAt(i)
      if (isSpace(c) || c === 47 || c === 61 /* = */) break
      i++
    }
    const name = tag.slice(nameStart, i).toLowerCase()
    let j = i
    while (j < end && isSpace(tag.charCodeAt(j))) j++
    if (tag.charCodeAt(j) !== 61 || j >= end) { out.push({ name, value: null, valueStart: i, valueEnd: i }); continue }
    j++
    while (j < end && isSpace(tag.charCodeAt(j))) j++
    const q = tag.charCodeAt(j)
    if (q === 34 || q === 39) {
      const close = tag.indexOf(q === 34 ? '"' : "'", j + 1)
      const stop = close === -1 || close > end ? end : close
      out.push({ name, value: tag.slice(j + 1, stop), valueStart: j, valueEnd: Math.min(end, stop + 1) })
      i = Math.min(end, stop + 1)
    } else {
      let k = j
      while (k < end && !isSpace(tag.charCodeAt(k))) k++
      out.push({ name, value: tag.slice(j, k), valueStart: j, valueEnd: k })
      i = k
    }
  }
  return out
}

const NAMED: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>', nbsp: '\u00a0' }

/** Decodes the character references an attribute value may use (what a browser would follow). */
export function decodeAttribute(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10)
      if (!Number.isFinite(code) || code <= 0 || code > 0x10ffff) return whole
      // Half of a surrogate pair is no character: U+FFFD, as a browser reads it (and no store holds it).
      return code >= 0xd800 && code <= 0xdfff ? '\uFFFD' : String.fromCodePoint(code)
    }
    return NAMED[ref.toLowerCase()] ?? whole
  })
}

function escapeAttribute(value: string): string {
  // Signed URLs are the public URL and a base64url token: usually nothing to escape.
  if (!/[&"<>]/.test(value)) return value
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

/** Link tags in the shared cache (for tests: a message's own links must not fill it). */
export const linkTagCacheSize = () => targets.size

function tagTarget(deps: LinkDeps, tag: string): { before: string; target: string; after: string } | null {
  const key = `${deps.config.publicUrl}\0${tag}`
  let t = targets.get(key)
  if (t !== undefined) return t
  t = null
  const attrs = attributes(tag, 1 + linkTagName(tag, 1))
  const href = attrs.find((a) => a.name === 'href')
  if (href?.value != null && !attrs.some((a) => a.name === 'data-notrack')) {
    const target = decodeAttribute(href.value).trim()
    // mailctl's own links carry the recipient's token: a tag that holds one is in one message only, and
    // caching it would fill the map with one entry per message (clearing the campaign's shared tags).
    if (ownLink(deps, target)) return null
    if (isTrackableUrl(target)) t = { before: tag.slice(0, href.valueStart), target, after: tag.slice(href.valueEnd) }
  }
  if (tag.length > TAG_CACHE_CHARS) return t
  if (targets.size >= TARGETS_MAX) targets.clear()
  targets.set(key, t)
  return t
}

/** Whether the HTML has an `<img>` tag of its own (one pass, no backtracking). */
function hasImage(html: string): boolean {
  return /<img[\s/>]/i.test(html)
}

/**
 * The open pixel. In HTML that has images of its own it is a 1x1 `<img>`. In HTML without any, an
 * `<img>` would be the message's only image, which SpamAssassin scores as an image-only message
 * (HTML_IMAGE_ONLY_04 to _32, up to 2.8 points, for up to 3,200 bytes of text: bench/spam-score.ts,
 * docs/adr/0017-open-pixel-as-background.md); there it is the `background` of an empty 1x1 table cell instead, which Gmail,
 * Apple Mail and Outlook.com fetch like an image (Outlook for Windows does not: its opens of such mail
 * are not seen).
 */
function openPixel(url: string, asImage: boolean): string {
  if (asImage) return `<img src="${url}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`
  return `<table role="presentation" width="1" height="1" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse"><tr><td width="1" height="1" background="${url}" style="width:1px;height:1px;line-height:1px;font-size:1px"></td></tr></table>`
}

/** The HTML with tracked links and the open pixel (unchanged when tracking is off or there is no HTML). */
export function rewriteForTracking<H extends string | null | undefined>(deps: LinkDeps, input: RewriteInput<H>): H {
  const html = input.html
  if (!input.trackingEnabled || !html) return html
  // A link that appears more than once in the email gets the same URL (the token is a function of the
  // email and the target): it is signed once.
  const signed = new Map<string, string>()
  const clickUrl = (target: string) => {
    let url = signed.get(target)
    if (url === undefined) {
      url = escapeAttribute(checkedClickUrl(deps, input.emailId, target))
      signed.set(target, url)
    }
    return url
  }
  return rewriteLinks(deps, html, clickUrl, escapeAttribute(openPixelUrl(deps, input.emailId))) as H
}

/**
 * rewriteForTracking's work with the URLs given: `clickUrl(target)` for each tracked link's href (escaped
 * for an attribute), `pixelUrl` in the open pixel. src/mail/render/plan.ts passes place holders, once per
 * campaign, and puts each message's URLs in their places.
 */
export function rewriteLinks(deps: LinkDeps, html: string, clickUrl: (target: string) => string, pixelUrl: string): string {
  let withLinks = ''
  let last = 0
  for (let lt = html.indexOf('<'); lt !== -1; lt = html.indexOf('<', lt + 1)) {
    const n = linkTagName(html, lt + 1)
    if (!n) continue
    const end = tagEnd(html, lt)
    if (end === -1) break
    const t = tagTarget(deps, html.slice(lt, end))
    if (t) {
      withLinks += `${html.slice(last, lt)}${t.before}"${clickUrl(t.target)}"${t.after}`
      last = end
    }
    lt = end - 1
  }
  withLinks = last === 0 ? html : withLinks + html.slice(last)
  // The rewrite changes only href values, so the images are those of the HTML as given (a flat string,
  // where withLinks is a concatenation that a regular expression would first have to copy).
  const pixel = openPixel(pixelUrl, hasImage(html))
  const close = lastBodyClose(withLinks)
  const out = close >= 0 ? withLinks.slice(0, close) + pixel + withLinks.slice(close) : withLinks + pixel
  return pastImageOnlyBands(out, close >= 0 ? close + pixel.length : -1)
}

/**
 * Whether the link rewrite and the open pixel treat the HTML the same whatever text stands at each of
 * `places` (spans of the HTML, in order; src/mail/render/plan.ts puts a place holder there, and each
 * message an HTML-escaped value: no "<", ">", quotes nor "="). False when a place continues what a "<"
 * starts (a tag's name, or the blanks after `</body`: a value could make a link, an image or the
 * `</body>` of it), or lies in a link tag other than inside a quoted attribute value, or is in a link's
 * href, unless it is the whole href and `ownHref(place)` says it holds one of mailctl's own URLs (never
 * rewritten). Such HTML is rendered per message.
 */
export function placesKeepLinks(html: string, places: ReadonlyArray<readonly [number, number]>, ownHref: (index: number) => boolean): boolean {
  // The link tags, found as rewriteLinks finds them.
  const links: Array<[number, number]> = []
  for (let lt = html.indexOf('<'); lt !== -1; lt = html.indexOf('<', lt + 1)) {
    if (!linkTagName(html, lt + 1)) continue
    const end = tagEnd(html, lt)
    if (end === -1) break
    links.push([lt, end])
    lt = end - 1
  }
  let j = 0
  for (let k = 0; k < places.length; k++) {
    const [start, stop] = places[k]
    const lt = html.lastIndexOf('<', start)
    if (lt !== -1 && TAG_START.test(html.slice(lt, start))) return false
    while (j < links.length && links[j][1] <= start) j++
    if (j === links.length || links[j][0] > start) continue
    const [from, end] = links[j]
    if (end <= stop) return false
    const tag = html.slice(from, end)
    const attr = attributes(tag, 1 + linkTagName(tag, 1)).find((x) => x.valueStart < start - from && x.valueEnd > stop - from)
    const q = attr ? tag.charCodeAt(attr.valueStart) : 0
    if (!attr || (q !== 34 && q !== 39) || attr.valueEnd - 1 < stop - from) return false
    if (attr.name === 'href' && !(attr.valueStart + 1 === start - from && attr.valueEnd - 1 === stop - from && ownHref(k))) return false
  }
  return true
}

/** What a "<" starts up to a place: a tag name being written, or `</body` and blanks. */
const TAG_START = /^<\/?[a-z]*[\t\n\f\r ]*$/i

/**
 * The index of the last `</body>` (any case, blanks before its ">"), or -1: one backward pass over the
 * `</` of the HTML, without a lower-cased copy of it (that copy cost about as much as the rest of the
 * link rewrite on a 6 KB designed body).
 */
export function lastBodyClose(html: string): number {
  for (let at = html.lastIndexOf('</'); at !== -1; at = at === 0 ? -1 : html.lastIndexOf('</', at - 1)) {
    if ((html.charCodeAt(at + 2) | 0x20) !== 98 /* b */ || (html.charCodeAt(at + 3) | 0x20) !== 111 /* o */
      || (html.charCodeAt(at + 4) | 0x20) !== 100 /* d */ || (html.charCodeAt(at + 5) | 0x20) !== 121 /* y */) continue
    let i = at + 6
    while (isSpace(html.charCodeAt(i))) i++
    if (html.charCodeAt(i) === 62) return at
  }
  return -1
}
