import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { LINK_PATHS } from '../../mail/links'
import * as pages from './pages'
import { openLink, setSubscribed, type LinkTarget } from './service'

const MAX_FORM_BYTES = 16 * 1024
const TokenParams = t.Object({ token: t.String() })

/**
 * Reads a small form body (urlencoded or multipart) and never fails: RFC 8058 senders post
 * `List-Unsubscribe=One-Click` either way, and the unsubscribe does not depend on the body anyway.
 */
async function formBody({ request }: { request: Request }): Promise<Record<string, string>> {
  const rawType = request.headers.get('content-type') ?? ''
  const type = rawType.toLowerCase()
  const declared = request.headers.get('content-length')
  if (declared !== null && !(Number(declared) <= MAX_FORM_BYTES)) return {}
  try {
    const bytes = await readCapped(request, MAX_FORM_BYTES)
    if (!bytes) return {}
    if (type.startsWith('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(new TextDecoder().decode(bytes)))
    if (type.startsWith('multipart/form-data')) {
      const out: Record<string, string> = {}
      const fd = await new Response(new Blob([new Uint8Array(bytes)]), { headers: { 'content-type': rawType } }).formData()
      for (const [k, v] of fd.entries()) if (typeof v === 'string') out[k] = v
      return out
    }
  } catch { /* an unreadable body is an empty form */ }
  return {}
}

/** The body, or null when it is longer than `max` bytes (chunked bodies have no declared length). */
async function readCapped(request: Request, max: number): Promise<Buffer | null> {
  if (!request.body) return Buffer.alloc(0)
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > max) { await reader.cancel(); return null }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

const page = (title: string, description: string) => ({
  params: TokenParams,
  detail: { tags: ['subscription pages'], summary: title, description },
})
const post = (title: string, description: string) => ({ ...page(title, description), parse: formBody })

/** Runs `fn` for a valid link, else answers the 404 page. */
async function withLink(deps: Deps, token: string, fn: (target: LinkTarget) => Promise<Response> | Response): Promise<Response> {
  const target = await openLink(deps, token)
  return target ? fn(target) : pages.notFoundPage()
}

const view = (t: LinkTarget): pages.PageContact => ({ email: t.contact.email, subscribed: t.contact.subscribed, sender: t.sender })

/** The public pages behind the links of every email (mounted at the root of the public URL). */
export function subscriptionRoutes(deps: Deps) {
  return new Elysia()
    .get(`${LINK_PATHS.unsubscribe}/:token`, ({ params }) => withLink(deps, params.token, (t) => pages.unsubscribeConfirmPage(view(t), t.links)),
      page('Unsubscribe: confirm page (HTML)', 'Shows the address and a one-button form; a GET never changes anything (link scanners prefetch GETs). A forged or altered token answers the 404 page.'))
    .post(`${LINK_PATHS.unsubscribe}/:token`, ({ params }) => withLink(deps, params.token, async (t) => {
      await setSubscribed(t, false)
      return pages.unsubscribedPage(view(t), t.links)
    }), post('Unsubscribe (RFC 8058 one-click)', 'Unsubscribes the contact without a login; the body `List-Unsubscribe=One-Click` (urlencoded or multipart) is what mail clients send, any body is accepted. Emits contact.unsubscribed once; repeating it changes nothing.'))
    .get(`${LINK_PATHS.subscribe}/:token`, ({ params }) => withLink(deps, params.token, (t) => pages.subscribeConfirmPage(view(t), t.links)),
      page('Subscribe again: confirm page (HTML)', 'A GET never changes anything.'))
    .post(`${LINK_PATHS.subscribe}/:token`, ({ params }) => withLink(deps, params.token, async (t) => {
      await setSubscribed(t, true)
      return pages.subscribedPage(view(t), t.links)
    }), post('Subscribe again', 'Subscribes the contact again; emits contact.subscribed once.'))
    .get(`${LINK_PATHS.manage}/:token`, ({ params }) => withLink(deps, params.token, (t) => pages.managePage(view(t))),
      page('Manage subscription (HTML)', 'Shows the address, the sender (the From name and domain of the email the link came from) and the current state, with a toggle.'))
    .post(`${LINK_PATHS.manage}/:token`, ({ params, body }) => withLink(deps, params.token, async (t) => {
      const form = (body ?? {}) as Record<string, string>
      if (form.subscribed !== 'true' && form.subscribed !== 'false') return pages.managePage(view(t))
      const want = form.subscribed === 'true'
      const changed = t.contact.subscribed !== want
      await setSubscribed(t, want)
      return pages.managePage(view(t), changed ? (want ? 'You are subscribed.' : 'You are unsubscribed.') : 'Nothing changed.')
    }), post('Manage subscription: toggle', 'Form field `subscribed=true|false` sets the state (events as for the other pages); anything else just shows the page.'))
}
