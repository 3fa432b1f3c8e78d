import type { Deps } from '../../deps'
import type { DeliveryEmail } from '../../mail/outbound/store'
import { trackingEnabled } from '../tracking/service'
import { renderCampaignContent, type CampaignSource } from '../../mail/render/campaign'
import * as repo from './repo'
import { withVariant } from './abtest'

/**
 * Campaign-shaped storage (docs/architecture.md, Campaigns): a campaign's subject and body are stored
 * once, on the campaign. The fan-out stores each recipient's email record (with its rendered subject) but
 * no content; each message's body is rendered from the campaign and the contact's data when it is built
 * for delivery, with the unsubscribe footer and the tracking links (src/mail/render/campaign.ts). The
 * pipeline reads what that needs here (`prepareDeferred`) and a signer thread renders it; a test email
 * (one address) is rendered at once and stored like any other email.
 */

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
  // An A/B campaign's mail rendered here is the winner's (its test group's is, when its variants have
  // bodies of their own, rendered at fan-out), or the campaign's own body that every variant shares.
  const sent = row ? withVariant(row, row.abState?.phase === 'WINNER' ? row.abState.winner : null) : null
  const value = sent ? { id: sent.id, projectId: sent.projectId, subject: sent.subject, body: sent.body, type: sent.type } : null
  if (cache.size > 1000) cache.clear()
  cache.set(key, { at: Date.now(), value })
  return value
}

/**
 * Reads what the claimed emails stored without content (campaign mail) need to be rendered: each gets
 * `campaignContent` (the campaign, the contact's data as it is now, the project's tracking flag), which
 * the message builder renders (`renderCampaignContent`). An email whose campaign or contact was deleted
 * since it was queued gets `contentError` (the pipeline records it as failed): it cannot be rendered, and
 * a deleted contact is not written to.
 */
export async function prepareDeferred(deps: Deps, emails: DeliveryEmail[]): Promise<void> {
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
      e.headers = {}
      e.campaignContent = { emailId: e.id, campaign, contact, tracking }
    }
  }
}

/** prepareDeferred, then each message's HTML and text rendered here (`html`, `text`; `contentError` if it cannot be). */
export async function renderDeferred(deps: Deps, emails: DeliveryEmail[]): Promise<void> {
  await prepareDeferred(deps, emails)
  for (const e of emails) {
    if (!e.campaignContent) continue
    try {
      ;({ html: e.html, text: e.text } = renderCampaignContent(deps, e.campaignContent))
    } catch (err) {
      e.contentError = err instanceof Error ? err.message : String(err)
    }
    e.campaignContent = undefined
  }
}
