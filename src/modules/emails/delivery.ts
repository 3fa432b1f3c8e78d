/**
 * The outbound pipeline's DeliveryStore (src/mail/outbound/store.ts), built on the modules: what the
 * pipeline reads (the claimed emails, campaign mail's rendering inputs, attachments, the sender's DKIM
 * key) and what a delivery outcome means here (the email's forward-only status, its email.* events,
 * the suppression of a hard bounce, the campaign's counters). The composition root (src/main.ts) hands it
 * to the pipeline; the pipeline's transaction, queue rows and captured mail stay in src/mail/outbound.
 */
import type { Db } from '../../db/client'
import { ctxFor, type Deps } from '../../deps'
import type { SmtpReply } from '../../mail/outbound/replies'
import type { DeliveryEmail, DeliveryStore, FinalOutcome, Outcome } from '../../mail/outbound/store'
import type { Delivery } from '../../mail/outbound/types'
import { prepareDeferred } from '../campaigns/service'
import { signingKeyFor } from '../domains/service'
import { emailBase } from '../events/email-base'
import { inlineMatches } from '../events/inline'
import { projectHasConsumers } from '../events/interest'
import { appendEvents, notifyEvents, type EventRow, type NewEvent } from '../events/stream'
import { suppress } from '../suppressions/service'
import { bumpCampaign, type CampaignDelta } from '../tracking/service'
import * as repo from './repo'
import type { OutcomeSet } from './repo'

const OUTBOUND = { kind: 'job', name: 'outbound' } as const

/** The final outcomes' email rows of a batch, written together (repo.recordOutcomes). */
type OutcomeWrites = Array<{ id: string; set: OutcomeSet }>

type Counted = 'sent' | 'delivered' | 'bounced' | 'failed'

function replyFields(r: SmtpReply) {
  return { reply: r.text, smtpCode: r.code || null, enhancedCode: r.enhanced }
}

/** Why the attempt's session went in clear although TLS was tried: only when it did. */
function tlsNote(reason: string | null | undefined) {
  return reason ? { tls: false, tlsNote: reason } : {}
}

export const deliveryStore: DeliveryStore = {
  async load(deps, ids) {
    const loaded = await repo.loadForDelivery(deps.store, ids)
    // Campaign mail is stored without content: its body is rendered from the campaign and the contact's
    // data where the message is built (a signer thread); what that needs is read now.
    const deferred = loaded.filter((e) => !e.hasContent)
    if (deferred.length) await prepareDeferred(deps, deferred)
    return loaded
  },

  attachments(deps, emailId) {
    return repo.loadAttachments(deps.store, emailId)
  },

  signingKey(deps, projectId, domain) {
    return signingKeyFor(ctxFor(deps, projectId, OUTBOUND), domain)
  },

  async record(deps, db, finals, deferrals, now) {
    const { store } = deps
    const events = new Map<string, NewEvent[]>()
    const emit = (o: Outcome, e: NewEvent) => {
      const list = events.get(o.email.projectId)
      if (list) list.push(e)
      else events.set(o.email.projectId, [e])
    }
    const outcomes: OutcomeWrites = []
    const writes: Array<Promise<unknown>> = []
    // Campaign counters: summed per campaign, one update each per commit.
    const counts = new Map<string, { projectId: string; d: Required<Pick<CampaignDelta, Counted | 'settled'>> }>()
    const count = (e: DeliveryEmail, add: Partial<Record<Counted, number>>) => {
      if (!e.campaignId) return
      let c = counts.get(e.campaignId)
      if (!c) {
        c = { projectId: e.projectId, d: { sent: 0, delivered: 0, bounced: 0, failed: 0, settled: 0 } }
        counts.set(e.campaignId, c)
      }
      c.d.settled++
      for (const [k, v] of Object.entries(add) as Array<[Counted, number]>) c.d[k] += v
    }
    // Projects no event consumer listens to (events/interest.ts), asked once per project and commit.
    const quietProjects = new Map<string, Promise<boolean>>()
    const quiet = (projectId: string) => {
      const known = quietProjects.get(projectId)
      if (known) return known
      const q = projectHasConsumers(store, db, projectId).then((has) => !has)
      quietProjects.set(projectId, q)
      return q
    }
    for (const f of finals) writes.push(applyFinal(deps, db, f, emit, outcomes, count, quiet))
    // Deferrals: their emails' attempts in one statement on PostgreSQL (repo.recordDeferrals).
    writes.push((async () => {
      if (!deferrals.length) return
      const attempt = (o: Outcome) => o.queue.attempts + 1
      await repo.recordDeferrals(store, db, deferrals.map(({ outcome: o, reply }) => ({ id: o.email.id, attempts: attempt(o), lastReply: reply.text.slice(0, 1000) })), now)
      for (const { outcome: o, reply, runAt } of deferrals) {
        // Each attempt's SMTP reply stays readable (GET /emails/:id/attempts), not only the last one.
        const d = o.delivery as Extract<Delivery, { kind: 'deferred' }>
        const base = emailBase(o.email)
        emit(o, {
          contactId: o.email.contactId, name: 'email.deferred', emailId: o.email.id, createdAt: o.at, base,
          data: { ...base, attempt: attempt(o), ...replyFields(reply), host: d.host, throttled: d.throttle, nextAttemptAt: runAt.toISOString(), ...tlsNote(d.clearReason) },
        })
      }
    })())
    await Promise.all(writes)
    // The final outcomes' email rows: one statement per kind of outcome on PostgreSQL.
    await repo.recordOutcomes(store, db, outcomes, now)
    for (const [campaignId, c] of counts) await bumpCampaign(store, db, c.projectId, campaignId, c.d, now)
    const committed = new Map<string, EventRow[]>()
    for (const [projectId, list] of events) {
      committed.set(projectId, await appendEvents(ctxFor(deps, projectId, OUTBOUND), db, list))
    }
    return async () => {
      for (const [projectId, rows] of committed) await notifyEvents(ctxFor(deps, projectId, OUTBOUND), rows)
    }
  },
}

/** One final outcome: the email's row (gathered in `outcomes`), its events, counters and a hard bounce's suppression. */
async function applyFinal(
  deps: Deps, db: Db, { outcome: o, expiredReply }: FinalOutcome,
  emit: (o: Outcome, e: NewEvent) => void, outcomes: OutcomeWrites,
  count: (e: DeliveryEmail, add: Partial<Record<Counted, number>>) => void,
  quiet: (projectId: string) => Promise<boolean>,
): Promise<void> {
  const e = o.email
  const base = emailBase(e)
  const attempts = o.queue.attempts + 1
  const drop = e.hasAttachments
  const at = o.at
  const ev = (name: string, data: Record<string, unknown>) => emit(o, { contactId: e.contactId, name, emailId: e.id, data: { ...base, attempt: attempts, ...data }, createdAt: at, base })
  // A bounce or delivery already recorded for the email (by a report that came first) is not counted again.
  const bounced = e.bouncedAt ? 0 : 1
  if (expiredReply) {
    count(e, { bounced })
    outcomes.push({ id: e.id, set: { status: 'BOUNCED', attempts, bounceType: 'soft', bouncedAt: at, lastReply: expiredReply.text, dropAttachmentContent: drop } })
    ev('email.bounce', { bounceType: 'soft', ...replyFields(expiredReply), host: null, suppressed: false, bouncedAt: at.toISOString(), reason: 'The message could not be delivered before the retry period ended' })
    return
  }
  const d = o.delivery
  switch (d.kind) {
    case 'accepted': {
      count(e, { sent: 1, delivered: d.final && !e.deliveredAt ? 1 : 0 })
      // The accepting server's reply is stored once: on email.delivery when the hop was final (direct MX
      // delivery), else on email.sent (a smart host took it); GET /emails/:id/attempts reads either.
      const sent = { sentAt: at.toISOString(), host: d.host, ...(d.final ? {} : { ...replyFields(d.reply), ...tlsNote(d.clearReason) }) }
      const delivery = d.final ? { deliveredAt: at.toISOString(), host: d.host, ...replyFields(d.reply), tls: d.secure, ...tlsNote(d.clearReason) } : null
      // A first delivery in a project no consumer listens to: the two events are the row's (events/inline.ts).
      let inlineEvents: number | undefined
      if (delivery && !e.sentAt && !e.deliveredAt && await quiet(e.projectId)) {
        const source = { id: e.id, projectId: e.projectId, contactId: e.contactId, attempts, deliveredAt: at, deliveredTo: d.host, lastReply: d.reply.text, inlineEvents: d.secure ? 1 : 0 }
        if (inlineMatches(source, { sent: { attempt: attempts, ...sent }, delivery: { attempt: attempts, ...delivery } })) inlineEvents = source.inlineEvents
      }
      outcomes.push({ id: e.id, set: {
        status: d.final ? 'DELIVERED' : 'SENT', attempts, sentAt: at, ...(d.final ? { deliveredAt: at } : {}),
        lastReply: d.reply.text, deliveredTo: d.host, size: o.size, dropAttachmentContent: drop, inlineEvents,
      } })
      if (inlineEvents !== undefined) return
      ev('email.sent', sent)
      if (delivery) ev('email.delivery', delivery)
      return
    }
    case 'captured': {
      // The captured message itself is the pipeline's (src/mail/outbound/capture-repo.ts).
      count(e, { sent: 1 })
      outcomes.push({ id: e.id, set: { status: 'SENT', attempts, sentAt: at, deliveredTo: 'capture', size: o.size, dropAttachmentContent: drop } })
      ev('email.sent', { sentAt: at.toISOString(), host: 'capture' })
      return
    }
    case 'bounced': {
      count(e, { bounced })
      outcomes.push({ id: e.id, set: { status: 'BOUNCED', attempts, bounceType: 'hard', bouncedAt: at, lastReply: d.reply.text, deliveredTo: d.host, dropAttachmentContent: drop } })
      let suppressed = false
      if (d.suppress) {
        await suppress(ctxFor(deps, e.projectId, OUTBOUND), db, { email: e.toAddress, reason: 'bounce', emailId: e.id, detail: d.reply.text })
        suppressed = true
      }
      ev('email.bounce', { bounceType: 'hard', ...replyFields(d.reply), host: d.host, suppressed, bouncedAt: at.toISOString(), ...tlsNote(d.clearReason) })
      return
    }
    case 'failed': {
      count(e, { failed: 1 })
      outcomes.push({ id: e.id, set: { status: 'FAILED', attempts, failedAt: at, lastReply: d.reason, dropAttachmentContent: drop } })
      ev('email.failed', { reason: d.reason, failedAt: at.toISOString() })
      return
    }
    case 'deferred':
      throw new Error('a deferral is not a final outcome')
  }
}
