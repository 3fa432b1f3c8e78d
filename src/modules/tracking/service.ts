/**
 * Opens and clicks: the verbs behind GET /t/o/:token (pixel) and GET /t/c/:token (redirect).
 *
 * Every open and click is an event (email.open / email.click); the first of each per email carries
 * isFirstOpen / isFirstClick true, moves the email forward (OPENED, CLICKED: never back, so an open after
 * a complaint changes no status) and counts as unique on the campaign. The counting is one upsert, so
 * of two simultaneous first opens exactly one is first.
 */
import type { Db, Store } from '../../db/client'
import { ctxFor, type Deps } from '../../deps'
import { isTrackableUrl, verifyLinkToken } from '../../mail/links'
import { emailBase } from '../events/email-base'
import { appendEvents, notifyEvents, type EventRow } from '../events/stream'
import * as repo from './repo'

/**
 * The campaign counters (`campaign_stats`) and an email's feedback view, as other modules use them in
 * their transaction (the outbound recorder's DeliveryStore, unsubscribes): through here, not the repo.
 */
export { bumpCampaign, emailById, type CampaignDelta } from './repo'

/**
 * The email state machine of delivery reports (feedback.ts), for the reports' receivers: inbound mail
 * (src/modules/inbound) and SES notifications (src/modules/webhooks/ses.ts).
 */
export {
  applyBounce, applyComplaint, applyDelay, applyDelivery, emailsByMessageId, feedbackEmailById, type FeedbackEmail, type FeedbackResult,
} from './feedback'

export interface EngagementMeta {
  userAgent?: string | null
  ip?: string | null
}

export interface EngagementResult {
  /** False when the email no longer exists (its project was deleted): nothing recorded. */
  recorded: boolean
  isFirst: boolean
  count: number
}

const MISSING: EngagementResult = { recorded: false, isFirst: false, count: 0 }

async function record(deps: Deps, emailId: string, kind: repo.Engagement, meta: EngagementMeta, link: string | null): Promise<EngagementResult> {
  const at = deps.clock.date()
  const out = await deps.store.tx(async (db) => {
    const email = await repo.emailById(deps.store, db, emailId)
    if (!email) return null
    const ctx = { ...ctxFor(deps, email.projectId, { kind: 'link' }), now: at }
    const count = await repo.countEngagement(deps.store, db, email, kind, at)
    const isFirst = count === 1
    if (isFirst) {
      await repo.advanceEmail(deps.store, db, email.projectId, email.id, kind === 'open'
        ? { status: 'OPENED', openedAt: at }
        : { status: 'CLICKED', clickedAt: at }, at)
    }
    if (email.campaignId) {
      await repo.bumpCampaign(deps.store, db, email.projectId, email.campaignId, kind === 'open'
        ? { opens: 1, uniqueOpens: isFirst ? 1 : 0 }
        : { clicks: 1, uniqueClicks: isFirst ? 1 : 0 }, at)
    }
    const base = emailBase(email)
    const data: Record<string, unknown> = kind === 'open'
      ? { ...base, openedAt: at.toISOString(), isFirstOpen: isFirst }
      : { ...base, link, clickedAt: at.toISOString(), isFirstClick: isFirst }
    if (meta.userAgent) data.userAgent = meta.userAgent.slice(0, 500)
    const events: EventRow[] = await appendEvents(ctx, db, [{ contactId: email.contactId, name: kind === 'open' ? 'email.open' : 'email.click', emailId: email.id, data, createdAt: at, base }])
    return { ctx, events, count, isFirst }
  })
  if (!out) return MISSING
  await notifyEvents(out.ctx, out.events)
  return { recorded: true, isFirst: out.isFirst, count: out.count }
}

/** Records an open of the email a pixel token names. */
export function recordOpen(deps: Deps, emailId: string, meta: EngagementMeta = {}): Promise<EngagementResult> {
  return record(deps, emailId, 'open', meta, null)
}

/** Records a click on `url` in the email a click token names. */
export function recordClick(deps: Deps, emailId: string, url: string, meta: EngagementMeta = {}): Promise<EngagementResult> {
  return record(deps, emailId, 'click', meta, url)
}

/**
 * GET /t/o/:token. Null for a forged, altered or foreign token (the route answers 404). A failure to
 * record is logged and the pixel is still served: a mail client must never see an error for an image.
 */
export async function openPixel(deps: Deps, token: string, meta: EngagementMeta): Promise<{ emailId: string } | null> {
  const link = verifyLinkToken(deps, token, 'open')
  if (!link) return null
  try {
    await recordOpen(deps, link.emailId, meta)
  } catch (err) {
    deps.log.error('recording an open failed', { emailId: link.emailId, error: err instanceof Error ? err.message : String(err) })
  }
  return { emailId: link.emailId }
}

/**
 * GET /t/c/:token: the signed target URL, or null for a forged or altered token (404: never an open
 * redirect, the target comes only from inside the MAC). The redirect happens even if recording fails
 * or the email is gone: the link in the reader's mailbox keeps working.
 */
export async function clickTarget(deps: Deps, token: string, meta: EngagementMeta): Promise<string | null> {
  const link = verifyLinkToken(deps, token, 'click')
  if (!link || !isTrackableUrl(link.url)) return null
  try {
    await recordClick(deps, link.emailId, link.url, meta)
  } catch (err) {
    deps.log.error('recording a click failed', { emailId: link.emailId, error: err instanceof Error ? err.message : String(err) })
  }
  return link.url
}

/**
 * Whether a project has open and click tracking on (projects.tracking_enabled): queueing rewrites links
 * and adds the pixel only then. Inside a transaction, pass its `db` (see repo.trackingEnabled).
 */
export function trackingEnabled(store: Store, projectId: string, db?: Db): Promise<boolean> {
  return repo.trackingEnabled(store, projectId, db)
}
