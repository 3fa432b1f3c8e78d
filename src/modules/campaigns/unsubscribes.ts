import type { Db } from '../../db/client'
import type { Ctx } from '../../deps'
import * as contactsRepo from '../contacts/repo/contact'
import { subscriptionEvent } from '../contacts/service'
import { appendEvents, type EventRow } from '../events/stream'
import { bumpCampaign, emailById } from '../tracking/service'
import * as repo from './repo'

/** How the recipient asked: the link's page or one-click POST (RFC 8058), or a mail to the List-Unsubscribe mailto. */
export type UnsubscribeSource = 'link' | 'mailto'

export interface UnsubscribeResult {
  /** The contact was subscribed and is not any more. */
  changed: boolean
  /** The campaign the email belonged to, when it did. */
  campaignId: string | null
  /** Events to hand to notifyEvents after the commit. */
  events: EventRow[]
}

/**
 * Unsubscribes a contact because of an email it received, inside the caller's transaction: the contact
 * (contact.unsubscribed, with the email, its campaign and the source), and when the email belonged to a
 * campaign, the campaign's unsubscribe record and its `unsubscribed` counter, once per contact and
 * campaign. A contact already unsubscribed changes nothing and is not counted.
 */
export async function unsubscribeThroughEmail(
  ctx: Ctx, db: Db, input: { contactId: string; emailId: string | null; source: UnsubscribeSource },
): Promise<UnsubscribeResult> {
  const email = input.emailId ? await emailById(ctx.store, db, input.emailId) : null
  const campaignId = email && email.projectId === ctx.projectId && email.contactId === input.contactId ? email.campaignId : null
  const changed = (await contactsRepo.setSubscribed(ctx.store, db, ctx.projectId, [input.contactId], false, ctx.now)).length > 0
  if (!changed) return { changed, campaignId, events: [] }
  if (campaignId) {
    const first = await repo.insertUnsubscribe(ctx.store, db, { projectId: ctx.projectId, campaignId, contactId: input.contactId, emailId: input.emailId, createdAt: ctx.now })
    if (first) await bumpCampaign(ctx.store, db, ctx.projectId, campaignId, { unsubscribed: 1 }, ctx.now)
  }
  const base = subscriptionEvent(input.contactId, false)
  const events = await appendEvents(ctx, db, [{
    ...base, emailId: input.emailId,
    data: { ...base.data, reason: 'unsubscribe', source: input.source, emailId: input.emailId, campaignId },
  }])
  return { changed, campaignId, events }
}
