/**
 * POST /webhooks/notifications: Amazon SES notifications delivered by SNS, for installs that relay
 * through SES (MAILCTL_OUTBOUND=smtp://...amazonaws.com). Every message's SNS signature is verified
 * first; a SubscriptionConfirmation is confirmed by a GET of its SubscribeURL (an SNS URL only); a
 * Notification carrying an SES Bounce, Complaint or Delivery goes through the same email state machine
 * as inbound DSNs and ARF reports. A redelivered notification (same SNS MessageId) changes nothing.
 */
import { ctxFor, type Deps, type FetchLike } from '../../deps'
import { AppError, badRequest, forbidden } from '../../errors'
import { defineJob } from '../../jobs/queue'
import { storableCopy } from '../../storable'
import { notifyEvents } from '../events/stream'
import type { NotificationResult } from './model'
import { claimReceipt, pruneReceipts } from './repo'
import { applySesNotification } from './ses'
import { isSnsUrl, parseSnsMessage, SnsError, verifySnsMessage, type SnsMessage } from './sns'

/** Notifications older than this are refused (a receipt is kept as long, so replays stay no-ops). */
export const MAX_NOTIFICATION_AGE_MS = 7 * 24 * 3600_000

function fetcher(deps: Deps): FetchLike {
  return deps.fetch ?? ((url, init) => fetch(url, init))
}

function asAppError(err: SnsError): AppError {
  if (err.kind === 'malformed') return badRequest(err.message)
  if (err.kind === 'fetch') return new AppError('INTERNAL_SERVER_ERROR', err.message, { suggestion: 'SNS retries the delivery later' })
  return forbidden(err.message)
}

export async function handleNotification(deps: Deps, body: string): Promise<NotificationResult> {
  let msg: SnsMessage
  try {
    msg = parseSnsMessage(body)
    await verifySnsMessage(msg, fetcher(deps))
  } catch (err) {
    if (!(err instanceof SnsError)) throw err
    deps.log.warn('SNS message refused', { reason: err.message, kind: err.kind })
    throw asAppError(err)
  }
  const sent = new Date(msg.Timestamp)
  if (Number.isNaN(sent.getTime()) || deps.clock.now() - sent.getTime() > MAX_NOTIFICATION_AGE_MS) {
    throw forbidden('The SNS message is too old (or its Timestamp is unreadable)')
  }
  const base = { type: msg.Type, messageId: msg.MessageId, topicArn: msg.TopicArn }
  if (msg.Type === 'SubscriptionConfirmation') {
    const url = msg.SubscribeURL ?? ''
    if (!isSnsUrl(url)) throw forbidden('SubscribeURL is not an https URL of sns.<region>.amazonaws.com')
    try {
      const res = await fetcher(deps)(url, { signal: AbortSignal.timeout(10_000), redirect: 'error' })
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      await res.arrayBuffer()
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err)
      deps.log.error('SNS subscription confirmation failed', { topicArn: msg.TopicArn, reason })
      throw new AppError('INTERNAL_SERVER_ERROR', `Confirming the subscription failed: ${reason}`, { suggestion: 'SNS sends the confirmation again' })
    }
    deps.log.info('SNS subscription confirmed', { topicArn: msg.TopicArn })
    return { ...base, confirmed: true, kind: null, applied: 0, duplicate: false, ignored: null }
  }
  if (msg.Type === 'UnsubscribeConfirmation') {
    deps.log.info('SNS subscription ended', { topicArn: msg.TopicArn })
    return { ...base, confirmed: false, kind: null, applied: 0, duplicate: false, ignored: 'unsubscribe confirmation: nothing to do' }
  }
  // Storable (src/storable.ts): what SES relays from a remote server (a bounce's diagnostic) may hold a
  // NUL; refused, SNS would send it again until it gave up, so it is kept with U+FFFD, as inbound mail is.
  let payload: unknown
  try { payload = storableCopy(JSON.parse(msg.Message)) } catch { payload = null }
  const now = deps.clock.date()
  const out = await deps.store.tx(async (db) => {
    if (!await claimReceipt(deps.store, db, 'sns', msg.MessageId, now)) return null
    return applySesNotification(deps, db, payload, now)
  })
  if (!out) return { ...base, confirmed: false, kind: null, applied: 0, duplicate: true, ignored: 'already received' }
  for (const [projectId, rows] of out.events) await notifyEvents(ctxFor(deps, projectId, { kind: 'job', name: 'webhooks.ses' }), rows)
  deps.log.info('SES notification', { kind: out.kind, applied: out.applied, ignored: out.ignored, snsMessageId: msg.MessageId })
  return { ...base, confirmed: false, kind: out.kind, applied: out.applied, duplicate: false, ignored: out.ignored }
}

export const webhooksPruneJob = defineJob({
  name: 'webhooks.prune',
  everyMs: 24 * 3600_000,
  async run(ctx) {
    const deleted = await ctx.deps.store.tx((db) => pruneReceipts(ctx.deps.store, db, new Date(ctx.deps.clock.now() - MAX_NOTIFICATION_AGE_MS)))
    return { deleted }
  },
})
