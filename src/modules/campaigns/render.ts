import type { Deps } from '../../deps'
import { manageUrl, subscribeUrl, unsubscribeUrl, type LinkDeps } from '../../mail/links'
import { renderEmail, renderSubject, templateVariables, type MessageUrls } from '../../mail/render'
import type { DeliveryEmail } from '../emails/repo'
import { rewriteForTracking } from '../tracking/rewrite'
import { trackingEnabled } from '../tracking/service'
import * as repo from './repo'

/**
 * Campaign-shaped storage (docs/architecture.md, Campaigns): a campaign's subject and body are stored
 * once, on the campaign. The fan-out stores each recipient's email record (with its rendered subject) but
 * no content; the outbound pipeline renders each message's body from the campaign and the contact's data
 * when it builds it for delivery (`renderDeferred`), adding the unsubscribe footer and the tracking links
 * there. A test email (one address) is rendered at once and stored like any other email.
 */

/** What rendering needs of a campaign. */
export type CampaignSource = Pick<repo.CampaignRow, 'id' | 'projectId' | 'subject' | 'body' | 'type'>

/** The recipient: its contact (null id: an address that is not a contact, test emails only) and data. */
export interface Recipient { id: string | null; email: string; data: Record<string, unknown> }

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Appends the unsubscribe footer: before `</body>` when the HTML has one, else at its end; and to the text. */
export function withUnsubscribeFooter(html: string, text: string, link: string): { html: string; text: string } {
  const footer = `<p style="margin:24px 0 0;font-size:12px;color:#6b7280">You receive this email because you subscribed. <a href="${escapeAttr(link)}" style="color:#6b7280">Unsubscribe</a></p>`
  const at = html.toLowerCase().lastIndexOf('</body>')
  return {
    html: at >= 0 ? `${html.slice(0, at)}${footer}${html.slice(at)}` : `${html}${footer}`,
    text: `${text}\n\n--\nUnsubscribe: ${link}\n`,
  }
}

/** The signed subscription links `source` refers to (each costs an HMAC: only those used are made). */
function urlsFor(deps: LinkDeps, projectId: string, source: string, contactId: string | null, emailId: string): MessageUrls {
  if (!contactId) return {}
  const ref = { projectId, contactId, emailId }
  return {
    ...(source.includes('unsubscribeUrl') ? { unsubscribeUrl: unsubscribeUrl(deps, ref) } : {}),
    ...(/(^|[^\w])subscribeUrl/.test(source) ? { subscribeUrl: subscribeUrl(deps, ref) } : {}),
    ...(source.includes('manageUrl') ? { manageUrl: manageUrl(deps, ref) } : {}),
  }
}

/** One recipient's subject (stored on its email record at fan-out). */
export function renderCampaignSubject(deps: LinkDeps, c: CampaignSource, r: Recipient, emailId: string): string {
  const vars = templateVariables({ contact: r, urls: urlsFor(deps, c.projectId, c.subject, r.id, emailId) })
  return renderSubject(c.subject, vars)
}

/**
 * One recipient's HTML and text. MARKETING mail always offers a way out: a body that does not place
 * {{unsubscribeUrl}} gets a short footer with the recipient's own link.
 */
export function renderCampaignBody(deps: LinkDeps, c: CampaignSource, r: Recipient, emailId: string): { html: string; text: string } {
  const vars = templateVariables({ contact: r, urls: urlsFor(deps, c.projectId, c.body, r.id, emailId) })
  // The subject part is not used here (it is on the email record); renderEmail compiles both from the cache.
  const rendered = renderEmail({ subject: '', body: c.body }, vars)
  let { html, text } = rendered
  if (c.type === 'MARKETING' && r.id && !c.body.includes('unsubscribeUrl')) {
    ;({ html, text } = withUnsubscribeFooter(html, text, unsubscribeUrl(deps, { projectId: c.projectId, contactId: r.id, emailId })))
  }
  return { html, text }
}

interface CachedCampaign { at: number; value: CampaignSource | null }

/**
 * Campaign sources by project and id, for a minute: a campaign's content cannot change once it sends
 * (PUT is refused from SENDING on), so the pipeline reads it once per batch at most.
 */
const cache = new Map<string, CachedCampaign>()
const CACHE_TTL_MS = 60_000

async function campaignSource(deps: Deps, projectId: string, id: string): Promise<CampaignSource | null> {
  const key = `${projectId}\0${id}`
  const hit = cache.get(key)
  if (hit && Date.now() - hit.at < CACHE_TTL_MS) return hit.value
  const row = await repo.findById(deps.store, deps.store.db, projectId, id)
  const value = row ? { id: row.id, projectId: row.projectId, subject: row.subject, body: row.body, type: row.type } : null
  if (cache.size > 1000) cache.clear()
  cache.set(key, { at: Date.now(), value })
  return value
}

/**
 * Fills in the content of claimed emails stored without it (campaign mail): the campaign's body rendered
 * with the contact's data as it is now, with tracking links when the project has tracking on. An email
 * whose campaign or contact was deleted since it was queued gets `contentError` (the pipeline records it
 * as failed): it cannot be rendered, and a deleted contact is not written to.
 */
export async function renderDeferred(deps: Deps, emails: DeliveryEmail[]): Promise<void> {
  const byProject = new Map<string, DeliveryEmail[]>()
  for (const e of emails) {
    const list = byProject.get(e.projectId)
    if (list) list.push(e)
    else byProject.set(e.projectId, [e])
  }
  for (const [projectId, list] of byProject) {
    const contactIds = [...new Set(list.map((e) => e.contactId).filter((id): id is string => id !== null))]
    const [contacts, tracking] = await Promise.all([
      repo.contactsByIds(deps.store, deps.store.db, projectId, contactIds),
      trackingEnabled(deps.store, projectId),
    ])
    for (const e of list) {
      const campaign = e.campaignId ? await campaignSource(deps, projectId, e.campaignId) : null
      if (!campaign) {
        e.contentError = e.campaignId ? 'The campaign was deleted before this email was delivered' : 'The email has no stored content'
        continue
      }
      const contact = e.contactId ? contacts.get(e.contactId) : undefined
      if (!contact) {
        e.contentError = 'The contact was deleted before this email was delivered'
        continue
      }
      try {
        const { html, text } = renderCampaignBody(deps, campaign, contact, e.id)
        e.html = rewriteForTracking(deps, { emailId: e.id, html, trackingEnabled: tracking })
        e.text = text
        e.headers = {}
      } catch (err) {
        e.contentError = `The campaign could not be rendered: ${err instanceof Error ? err.message : String(err)}`
      }
    }
  }
}
