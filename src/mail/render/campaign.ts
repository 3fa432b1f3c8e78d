/**
 * A campaign message's content, made from the campaign and one contact: pure functions of their data
 * (no database, no Deps beyond the link secret and public URL), so they run wherever the message is
 * built: on the main thread for a test email or GET /emails/:id/headers, in a signer thread for campaign
 * delivery (src/mail/signer.ts: the pipeline hands the thread the campaign, the contact and the tracking
 * flag, and the thread renders, adds the tracking links, builds and signs).
 */
import { manageUrl, subscribeUrl, unsubscribeUrl, type LinkDeps } from '../links'
import { renderEmail, renderMessage, renderSubject, templateVariables, type MessageUrls } from './index'
import { pastImageOnlyBands } from './image-only'
import { campaignPlan, renderPlanned } from './plan'
import { lastBodyClose, rewriteForTracking } from './tracking'

/** What rendering needs of a campaign. */
export interface CampaignSource { id: string; projectId: string; subject: string; body: string; type: string }

/** The recipient: its contact (null id: an address that is not a contact, test emails only) and data. */
export interface Recipient { id: string | null; email: string; data: Record<string, unknown> }

/** Everything needed to make one campaign message's HTML and text; plain data (structured-clone safe). */
export interface CampaignContent {
  emailId: string
  campaign: CampaignSource
  contact: Recipient
  /** The project's click and open tracking (tracking.ts). */
  tracking: boolean
}

/** A campaign message that cannot be rendered; its message is the email's failure reason as is. */
export class ContentError extends Error {}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Appends the unsubscribe footer: before `</body>` when the HTML has one, else at its end; and to the text. */
export function withUnsubscribeFooter(html: string, text: string, link: string): { html: string; text: string } {
  const footer = `<p style="margin:24px 0 0;font-size:12px;color:#6b7280">You receive this email because you subscribed. <a href="${escapeAttr(link)}" style="color:#6b7280">Unsubscribe</a></p>`
  const at = lastBodyClose(html)
  return {
    html: pastImageOnlyBands(at >= 0 ? `${html.slice(0, at)}${footer}${html.slice(at)}` : `${html}${footer}`, at >= 0 ? at + footer.length : -1),
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
  // The subject part is not used here (it is on the email record); renderEmail compiles both from the cache.
  return withFooter(deps, c, r, emailId, renderEmail({ subject: '', body: c.body }, bodyVars(deps, c, r, emailId)))
}

/**
 * renderCampaignBody for the main thread (a test email): a heavy body ({{#each}}) renders in a render
 * thread with its deadline (src/mail/render/pool.ts).
 */
export async function renderCampaignBodyOffThread(deps: LinkDeps, c: CampaignSource, r: Recipient, emailId: string): Promise<{ html: string; text: string }> {
  return withFooter(deps, c, r, emailId, await renderMessage({ subject: '', body: c.body }, bodyVars(deps, c, r, emailId)))
}

function bodyVars(deps: LinkDeps, c: CampaignSource, r: Recipient, emailId: string) {
  return templateVariables({ contact: r, urls: urlsFor(deps, c.projectId, c.body, r.id, emailId) })
}

function withFooter(deps: LinkDeps, c: CampaignSource, r: Recipient, emailId: string, rendered: { html: string; text: string }): { html: string; text: string } {
  if (c.type === 'MARKETING' && r.id && !c.body.includes('unsubscribeUrl')) {
    return withUnsubscribeFooter(rendered.html, rendered.text, unsubscribeUrl(deps, { projectId: c.projectId, contactId: r.id, emailId }))
  }
  return { html: rendered.html, text: rendered.text }
}

/**
 * The HTML (its links tracked when the project tracks) and text of one campaign message; ContentError if it
 * cannot be rendered. A message to a contact of a campaign whose body allows it is made from the
 * campaign's plan (plan.ts), with its HTML's quoted-printable (`htmlEncoded`, for mime.ts); the same HTML.
 */
export function renderCampaignContent(deps: LinkDeps, c: CampaignContent): { html: string; text: string; htmlEncoded?: string } {
  try {
    const contact = c.contact
    if (contact.id !== null) {
      const plan = campaignPlan(deps, c.campaign, c.tracking, (html, link) => withUnsubscribeFooter(html, '', link).html)
      const planned = plan && renderPlanned(deps, plan, { ...c, contact: { ...contact, id: contact.id } })
      if (planned) return planned
    }
    const { html, text } = renderCampaignBody(deps, c.campaign, c.contact, c.emailId)
    return { html: rewriteForTracking(deps, { emailId: c.emailId, html, trackingEnabled: c.tracking }), text }
  } catch (err) {
    throw new ContentError(`The campaign could not be rendered: ${err instanceof Error ? err.message : String(err)}`)
  }
}
