/**
 * Inbound mail (the receiver, src/smtp/receiver.ts, stores it; the `inbound.process` job, jobs.ts, processes
 * it): what a stored inbound message means.
 *
 * - A DSN (RFC 3464, or a plain-text bounce): the email is found by the VERP return path (envelope
 *   recipient, the report's To/Delivered-To, the returned original's Return-Path; the tag must verify),
 *   else by the returned original's Message-ID. The report's recipient that is the email's address
 *   decides: Action failed bounces the email (BOUNCED whatever the status code; hard/soft and whether
 *   the address is suppressed from the code, src/modules/tracking/feedback.ts applyBounce); Action
 *   delayed is no bounce, only email.delayed (applyDelay).
 * - An ARF report: found the same way (Original-Mail-From first); a complaint type applies the complaint
 *   (COMPLAINED, suppression, contact unsubscribed); not-spam and auth-failure reports are recorded only.
 * - Anything else addressed to a verified domain: email.received in that project, linked to the email
 *   it replies to (In-Reply-To / References) and to the sender's contact when one exists.
 * - Unreadable messages: kept with the parser's reason (status failed) and logged.
 *
 * The message is parsed first, outside any transaction (analyze.ts: inline when small, in a worker
 * thread when large); the transaction then only reads and writes rows. The message's outcome and every
 * effect commit in it together; a repeated job finds the row already finished and does nothing.
 */
import { ctxFor, type Deps } from '../../deps'
import type { Db } from '../../db/client'
import { enqueue } from '../../jobs/queue'
import { appendEvents, notifyEvents, type EventRow } from '../events/stream'
import { chargeUsage } from '../billing/service'
import { applyBounce, applyComplaint, applyDelay, emailsByMessageId, feedbackEmailById, type FeedbackEmail, type FeedbackResult } from '../tracking/service'
import { parseUnsubscribeAddress, parseVerp } from '../../mail/outbound/verp'
import { unsubscribeThroughEmail } from '../campaigns/service'
import { parseInbound, type ReceivedSummary } from '../../mail/inbound/analyze'
import type { ArfReport } from '../../mail/inbound/arf'
import type { DsnRecipient, DsnReport } from '../../mail/inbound/dsn'
import { contactIdByEmail, finishInbound, inboundStatus, insertInbound, loadInbound, pruneInbound, type InboundOutcome, type InboundRow, type InboundStatus } from './repo'
import { routeRecipient } from './routing'

export { routeRecipient, type Route } from './routing'

/** The job that processes a stored inbound message (jobs.ts). */
export const INBOUND_JOB = 'inbound.process'

export interface ProcessResult {
  status: InboundStatus
  kind: string | null
  emailId: string | null
  projectId: string | null
  detail: string | null
}

/** The email a report is about: a verified VERP address first, then the original's Message-ID. */
async function findEmail(deps: Deps, db: Db, verps: string[], originalMessageId: string | null, projectId: string | null): Promise<FeedbackEmail | null> {
  for (const a of verps) {
    const v = parseVerp(deps, a)
    if (!v) continue
    const email = await feedbackEmailById(deps, db, v.emailId)
    if (email) return email
  }
  if (originalMessageId) {
    const [email] = await emailsByMessageId(deps, db, originalMessageId, projectId)
    if (email) return feedbackEmailById(deps, db, email.id)
  }
  return null
}

/** The DSN recipient about this email: its address if listed, else the first failed or delayed one. */
function recipientFor(report: DsnReport, email: FeedbackEmail): DsnRecipient | null {
  const failing = report.recipients.filter((r) => r.bounceType !== null)
  const to = email.toAddress.toLowerCase()
  return failing.find((r) => r.address === to || r.finalRecipient === to || r.originalRecipient === to) ?? failing[0] ?? null
}

type Outcome = Omit<ProcessResult, 'status'> & { status: InboundStatus; effects?: FeedbackResult; events?: EventRow[] }

async function onDsn(deps: Deps, db: Db, row: InboundRow, report: DsnReport): Promise<Outcome> {
  const email = await findEmail(deps, db, [...row.rcptTo, ...report.verpAddresses], report.originalMessageId, row.projectId)
  if (!email) return { status: 'ignored', kind: 'dsn', emailId: null, projectId: row.projectId, detail: 'bounce for no email of this server (no valid VERP address or known Message-ID)' }
  const r = recipientFor(report, email)
  if (!r?.bounceType) {
    return { status: 'processed', kind: 'dsn', emailId: email.id, projectId: email.projectId, detail: `delivery report without a failure (${report.recipients.map((x) => x.action).join(', ')})` }
  }
  const ctx = ctxFor(deps, email.projectId, { kind: 'job', name: INBOUND_JOB })
  if (r.action === 'delayed') {
    const effects = await applyDelay(ctx, db, email, {
      source: 'dsn', status: r.status, diagnostic: r.diagnosticCode, recipient: r.address, reportingMta: report.reportingMta,
      remoteMta: r.remoteMta, willRetryUntil: r.willRetryUntil, extra: { action: r.action, heuristic: report.heuristic, inboundId: row.id },
      at: deps.clock.date(),
    })
    return { status: 'processed', kind: 'dsn', emailId: email.id, projectId: email.projectId, detail: `delayed, still being retried (${r.status ?? 'no status'}): email.delayed, not a bounce`, effects }
  }
  // Action: failed (or an unknown action): the reporting MTA gave up, so the email bounced whatever the code.
  const effects = await applyBounce(ctx, db, email, {
    source: 'dsn', bounceType: r.bounceType, bounceKind: r.bounceKind, status: r.status, diagnostic: r.diagnosticCode,
    recipient: r.address, reportingMta: report.reportingMta, remoteMta: r.remoteMta,
    extra: { action: r.action, heuristic: report.heuristic, inboundId: row.id },
    final: true, at: deps.clock.date(),
  })
  const detail = effects.applied
    ? `${r.bounceType} bounce (${r.status ?? 'no status'}, ${r.bounceKind ?? 'other'})${effects.suppressed ? ', address suppressed' : ''}`
    : 'duplicate bounce: the email was already recorded as bounced'
  return { status: 'processed', kind: 'dsn', emailId: email.id, projectId: email.projectId, detail, effects }
}

async function onArf(deps: Deps, db: Db, row: InboundRow, report: ArfReport): Promise<Outcome> {
  const email = await findEmail(deps, db, [...report.verpAddresses, ...row.rcptTo], report.originalMessageId, row.projectId)
  if (!email) return { status: 'ignored', kind: 'arf', emailId: null, projectId: row.projectId, detail: 'feedback report for no email of this server (no valid VERP address or known Message-ID)' }
  if (!report.isComplaint) {
    return { status: 'processed', kind: 'arf', emailId: email.id, projectId: email.projectId, detail: `feedback type ${report.feedbackType} is not a complaint: recorded only` }
  }
  const ctx = ctxFor(deps, email.projectId, { kind: 'job', name: INBOUND_JOB })
  const effects = await applyComplaint(ctx, db, email, {
    source: 'arf', feedbackType: report.feedbackType, userAgent: report.userAgent, recipient: report.originalRecipient,
    extra: { sourceIp: report.sourceIp, reportingMta: report.reportingMta, arrivalDate: report.arrivalDate?.toISOString() ?? null, inboundId: row.id },
    at: deps.clock.date(),
  })
  const detail = effects.applied ? `complaint (${report.feedbackType}): address suppressed, contact unsubscribed` : 'duplicate complaint: already recorded'
  return { status: 'processed', kind: 'arf', emailId: email.id, projectId: email.projectId, detail, effects }
}

/** The project of a verified domain among the message's recipients (decided again: the row may predate a change). */
async function domainProject(deps: Deps, row: InboundRow): Promise<{ projectId: string; to: string[] } | null> {
  let found: string | null = null
  const to: string[] = []
  for (const rcpt of row.rcptTo) {
    const route = await routeRecipient(deps, rcpt)
    if (route.accept && route.kind === 'domain') {
      found ??= route.projectId
      if (route.projectId === found) to.push(rcpt)
    }
  }
  return found ? { projectId: found, to } : null
}

async function onOther(deps: Deps, db: Db, row: InboundRow, mail: ReceivedSummary): Promise<Outcome> {
  const target = await domainProject(deps, row)
  if (!target) return { status: 'ignored', kind: 'other', emailId: null, projectId: row.projectId, detail: 'neither a bounce nor a feedback report, and not addressed to a verified domain' }
  const from = mail.from ?? (row.mailFrom ? row.mailFrom.toLowerCase() : null)
  let repliedTo: FeedbackEmail | null = null
  for (const id of [...(mail.inReplyTo ? [mail.inReplyTo] : []), ...[...mail.references].reverse()]) {
    const [e] = await emailsByMessageId(deps, db, id, target.projectId)
    if (e) { repliedTo = e; break }
  }
  const contactId = repliedTo?.contactId ?? (from ? await contactIdByEmail(deps.store, db, target.projectId, from) : null)
  const ctx = ctxFor(deps, target.projectId, { kind: 'job', name: INBOUND_JOB })
  if (await chargeUsage(ctx, db, { inbound: 1 }, { throwOnExceed: false })) {
    return { status: 'ignored', kind: 'other', emailId: null, projectId: target.projectId, detail: 'over the project\'s monthly inbound cap (billing-limits): not recorded as email.received' }
  }
  const events = await appendEvents(ctx, db, [{
    contactId, name: 'email.received', emailId: repliedTo?.id ?? null, createdAt: row.receivedAt,
    data: {
      inboundId: row.id, from, to: target.to, subject: mail.subject,
      messageId: mail.messageId, inReplyTo: mail.inReplyTo, emailId: repliedTo?.id ?? null,
      autoSubmitted: mail.autoSubmitted, snippet: mail.snippet, size: row.size,
      receivedAt: row.receivedAt.toISOString(),
    },
  }])
  return { status: 'processed', kind: 'other', emailId: repliedTo?.id ?? null, projectId: target.projectId, detail: 'email.received', events }
}

/** A mail to the List-Unsubscribe mailto of an email: its contact is unsubscribed (counted on its campaign). */
async function onUnsubscribeMail(deps: Deps, db: Db, row: InboundRow, emailId: string): Promise<Outcome> {
  const email = await feedbackEmailById(deps, db, emailId)
  if (!email?.contactId) return { status: 'ignored', kind: 'unsubscribe', emailId: null, projectId: row.projectId, detail: 'unsubscribe request for an email or contact that no longer exists' }
  const ctx = ctxFor(deps, email.projectId, { kind: 'job', name: INBOUND_JOB })
  const r = await unsubscribeThroughEmail(ctx, db, { contactId: email.contactId, emailId: email.id, source: 'mailto' })
  return {
    status: 'processed', kind: 'unsubscribe', emailId: email.id, projectId: email.projectId, events: r.events,
    detail: r.changed ? 'List-Unsubscribe mailto: contact unsubscribed' : 'List-Unsubscribe mailto: the contact was already unsubscribed',
  }
}

/**
 * Processes one stored inbound message (idempotent). The message is parsed before the transaction
 * opens, so a large or hostile message holds no database lock (on SQLite, the one writer) while it is read.
 */
export async function processInbound(deps: Deps, inboundId: string): Promise<ProcessResult | null> {
  const stored = await loadInbound(deps.store, deps.store.db, inboundId)
  if (stored?.status !== 'queued') return null
  const analysis = await parseInbound(stored.raw instanceof Buffer ? stored.raw : Buffer.from(stored.raw))
  const result = await deps.store.tx(async (db) => {
    // Checked again inside the transaction: another run may have finished the message meanwhile.
    if (await inboundStatus(deps.store, db, inboundId) !== 'queued') return null
    const row = stored
    let out: Outcome
    // A message to an email's List-Unsubscribe mailto (neither a bounce nor a report) unsubscribes its contact.
    const unsubscribe = analysis.kind === 'other' || analysis.kind === 'unparseable'
      ? row.rcptTo.map((a) => parseUnsubscribeAddress(deps, a)).find((x) => x !== null) ?? null
      : null
    if (unsubscribe) out = await onUnsubscribeMail(deps, db, row, unsubscribe.emailId)
    else switch (analysis.kind) {
      case 'dsn': out = await onDsn(deps, db, row, analysis); break
      case 'arf': out = await onArf(deps, db, row, analysis); break
      case 'other': out = await onOther(deps, db, row, analysis.mail); break
      case 'unparseable': out = { status: 'failed', kind: 'unparseable', emailId: null, projectId: row.projectId, detail: analysis.reason }; break
    }
    const outcome: InboundOutcome = { status: out.status, kind: out.kind, projectId: out.projectId, emailId: out.emailId, detail: out.detail, processedAt: deps.clock.date() }
    if (!await finishInbound(deps.store, db, row.id, outcome)) return null
    return { out, events: [...(out.effects?.events ?? []), ...(out.events ?? [])] }
  })
  if (!result) return null
  const { out, events } = result
  const fields = { inboundId, kind: out.kind, status: out.status, emailId: out.emailId, projectId: out.projectId, detail: out.detail }
  if (out.status === 'failed') deps.log.warn('inbound message unreadable: stored, not processed', fields)
  else deps.log.info('inbound message processed', fields)
  if (events.length && out.projectId) await notifyEvents(ctxFor(deps, out.projectId, { kind: 'job', name: INBOUND_JOB }), events)
  return { status: out.status, kind: out.kind, emailId: out.emailId, projectId: out.projectId, detail: out.detail }
}

/** Marks a message failed after its last attempt threw (so it is not left queued forever). */
export async function giveUpInbound(deps: Deps, inboundId: string, err: unknown): Promise<void> {
  await deps.store.tx((db) => finishInbound(deps.store, db, inboundId, {
    status: 'failed', kind: null, emailId: null, processedAt: deps.clock.date(),
    detail: `processing failed: ${err instanceof Error ? err.message : String(err)}`,
  }))
}

/** Finished inbound messages are kept this long (for an operator to look at), then deleted. */
export const INBOUND_RETENTION_MS = 30 * 24 * 3600_000

/** Deletes finished inbound messages older than the retention; how many. */
export function pruneInboundMessages(deps: Deps, now = deps.clock.date()): Promise<number> {
  return deps.store.tx((db) => pruneInbound(deps.store, db, new Date(now.getTime() - INBOUND_RETENTION_MS)))
}

/**
 * Stores a received message and queues its processing, in one transaction (the receiver answers 250 only
 * after it commits).
 */
export async function storeInbound(deps: Deps, input: { raw: Buffer; mailFrom: string; rcptTo: string[]; projectId: string | null; remoteAddress: string | null; helo: string | null; id?: string; at?: Date }): Promise<string> {
  const id = input.id ?? Bun.randomUUIDv7()
  const at = input.at ?? deps.clock.date()
  await deps.store.tx(async (db) => {
    await insertInbound(deps.store, db, {
      id, projectId: input.projectId, mailFrom: input.mailFrom, rcptTo: input.rcptTo, remoteAddress: input.remoteAddress,
      helo: input.helo, size: input.raw.length, raw: input.raw, status: 'queued', kind: null, emailId: null, detail: null,
      receivedAt: at, processedAt: null,
    })
    await enqueue(deps.store, INBOUND_JOB, { inboundId: id }, { wake: deps, now: deps.clock.date(), projectId: input.projectId, maxAttempts: 5 }, db)
  })
  return id
}
