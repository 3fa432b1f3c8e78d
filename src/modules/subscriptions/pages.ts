/**
 * The public subscription pages: plain, accessible HTML (one heading, labelled forms, real buttons,
 * lang and viewport set, readable without CSS), every interpolated value escaped, no script at all.
 * Headers forbid scripts, framing and referrers (the token is in the URL) and caching.
 */
import { createHash } from 'node:crypto'

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`=]/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** A template tag that escapes every interpolated value unless it is already `Html`. */
export class Html {
  constructor(readonly value: string) {}
  toString() { return this.value }
}
export function html(strings: TemplateStringsArray, ...values: Array<string | number | Html | Html[]>): Html {
  let out = strings[0]
  values.forEach((v, i) => {
    const text = Array.isArray(v) ? v.map((x) => x.value).join('') : v instanceof Html ? v.value : escapeHtml(String(v))
    out += text + strings[i + 1]
  })
  return new Html(out)
}

const STYLE = [
  'body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24;line-height:1.5}',
  'main{max-width:34rem;margin:10vh auto;padding:2rem;background:#fff;border:1px solid #d8dde3;border-radius:8px}',
  'h1{font-size:1.4rem;margin-top:0}',
  'button{font:inherit;padding:.55rem 1.1rem;border-radius:6px;border:1px solid #1b1f24;background:#1b1f24;color:#fff;cursor:pointer}',
  'button.secondary{background:#fff;color:#1b1f24}',
  'button:focus-visible,a:focus-visible{outline:3px solid #2f6fde;outline-offset:2px}',
  'a{color:#1f56b3}',
  '.state{font-weight:600}',
  'form{margin:1.25rem 0}',
  'footer{margin-top:2rem;font-size:.85rem;color:#58606b}',
].join('')
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64')

export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-robots-tag': 'noindex, nofollow',
}

function page(title: string, body: Html): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${new Html(STYLE)}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`.value
}

export function respond(status: number, title: string, body: Html): Response {
  return new Response(page(title, body), { status, headers: PAGE_HEADERS })
}

/** The sender as the recipient saw it in the From header: its display name (if any) and its domain. */
export interface PageSender { name: string | null; domain: string }
export interface PageContact { email: string; subscribed: boolean; sender: PageSender | null }

/** How a sentence names the sender: its From name, else its domain, else "this sender". */
function senderLabel(c: PageContact): Html {
  if (!c.sender) return html`this sender`
  return html`<strong>${c.sender.name ?? c.sender.domain}</strong>`
}
/** The three pages of one contact token (absolute URLs under the public URL). */
export interface PageLinks { unsubscribe: string; subscribe: string; manage: string }

/** The one-click form: the field RFC 8058 mail clients send, so the page and the clients take one path. */
function unsubscribeForm(label: string, secondary = false): Html {
  return html`<form method="post">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit"${new Html(secondary ? ' class="secondary"' : '')}>${label}</button>
</form>`
}

function subscribeForm(label: string): Html {
  return html`<form method="post">
<input type="hidden" name="subscribe" value="true">
<button type="submit">${label}</button>
</form>`
}

export function unsubscribeConfirmPage(c: PageContact, links: PageLinks): Response {
  if (!c.subscribed) return unsubscribedPage(c, links, false)
  return respond(200, 'Unsubscribe', html`<h1>Unsubscribe</h1>
<p>Stop emails from ${senderLabel(c)} to <strong>${c.email}</strong>?</p>
${unsubscribeForm('Unsubscribe')}
<footer><a href="${links.manage}">Manage your subscription</a></footer>`)
}

export function unsubscribedPage(c: PageContact, links: PageLinks, justNow = true): Response {
  return respond(200, 'Unsubscribed', html`<h1>${justNow ? 'You are unsubscribed' : 'You are already unsubscribed'}</h1>
<p role="status"><strong>${c.email}</strong> will no longer receive emails from ${senderLabel(c)}.</p>
<p>Unsubscribed by mistake? <a href="${links.subscribe}">Subscribe again</a>.</p>
<footer><a href="${links.manage}">Manage your subscription</a></footer>`)
}

export function subscribeConfirmPage(c: PageContact, links: PageLinks): Response {
  if (c.subscribed) {
    return respond(200, 'Subscribed', html`<h1>You are subscribed</h1>
<p role="status"><strong>${c.email}</strong> receives emails from ${senderLabel(c)}.</p>
<footer><a href="${links.manage}">Manage your subscription</a></footer>`)
  }
  return respond(200, 'Subscribe again', html`<h1>Subscribe again</h1>
<p>Receive emails from ${senderLabel(c)} at <strong>${c.email}</strong> again?</p>
${subscribeForm('Subscribe')}
<footer><a href="${links.manage}">Manage your subscription</a></footer>`)
}

export function subscribedPage(c: PageContact, links: PageLinks): Response {
  return respond(200, 'Subscribed', html`<h1>You are subscribed again</h1>
<p role="status"><strong>${c.email}</strong> will receive emails from ${senderLabel(c)}.</p>
<p>Changed your mind? <a href="${links.unsubscribe}">Unsubscribe</a>.</p>
<footer><a href="${links.manage}">Manage your subscription</a></footer>`)
}

export function managePage(c: PageContact, notice?: string): Response {
  const state = c.subscribed ? 'Subscribed' : 'Unsubscribed'
  const toggle = c.subscribed
    ? html`<form method="post">
<input type="hidden" name="subscribed" value="false">
<button type="submit" class="secondary">Unsubscribe from all emails</button>
</form>`
    : html`<form method="post">
<input type="hidden" name="subscribed" value="true">
<button type="submit">Subscribe</button>
</form>`
  return respond(200, 'Manage your subscription', html`<h1>Manage your subscription</h1>
${notice ? html`<p role="status">${notice}</p>` : html``}
<dl>
<dt>Email address</dt><dd><strong>${c.email}</strong></dd>
${c.sender ? html`<dt>Sender</dt><dd>${c.sender.name ? `${c.sender.name} (${c.sender.domain})` : c.sender.domain}</dd>
` : html``}<dt>Status</dt><dd class="state" id="state">${state}</dd>
</dl>
${toggle}`)
}

export function notFoundPage(): Response {
  return respond(404, 'Link not valid', html`<h1>This link is not valid</h1>
<p>The link may be incomplete or no longer in use. Copy the whole link from the email and try again.</p>`)
}
