/**
 * A campaign's HTML prepared once per campaign (in each signer thread), so that a message does only what
 * is its own: the values of its variables, its signed links and pixel, and their quoted-printable.
 *
 * The body's fast-path render (sandbox.ts `SimpleParts`: text around plain `{{name}}` outputs) is rendered
 * once with a place holder for each output; the unsubscribe footer and the link rewrite (tracking.ts
 * `rewriteLinks`) are applied to that, with place holders for the footer's link, each tracked link's URL
 * and the pixel's. What stays between the place holders is the same in every message: it is kept as it is
 * and as quoted-printable. A message's HTML is those pieces with its own text in the places, the same
 * string the per-message path (render, footer, rewrite) makes. Its quoted-printable is made piece by
 * piece, each encoded as if it started at the column where it lands (kept per piece and column for the
 * messages after), so lines fill up as in the encoding of the whole; it decodes to that HTML, though its
 * soft breaks may fall elsewhere (a piece never joins an "=XX" with the next one).
 *
 * A body is taken per message (null plan) when this could differ from the per-message path: not the fast
 * path (blocks, helpers), an output not HTML-escaped, an output where a value could change which tags
 * are links or images, or a link's target (tracking.ts `placesKeepLinks`), images in HTML short enough
 * for the image-only padding (image-only.ts), no derived text template (text.ts), a bare CR at a piece's
 * end, or place-holder characters in the source. A message is rendered per message when one of its
 * values holds a CR (a CR and LF split between pieces would be encoded as a CR and a line break).
 */
import { manageUrl, openPixelUrl, checkedClickUrl, subscribeUrl, unsubscribeUrl, type LinkDeps } from '../links'
import { compileEntry, type Compiled } from './cache'
import { IMAGE_ONLY_MAX_CHARS } from './image-only'
import { escapeHtml, type SimpleParts } from './sandbox'
import { renderDerivedText, type DerivedText } from './text'
import { placesKeepLinks, rewriteLinks } from './tracking'
import { quotedPrintable } from '../mime'
import { templateVariables, type MessageUrls } from './variables'
import type { CampaignContent, CampaignSource, Recipient } from './campaign'

/** What fills a place: output `i` of the body, tracked link `i` (its target), the footer's link, the pixel. */
type Slot = { kind: 'value'; index: number } | { kind: 'click'; target: string } | { kind: 'footer' } | { kind: 'pixel' }

interface CampaignPlan {
  /** The HTML between the places, one more than `slots`. */
  pieces: string[]
  /** Each piece as quoted-printable, by the column it starts at (qpAt), as messages have needed them. */
  encoded: Array<Array<string | undefined>>
  /** Characters held in `encoded`, bounded by ENCODED_MAX_CHARS (past it, pieces are encoded per message). */
  encodedChars: number
  slots: Slot[]
  parts: SimpleParts
  text: DerivedText
  footer: boolean
  /** The subscription URLs the body uses. */
  urls: { unsubscribe: boolean; subscribe: boolean; manage: boolean }
  /** The length of the body's text around its outputs (the render budget counts it with the values). */
  staticLength: number
}

const OPEN = '\uE006'
const CLOSE = '\uE007'
const PLACE = /\uE006(\d+)\uE007/g
const OWN_URLS = new Set(['unsubscribeUrl', 'subscribeUrl', 'manageUrl'])
/** At most this many characters of a plan's pieces' encodings are kept (76 columns of a 64 KB body would be 5 MB). */
const ENCODED_MAX_CHARS = 1 << 20

interface Planned { type: string; projectId: string; tracking: boolean; publicUrl: string; plan: CampaignPlan | null }

/**
 * Plans by body (and what else they depend on), a few campaigns at a time per thread. The messages of a
 * batch posted to a signer thread share one copy of the body, whose hash is computed once.
 */
const plans = new Map<string, Planned[]>()
const PLANS_MAX = 16

const fits = (p: Planned, c: CampaignSource, tracking: boolean, publicUrl: string) =>
  p.type === c.type && p.projectId === c.projectId && p.tracking === tracking && p.publicUrl === publicUrl

/** The plan of a campaign's body for messages to contacts, or null: render per message. Cached. */
export function campaignPlan(deps: LinkDeps, c: CampaignSource, tracking: boolean, addFooter: (html: string, link: string) => string): CampaignPlan | null {
  const publicUrl = deps.config.publicUrl
  const list = plans.get(c.body) ?? []
  let hit = list.find((p) => fits(p, c, tracking, publicUrl))
  if (!hit) {
    hit = { type: c.type, projectId: c.projectId, tracking, publicUrl, plan: makePlan(deps, c, tracking, addFooter) }
    if (plans.size >= PLANS_MAX) plans.clear()
    plans.set(c.body, [...list, hit].slice(-4))
  }
  return hit.plan
}

function makePlan(deps: LinkDeps, c: CampaignSource, tracking: boolean, addFooter: (html: string, link: string) => string): CampaignPlan | null {
  if (c.body.includes(OPEN) || c.body.includes(CLOSE)) return null
  const entry = compileEntry(c.body, 'html') as Extract<Compiled, { kind: 'html' }>
  if (entry.kind !== 'html' || !entry.body.text) return null
  const parts = entry.body.parts
  if (!parts || parts.escaped.some((e) => !e)) return null
  const slots: Slot[] = []
  const place = (slot: Slot) => `${OPEN}${slots.push(slot) - 1}${CLOSE}`
  let html = parts.statics[0]
  const spans: Array<[number, number]> = []
  for (let i = 0; i < parts.getters.length; i++) {
    const p = place({ kind: 'value', index: i })
    spans.push([html.length, html.length + p.length])
    html += p + parts.statics[i + 1]
  }
  if (!html.replace(PLACE, '')) return null
  if (!placesKeepLinks(html, spans, (k) => OWN_URLS.has(parts.names[k] ?? ''))) return null
  // The image-only padding depends on the length of each message's HTML: HTML with images is planned only
  // when it is past the last band without its values (the footer, links and pixel only lengthen it).
  if (/<img[\s/>]/i.test(html) && html.replace(PLACE, '').length <= 2 * IMAGE_ONLY_MAX_CHARS) return null
  const footer = c.type === 'MARKETING' && !c.body.includes('unsubscribeUrl')
  if (footer) html = addFooter(html, place({ kind: 'footer' }))
  if (tracking) {
    const byTarget = new Map<string, string>()
    html = rewriteLinks(deps, html, (target) => {
      let p = byTarget.get(target)
      if (p === undefined) {
        p = place({ kind: 'click', target })
        byTarget.set(target, p)
      }
      return p
    }, place({ kind: 'pixel' }))
  }
  const order: Slot[] = []
  const pieces = html.split(PLACE).filter((s, i) => {
    if (i % 2 === 0) return true
    order.push(slots[Number(s)])
    return false
  })
  if (pieces.some((p) => p.endsWith('\r'))) return null
  return {
    pieces, encoded: pieces.map(() => []), encodedChars: 0, slots: order, parts, text: entry.body.text, footer,
    urls: urlsUsed(c.body), staticLength: parts.statics.reduce((n, s) => n + s.length, 0),
  }
}

/** Which subscription URLs a body uses (src/mail/render/campaign.ts makes only those: each costs an HMAC). */
function urlsUsed(source: string): CampaignPlan['urls'] {
  return { unsubscribe: source.includes('unsubscribeUrl'), subscribe: /(^|[^\w])subscribeUrl/.test(source), manage: source.includes('manageUrl') }
}

function urlsFor(deps: LinkDeps, used: CampaignPlan['urls'], projectId: string, contactId: string, emailId: string): MessageUrls {
  const ref = { projectId, contactId, emailId }
  return {
    ...(used.unsubscribe ? { unsubscribeUrl: unsubscribeUrl(deps, ref) } : {}),
    ...(used.subscribe ? { subscribeUrl: subscribeUrl(deps, ref) } : {}),
    ...(used.manage ? { manageUrl: manageUrl(deps, ref) } : {}),
  }
}

/**
 * Quoted-printable of a text placed at column `col` of a line (0-75) that more text may follow: its lines,
 * the first counted from `col`, keep to the 76 characters with room for a soft break's "=" on the last,
 * and the blanks that end it stay as they are (quotedPrintable escapes those at a line's end; closeBlank
 * does when a line break follows). It may end with a soft break. Made by encoding the text behind `col`
 * placeholder characters and before one more, which are then cut off (they are plain ASCII: one column
 * each, nothing escaped).
 */
function qpAt(text: string, col: number): string {
  return text ? quotedPrintable(`${'x'.repeat(col)}${text}x`).slice(col, -1) : ''
}

/** Whether a text starts with a line break (LF or CRLF; a bare CR is data). */
const startsLine = (text: string) => text.charCodeAt(0) === 10 || (text.charCodeAt(0) === 13 && text.charCodeAt(1) === 10)

/** Quoted-printable being made: the text so far and the length of its last line. */
interface Qp { out: string; col: number }

/** Appends a text's quoted-printable at the column where it lands (`encoded`: qpAt of it there, if known). */
function appendQp(qp: Qp, text: string, encoded?: string): string {
  // A line break first: blanks that end the line so far are escaped, and the text starts at a line's start.
  const breaks = startsLine(text)
  if (breaks) closeBlank(qp)
  const next = encoded ?? qpAt(text, breaks ? 0 : qp.col)
  qp.out += next
  const nl = next.lastIndexOf('\r\n')
  qp.col = nl === -1 ? qp.col + next.length : next.length - nl - 2
  return next
}

/** A blank ending the current line escaped (=20, =09), after a soft break if the line has no room for it. */
function closeBlank(qp: Qp): void {
  const last = qp.out.charCodeAt(qp.out.length - 1)
  if (qp.col === 0 || (last !== 32 && last !== 9)) return
  const escaped = last === 32 ? '=20' : '=09'
  if (qp.col + 2 <= 76) {
    qp.out = qp.out.slice(0, -1) + escaped
    qp.col += 2
  } else {
    qp.out = `${qp.out.slice(0, -1)}=\r\n${escaped}`
    qp.col = 3
  }
}

/** A piece of the plan appended, its encoding at that column kept for the messages after. */
function appendPiece(qp: Qp, plan: CampaignPlan, i: number): void {
  const text = plan.pieces[i]
  if (!text) return
  const col = startsLine(text) ? 0 : qp.col
  const kept = plan.encoded[i][col]
  const made = appendQp(qp, text, kept)
  if (kept === undefined && plan.encodedChars + made.length <= ENCODED_MAX_CHARS) {
    plan.encoded[i][col] = made
    plan.encodedChars += made.length
  }
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const escapeUrl = (s: string) => (/[&"<>]/.test(s) ? escapeAttr(s) : s)

/**
 * One message of a planned campaign: its HTML (the same as the per-message path's), that HTML as
 * quoted-printable, and its text; null when this message must be rendered per message (a value with a CR,
 * or HTML over the render budget, whose error the per-message path gives).
 */
export function renderPlanned(deps: LinkDeps, plan: CampaignPlan, c: CampaignContent & { contact: Recipient & { id: string } }): { html: string; htmlEncoded: string; text: string } | null {
  const { campaign, contact, emailId } = c
  const vars = templateVariables({ contact, urls: urlsFor(deps, plan.urls, campaign.projectId, contact.id, emailId) })
  const { parts } = plan
  const values = parts.getters.map((get) => {
    const v = get(vars)
    return v != null && typeof v !== 'function' ? escapeHtml(v) : ''
  })
  let length = plan.staticLength
  for (const v of values) {
    if (v.includes('\r')) return null
    length += v.length
  }
  if (length > parts.maxOutput) return null
  let footerLink = ''
  const urls = new Map<string, string>()
  let html = plan.pieces[0]
  const qp: Qp = { out: '', col: 0 }
  appendPiece(qp, plan, 0)
  for (let i = 0; i < plan.slots.length; i++) {
    const slot = plan.slots[i]
    let text: string
    switch (slot.kind) {
      case 'value': text = values[slot.index]; break
      case 'footer':
        footerLink ||= unsubscribeUrl(deps, { projectId: campaign.projectId, contactId: contact.id, emailId })
        text = escapeAttr(footerLink)
        break
      case 'click': {
        let url = urls.get(slot.target)
        if (url === undefined) {
          url = escapeUrl(checkedClickUrl(deps, emailId, slot.target))
          urls.set(slot.target, url)
        }
        text = url
        break
      }
      case 'pixel': text = escapeUrl(openPixelUrl(deps, emailId)); break
    }
    html += text + plan.pieces[i + 1]
    if (text) appendQp(qp, text)
    appendPiece(qp, plan, i + 1)
  }
  closeBlank(qp)
  let text = renderDerivedText(plan.text, vars)
  if (plan.footer) text = `${text}\n\n--\nUnsubscribe: ${footerLink || unsubscribeUrl(deps, { projectId: campaign.projectId, contactId: contact.id, emailId })}\n`
  return { html, htmlEncoded: qp.out, text }
}
