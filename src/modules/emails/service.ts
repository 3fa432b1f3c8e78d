import addressparser from 'nodemailer/lib/addressparser'
import type { Db } from '../../db/client'
import type { StoredAttachment } from '../../db/schema/sending'
import type { Ctx } from '../../deps'
import { AppError, invalidField, notFound, tooLarge, validation, type FieldError } from '../../errors'
import { manageUrl, subscribeUrl, unsubscribeUrl } from '../../mail/links'
import { composeMessage, domainOf, STRUCTURAL_HEADERS } from '../../mail/mime'
import { refusedHeader } from '../../mail/header-policy'
import { MAX_MESSAGE_BYTES, outboundMessage } from '../../mail/outbound/deliver'
import { notifyQueued } from '../../mail/outbound'
import { deliveryStateOf, insertQueueRows, type QueueRow } from '../../mail/outbound/queue-repo'
import { MAX_QUEUE_LIFETIME_MS } from '../../mail/outbound/replies'
import { renderMessage, renderRefusal, templateVariables, checkTemplateSource } from '../../mail/render'
import { checkDataLimits } from '../contacts/data'
import { upsertContact, upsertMany, type ContactRow, type UpsertResult } from '../contacts/service'
import { assertSenderAllowed, signingKeyFor } from '../domains/service'
import { renderDeferred } from '../campaigns/render'
import type { Batched } from '../../db/group-commit'
import { notifyEvents, type EventRow } from '../events/stream'
import { categoryOf, chargeUsage, type Category } from '../billing/service'
import { withIdempotency } from '../idempotency/service'
import { suppressedAmong } from '../suppressions/service'
import { getTemplate } from '../templates/service'
import { trackingEnabled } from '../tracking/service'
import { rewriteForTracking } from '../../mail/render/tracking'
import type { Template } from '../templates/model'
import { MAX_ATTACHMENT_BYTES, MAX_HEADER_VALUE, type EmailAttempts, type EmailDetail, type EmailHeaders, type EmailRecord, type SendBody } from './model'
import * as repo from './repo'
import type { EmailContentRow, EmailRow } from './repo'

/** What every email.* source is (docs/decisions.md, Events the service emits: `sourceType`). */
export type SourceType = 'send' | 'campaign' | 'workflow' | 'relay' | 'test' | 'system'
export type EmailType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS'

/** Queue order: transactional mail before bulk, whatever was queued first. */
export const PRIORITY = { transactional: 0, bulk: 10 } as const

/**
 * One rendered email to queue: the input of the one outbound pipeline for send, campaigns, workflows
 * and the relay. `domainId` comes from assertSenderAllowed.
 */
export interface NewEmail {
  id?: string
  contactId: string | null
  to: { email: string; name?: string | null }
  from: { email: string; name?: string | null }
  replyTo?: string | null
  subject: string
  html: string | null
  text: string | null
  headers?: Record<string, string>
  attachments?: StoredAttachment[] | null
  type: EmailType
  sourceType: SourceType
  sourceId?: string | null
  templateId?: string | null
  campaignId?: string | null
  domainId: string
  /** RFC 8058 one-click List-Unsubscribe (marketing and workflow mail). */
  listUnsubscribe: boolean
  priority?: number
  /**
   * No content is stored: the body is rendered from the campaign and the contact when the email is built
   * for delivery (src/modules/campaigns/render.ts). `html` and `text` are then ignored.
   */
  renderAtDelivery?: boolean
  /** When the outbound queue may send it (default now): a project's sending rate spreads campaign mail. */
  runAt?: Date
  /**
   * The email could not be made (a campaign recipient whose subject exceeded its render budget): it is
   * recorded FAILED with this reason, with no content and nothing queued.
   */
  failure?: string
}

/**
 * Inserts emails (status PENDING) and their queue rows inside the caller's transaction: once it commits
 * they are durably queued. The caller calls `notifyQueued(deps)` after the commit.
 */
export async function queueEmails(ctx: Ctx, db: Db, items: NewEmail[], opts: { tracking?: Promise<boolean> } = {}): Promise<EmailRow[]> {
  const now = ctx.now
  const expiresAt = new Date(now.getTime() + MAX_QUEUE_LIFETIME_MS)
  // Open and click tracking (projects.tracking_enabled): signed click links and the pixel go in here
  // (content rendered at delivery gets them there). A caller may have asked already (`opts.tracking`,
  // read in the same transaction together with its own first statements).
  const tracking = items.some((it) => !it.renderAtDelivery) ? await (opts.tracking ?? trackingEnabled(ctx.store, ctx.projectId, db)) : false
  const rows: EmailRow[] = []
  const contents: EmailContentRow[] = []
  const queue: QueueRow[] = []
  for (const it of items) {
    const id = it.id ?? Bun.randomUUIDv7()
    const fromAddress = it.from.email.trim().toLowerCase()
    const toAddress = it.to.email.trim().toLowerCase()
    rows.push({
      id, projectId: ctx.projectId, contactId: it.contactId, templateId: it.templateId ?? null, campaignId: it.campaignId ?? null,
      sourceType: it.sourceType, sourceId: it.sourceId ?? null, type: it.type, domainId: it.domainId,
      messageId: `<${id}@${domainOf(fromAddress)}>`,
      fromAddress, fromName: it.from.name ?? null, toAddress, toName: it.to.name ?? null, replyTo: it.replyTo ?? null,
      subject: it.subject, listUnsubscribe: it.listUnsubscribe,
      status: it.failure ? 'FAILED' : 'PENDING', attempts: 0, lastReply: it.failure ?? null, deliveredTo: null, bounceType: null, size: null,
      sentAt: null, deliveredAt: null, openedAt: null, clickedAt: null, bouncedAt: null, complainedAt: null, failedAt: it.failure ? now : null,
      createdAt: now, updatedAt: now, inlineEvents: null,
    })
    if (it.failure) continue
    if (!it.renderAtDelivery) {
      contents.push({
        emailId: id, html: rewriteForTracking(ctx.deps, { emailId: id, html: it.html, trackingEnabled: tracking }), text: it.text,
        headers: it.headers ?? {}, attachments: it.attachments?.length ? it.attachments : null,
      })
    }
    queue.push({
      emailId: id, projectId: ctx.projectId, domain: domainOf(toAddress), priority: it.priority ?? PRIORITY.transactional,
      runAt: it.runAt ?? now, attempts: 0, lockedBy: null, lockedUntil: null, lastError: null, expiresAt, createdAt: now,
    })
  }
  // Usage caps: counted with the emails, refused (429, nothing queued) over the project's monthly cap.
  const perCategory: Partial<Record<Category, number>> = {}
  // System mail (verification, password reset, invitations: src/mail/system.ts) is the server's, not the project's.
  for (const r of rows) {
    if (r.sourceType === 'system') continue
    const c = categoryOf(r.sourceType)
    perCategory[c] = (perCategory[c] ?? 0) + 1
  }
  // Started in this order and awaited together (on PostgreSQL one round trip for the three: postgres.js
  // writes the statements of one turn at once). The charge comes last so that the project's usage row,
  // which every concurrent send of the project updates, stays locked only until the commit right after.
  await Promise.all([
    repo.insertEmails(ctx.store, db, rows, contents),
    insertQueueRows(ctx.store, db, queue),
    chargeUsage(ctx, db, perCategory),
  ])
  return rows
}

// ---------------------------------------------------------------------------------------------------
// POST /v1/send

export interface SendResult {
  success: true
  data: {
    /** One entry per recipient in request order; a suppressed address has no email id. */
    emails: Array<{ contact: { id: string; email: string } } & ({ email: string; status: 'queued' } | { status: 'suppressed'; reason: string })>
    timestamp: string
  }
}

const HEADER_NAME_RE = /^[!-9;-~]+$/

/**
 * Custom headers: printable names without ':' and no CR/LF anywhere (header injection is a 422); trust and
 * routing headers, and List-Unsubscribe on mail that is not transactional, are refused (src/mail/header-policy.ts).
 */
function checkHeaders(headers: Record<string, string> | undefined, type: EmailType): Record<string, string> {
  const out: Record<string, string> = {}
  const errors: FieldError[] = []
  for (const [name, value] of Object.entries(headers ?? {})) {
    const field = `headers.${name}`
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) {
      errors.push({ field, message: `${field}: header names and values must not contain CR or LF`, code: 'header_injection', received: value })
    } else if (!HEADER_NAME_RE.test(name) || name.length > 76) {
      errors.push({ field, message: `${field}: a header name is 1-76 printable ASCII characters without ":" or spaces`, code: 'invalid_header', received: name })
    } else if (STRUCTURAL_HEADERS.has(name.toLowerCase())) {
      errors.push({ field, message: `${field}: ${name} is set by the server (use from, to, subject, reply)`, code: 'reserved_header', received: name })
    } else if (refusedHeader(name, type)) {
      errors.push({ field, message: `${field}: ${refusedHeader(name, type)}`, code: 'reserved_header', received: name })
    } else if (value.length > MAX_HEADER_VALUE) {
      errors.push({ field, message: `${field}: a header value is at most ${MAX_HEADER_VALUE} characters`, code: 'too_big', received: value.length })
    } else if (/[^\t\x20-\x7e\u00a0-\uffff]/.test(value)) {
      errors.push({ field, message: `${field}: a header value must not contain control characters`, code: 'invalid_header', received: value })
    } else {
      out[name] = value
    }
  }
  if (errors.length) throw validation(errors, errors.length === 1 ? errors[0].message : 'Invalid headers')
  return out
}

const BASE64_RE = /^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/

/** Attachments: valid base64, inline ones with a contentId, at most 10 MB decoded in total (413). */
function checkAttachments(list: SendBody['attachments']): { attachments: StoredAttachment[]; encodedChars: number } {
  const errors: FieldError[] = []
  const attachments: StoredAttachment[] = []
  let total = 0
  let encodedChars = 0
  for (const [i, a] of (list ?? []).entries()) {
    const content = a.content.replace(/\s+/g, '')
    if (!BASE64_RE.test(content) || content.length % 4 === 1) {
      errors.push({ field: `attachments.${i}.content`, message: `attachments.${i}.content: must be base64`, code: 'invalid_string' })
      continue
    }
    const disposition = a.disposition ?? (a.contentId ? 'inline' : 'attachment')
    if (disposition === 'inline' && !a.contentId) {
      errors.push({ field: `attachments.${i}.contentId`, message: `attachments.${i}.contentId: required for an inline attachment`, code: 'required' })
      continue
    }
    const size = Buffer.byteLength(content, 'base64')
    total += size
    encodedChars += content.length
    attachments.push({
      filename: a.filename, content, contentType: a.contentType ?? guessType(a.filename), disposition, size,
      ...(a.contentId ? { contentId: a.contentId } : {}),
    })
  }
  if (errors.length) throw validation(errors, errors.length === 1 ? errors[0].message : 'Invalid attachments')
  if (total > MAX_ATTACHMENT_BYTES) throw tooLarge(`Attachments total ${total} bytes, above the ${MAX_ATTACHMENT_BYTES}-byte limit`)
  return { attachments, encodedChars }
}

const TYPES: Record<string, string> = {
  pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv', html: 'text/html', htm: 'text/html', json: 'application/json',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
  ics: 'text/calendar', zip: 'application/zip', xml: 'application/xml', doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
}
function guessType(filename: string): string {
  const ext = filename.toLowerCase().split('.').pop() ?? ''
  return TYPES[ext] ?? 'application/octet-stream'
}

/** Parsed `from` strings: a sender sends with the same one again and again (bounded, valid ones only). */
const parsedFrom = new Map<string, { email: string; name: string | null }>()

/** `from` as given: an address, "Name <address>", or {name, email}. */
function parseFrom(from: SendBody['from']): { email: string; name: string | null } | null {
  if (from === undefined) return null
  if (typeof from !== 'string') return { email: from.email.trim().toLowerCase(), name: from.name ?? null }
  const hit = parsedFrom.get(from)
  if (hit) return { ...hit }
  const parsed = parseFromString(from)
  if (parsedFrom.size >= 1000) parsedFrom.clear()
  parsedFrom.set(from, parsed)
  return { ...parsed }
}

function parseFromString(from: string): { email: string; name: string | null } {
  const [first] = addressparser(from, { flatten: true })
  const email = first?.address?.trim().toLowerCase() ?? ''
  if (!first || !/^[^\s@<>",;]+@[^\s@<>",;]+\.[^\s@<>",;]+$/.test(email) || /[\r\n]/.test(from)) {
    throw invalidField('from', 'from: Expected an email address, "Name <email>" or {name, email}', 'invalid_string', from)
  }
  return { email, name: first.name ? first.name : null }
}

type Recipient = { email: string; name: string | null }
function recipients(to: SendBody['to']): Recipient[] {
  const list = Array.isArray(to) ? to : [to]
  return list.map((r) => (typeof r === 'string' ? { email: r.trim().toLowerCase(), name: null } : { email: r.email.trim().toLowerCase(), name: r.name ?? null }))
}

/**
 * POST /v1/send: each recipient, one after another, gets its contact upserted (new contacts unsubscribed
 * unless `subscribed` says otherwise), its own rendering and an email queued; suppressed addresses get no
 * email and are reported with `status: 'suppressed'`. Everything is one transaction: the answer comes after the
 * emails are durably queued, and a failure leaves nothing behind.
 */
export async function sendEmails(ctx: Ctx, body: SendBody, idempotencyKey?: string | null): Promise<SendResult> {
  // Before the Idempotency-Key is claimed (its hash serializes the body) and before any other work.
  checkDataLimits(body.data)
  return withIdempotency(ctx, idempotencyKey, { method: 'POST', path: '/v1/send', body }, () => send(ctx, body))
}

/** What a send request asks for, checked before its transaction (no reads of contacts or suppressions). */
interface SendPlan {
  template: Template | null
  subjectSrc: string
  bodySrc: string
  format: 'html' | 'markdown'
  from: { email: string; name: string | null }
  replyTo: string | null
  type: EmailType
  headers: Record<string, string>
  attachments: StoredAttachment[]
  encodedChars: number
  domainId: string
  list: Recipient[]
  /** Signed links cost an HMAC each: only those the subject or body can refer to are made. */
  uses: { unsubscribeUrl: boolean; subscribeUrl: boolean; manageUrl: boolean }
}

/** One send request as a group-committed write (sendBatch). */
interface SendJob { ctx: Ctx; body: SendBody; plan: SendPlan }
interface SendWritten { emails: SendResult['data']['emails']; queued: number; events: EventRow[] }

async function send(ctx: Ctx, body: SendBody): Promise<SendResult> {
  const plan = await planSend(ctx, body)
  const { emails, queued, events } = await ctx.deps.runtime.commits.runMany(sendBatch, { ctx, body, plan })
  if (queued) notifyQueued(ctx.deps)
  await notifyEvents(ctx, events)
  return { success: true, data: { emails, timestamp: ctx.deps.clock.date().toISOString() } }
}

async function planSend(ctx: Ctx, body: SendBody): Promise<SendPlan> {
  let template: Template | null = null
  if (body.template) template = await getTemplate(ctx, body.template)
  const subjectSrc = body.subject ?? template?.subject
  const bodySrc = body.body ?? template?.body
  // (A template always has both, so this only refuses a request without one.)
  if (subjectSrc === undefined || bodySrc === undefined) {
    const errors: FieldError[] = []
    if (subjectSrc === undefined) errors.push({ field: 'subject', message: 'subject: required unless a template is given', code: 'required' })
    if (bodySrc === undefined) errors.push({ field: 'body', message: 'body: required unless a template is given', code: 'required' })
    throw validation(errors, 'Give either a template or both subject and body')
  }
  // The template's own sources were checked when it was saved; request sources are checked now (and a
  // template's body read as Markdown, which compiles it into the cache as such).
  const format = body.type ?? 'html'
  await checkTemplateSource({ subject: body.subject, body: format === 'markdown' ? bodySrc : body.body, format })
  const given = parseFrom(body.from)
  const fromEmail = given?.email ?? template?.from ?? null
  if (!fromEmail) throw invalidField('from', 'from: required unless the template has a sender', 'required')
  const fromName = given ? (given.name ?? body.name ?? null) : (body.name ?? template?.fromName ?? null)
  const type = (template?.type ?? 'TRANSACTIONAL') as EmailType
  const headers = checkHeaders(body.headers, type)
  const { attachments, encodedChars } = checkAttachments(body.attachments)
  const sender = await assertSenderAllowed(ctx, fromEmail)
  const sources = `${subjectSrc} ${bodySrc}`
  return {
    template, subjectSrc, bodySrc, format, from: { email: fromEmail, name: fromName }, replyTo: body.reply ?? template?.replyTo ?? null,
    type, headers, attachments, encodedChars, domainId: sender.domainId, list: recipients(body.to),
    uses: { unsubscribeUrl: sources.includes('unsubscribeUrl'), subscribeUrl: /(^|[^\w])subscribeUrl/.test(sources), manageUrl: sources.includes('manageUrl') },
  }
}

/**
 * The email of one recipient whose contact is upserted: reported suppressed (no email), or rendered within
 * the render budgets (a heavy render, Markdown or {{#each}}, runs in a render thread) and pushed to `items`.
 */
async function emailFor(job: SendJob, r: Recipient, contact: { id: string; email: string; data: ContactRow['data'] }, blocked: Map<string, { reason: string }>, items: NewEmail[]): Promise<SendResult['data']['emails'][number]> {
  const { ctx, body, plan } = job
  const ref = { id: contact.id, email: contact.email }
  const s = blocked.get(r.email)
  if (s) return { contact: ref, status: 'suppressed', reason: s.reason }
  const id = Bun.randomUUIDv7()
  const link = { projectId: ctx.projectId, contactId: contact.id, emailId: id }
  const vars = templateVariables({
    contact: { id: contact.id, email: contact.email, data: contact.data },
    data: body.data ?? null,
    urls: {
      ...(plan.uses.unsubscribeUrl ? { unsubscribeUrl: unsubscribeUrl(ctx.deps, link) } : {}),
      ...(plan.uses.subscribeUrl ? { subscribeUrl: subscribeUrl(ctx.deps, link) } : {}),
      ...(plan.uses.manageUrl ? { manageUrl: manageUrl(ctx.deps, link) } : {}),
    },
  })
  const rendered = await renderMessage({ subject: plan.subjectSrc, body: plan.bodySrc, format: plan.format }, vars).catch((err: unknown) => { throw renderRefusal(err) })
  // Base64 grows by 4/3 plus line breaks; HTML and text by at most a little with quoted-printable.
  const estimate = Math.ceil(plan.encodedChars * 1.03) + Math.ceil((rendered.html.length + rendered.text.length) * 1.1) + 4096
  if (estimate > MAX_MESSAGE_BYTES) throw tooLarge(`The message would be about ${estimate} bytes, above the ${MAX_MESSAGE_BYTES}-byte limit`)
  items.push({
    id, contactId: contact.id, to: r, from: plan.from, replyTo: plan.replyTo,
    subject: rendered.subject, html: rendered.html, text: rendered.text, headers: plan.headers, attachments: plan.attachments,
    type: plan.type, sourceType: 'send', templateId: plan.template?.id ?? null, domainId: plan.domainId,
    listUnsubscribe: plan.type === 'MARKETING', priority: PRIORITY.transactional,
  })
  return { contact: ref, email: id, status: 'queued' }
}

/**
 * One send request alone, inside the caller's transaction: each recipient gets its contact upserted (new
 * contacts unsubscribed unless `subscribed` says otherwise), its own rendering and an email queued;
 * suppressed addresses get no email.
 */
async function writeSend(db: Db, job: SendJob): Promise<SendWritten> {
  // Refused while its batch was written together: the same answer, without rendering it a second time.
  const refusal = refusedInBatch.get(job)
  if (refusal) throw refusal
  const { ctx, body, plan } = job
  // The suppressions and the tracking setting are asked together with the first contact's read (on
  // PostgreSQL they share its round trip); a rejection is awaited below, or dropped if the loop throws first.
  const blockedRead = suppressedAmong(ctx, db, plan.list.map((r) => r.email))
  const trackingRead = trackingEnabled(ctx.store, ctx.projectId, db)
  blockedRead.catch(() => {})
  trackingRead.catch(() => {})
  const upserts: UpsertResult[] = []
  for (const r of plan.list) upserts.push(await upsertContact(ctx, { email: r.email, subscribed: body.subscribed, data: body.data ?? undefined }, { defaultSubscribed: false, db }))
  const blocked = await blockedRead
  const emails: SendResult['data']['emails'] = []
  const items: NewEmail[] = []
  for (const [i, r] of plan.list.entries()) emails.push(await emailFor(job, r, upserts[i].contact, blocked, items))
  await queueEmails(ctx, db, items, { tracking: trackingRead })
  return { emails, queued: items.length, events: upserts.flatMap((u) => u.events) }
}

/**
 * Send requests as one kind of group-committed write (db/group-commit.ts, runMany): the requests of a
 * batch are written with a few statements for all of them, per project: one read of the suppressions, the
 * contacts upserted together (contacts/service.ts, upsertMany), one read of the tracking setting, then one
 * insert each of the emails, their contents and their queue rows and one charge of the usage, instead of
 * about ten statements per request (on PostgreSQL each a round trip). Anything unusual (one recipient
 * twice in a batch, a data limit, a render refusal, a usage cap) makes `many` throw: the batch then runs
 * again with each request alone (`writeSend`, each in its savepoint), where the one at fault fails alone.
 */
/** Requests whose rendering was refused while their batch was written together (see writeSend). A note on each request object, not per-store state. */
const refusedInBatch = new WeakMap<SendJob, AppError>()

const sendBatch: Batched<SendJob, SendWritten> = {
  one: writeSend,
  async many(db, jobs) {
    const out: SendWritten[] = new Array(jobs.length)
    const byProject = new Map<string, number[]>()
    for (let i = 0; i < jobs.length; i++) {
      const list = byProject.get(jobs[i].ctx.projectId)
      if (list) list.push(i)
      else byProject.set(jobs[i].ctx.projectId, [i])
    }
    for (const indexes of byProject.values()) {
      const ctx = jobs[indexes[0]].ctx
      const addresses = indexes.flatMap((i) => jobs[i].plan.list.map((r) => r.email))
      if (new Set(addresses).size !== addresses.length) throw new Error('send batch: one recipient twice')
      const blockedRead = suppressedAmong(ctx, db, addresses)
      const trackingRead = trackingEnabled(ctx.store, ctx.projectId, db)
      blockedRead.catch(() => {})
      trackingRead.catch(() => {})
      const inputs = indexes.flatMap((i) => jobs[i].plan.list.map((r) => ({ email: r.email, subscribed: jobs[i].body.subscribed, data: jobs[i].body.data ?? undefined })))
      const up = await upsertMany(ctx, db, inputs, { defaultSubscribed: false })
      const refused = up.refused.find((r) => r !== undefined)
      if (refused !== undefined) throw new Error(`send batch: ${refused}`)
      const blocked = await blockedRead
      const items: NewEmail[] = []
      let k = 0
      for (const i of indexes) {
        const emails: SendResult['data']['emails'] = []
        for (const r of jobs[i].plan.list) {
          emails.push(await emailFor(jobs[i], r, up.contacts[k++], blocked, items).catch((err: unknown) => {
            // A render refusal is the request's answer: kept, so that running it alone does not render again.
            if (err instanceof AppError) refusedInBatch.set(jobs[i], err)
            throw err
          }))
        }
        out[i] = { emails, queued: emails.filter((e) => e.status === 'queued').length, events: [] }
      }
      await queueEmails(ctx, db, items, { tracking: trackingRead })
      // The subscription events of the project's contacts go out with its first request of the batch
      // (notifyEvents wakes the project's consumers; who carries them does not matter).
      out[indexes[0]].events = up.events
    }
    return out
  },
}

// ---------------------------------------------------------------------------------------------------
// Reading emails

function iso(d: Date | null): string | null { return d ? d.toISOString() : null }

export function toEmailRecord(r: Omit<EmailRow, 'inlineEvents'>): EmailRecord {
  return {
    id: r.id, contactId: r.contactId, templateId: r.templateId, campaignId: r.campaignId, sourceType: r.sourceType,
    type: r.type, messageId: r.messageId, from: r.fromAddress, fromName: r.fromName, to: r.toAddress, toName: r.toName,
    replyTo: r.replyTo, subject: r.subject, status: r.status, attempts: r.attempts, lastReply: r.lastReply,
    deliveredTo: r.deliveredTo, bounceType: r.bounceType, sentAt: iso(r.sentAt), deliveredAt: iso(r.deliveredAt),
    openedAt: iso(r.openedAt), clickedAt: iso(r.clickedAt), bouncedAt: iso(r.bouncedAt), complainedAt: iso(r.complainedAt),
    failedAt: iso(r.failedAt), createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString(),
  }
}

/** GET /emails/:id, with where the email is in delivery. Another project's id answers 404. */
export async function getEmail(ctx: Ctx, id: string): Promise<EmailDetail> {
  const row = await repo.findEmail(ctx.store, ctx.projectId, id)
  if (!row) throw notFound('email')
  const delivery = await deliveryStateOf(ctx.store, ctx.projectId, id, ctx.now)
  return { ...toEmailRecord(row), deliveryState: delivery.state, nextAttemptAt: iso(delivery.nextAttemptAt) }
}

/** The events of the delivery pipeline that record an attempt (src/mail/outbound/recorder.ts), by precedence. */
const ATTEMPT_EVENTS = ['email.delivery', 'email.sent', 'email.bounce', 'email.failed', 'email.deferred'] as const
type Attempt = EmailAttempts['data'][number]

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

/**
 * The attempt's TLS: email.delivery always records `tls`; other events only when the session went in
 * clear although TLS was tried (`tlsNote`, recorder.ts). A delivery in clear without a note was to a
 * server that did not offer STARTTLS.
 */
function tlsOf(data: Record<string, unknown>): Pick<Attempt, 'tls' | 'tlsNote'> {
  const tls = typeof data.tls === 'boolean' ? data.tls : null
  const note = str(data.tlsNote)
  return { tls, tlsNote: note ?? (tls === false ? 'the server did not offer STARTTLS' : null) }
}

function outcomeOf(name: string, data: Record<string, unknown>): Attempt['outcome'] {
  if (name === 'email.deferred') return 'deferred'
  if (name === 'email.bounce') return 'bounced'
  if (name === 'email.failed') return 'failed'
  return data.host === 'capture' ? 'captured' : 'accepted'
}

/**
 * GET /emails/:id/attempts: every delivery attempt with its SMTP reply, from the events the recorder
 * appends (email.deferred per deferral; the final outcome's events carry the attempt's number). Mail
 * whose attempts came before those events existed shows its last reply (the record's) as its last attempt.
 */
export async function getEmailAttempts(ctx: Ctx, id: string): Promise<EmailAttempts> {
  const row = await repo.findEmail(ctx.store, ctx.projectId, id)
  if (!row) throw notFound('email')
  const events = await repo.emailEvents(ctx.store, ctx.projectId, id, ATTEMPT_EVENTS)
  const byAttempt = new Map<number, { rank: number; attempt: Attempt }>()
  for (const e of events) {
    const n = e.data.attempt
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) continue
    const rank = ATTEMPT_EVENTS.indexOf(e.name as (typeof ATTEMPT_EVENTS)[number])
    const seen = byAttempt.get(n)
    if (seen && seen.rank <= rank) continue
    byAttempt.set(n, {
      rank,
      attempt: {
        attempt: n, at: e.createdAt.toISOString(), outcome: outcomeOf(e.name, e.data), host: str(e.data.host),
        reply: str(e.data.reply) ?? str(e.data.reason), smtpCode: typeof e.data.smtpCode === 'number' ? e.data.smtpCode : null,
        enhancedCode: str(e.data.enhancedCode), nextAttemptAt: str(e.data.nextAttemptAt), ...tlsOf(e.data),
      },
    })
  }
  const data = [...byAttempt.values()].map((v) => v.attempt).sort((a, b) => a.attempt - b.attempt)
  const last = data.length ? data[data.length - 1].attempt : 0
  if (row.attempts > last && row.lastReply) {
    const code = /^([2-5]\d\d)[ -]/.exec(row.lastReply)
    const outcome: Attempt['outcome'] = row.status === 'PENDING' || row.status === 'SENDING' ? 'deferred'
      : row.status === 'FAILED' ? 'failed' : row.bounceType === 'hard' || (row.status === 'BOUNCED' && !row.sentAt) ? 'bounced' : 'accepted'
    data.push({
      attempt: row.attempts, at: (row.failedAt ?? row.bouncedAt ?? row.sentAt ?? row.updatedAt).toISOString(), outcome,
      host: row.deliveredTo, reply: row.lastReply, smtpCode: code ? Number(code[1]) : null, enhancedCode: null, nextAttemptAt: null, tls: null, tlsNote: null,
    })
  }
  return { data, attempts: row.attempts, complete: data.length === row.attempts }
}

/** Unfolds a header section into its fields. */
function headerFields(raw: string): EmailHeaders['fields'] {
  const out: EmailHeaders['fields'] = []
  for (const line of raw.split(/\r?\n/)) {
    if (!line) continue
    if (/^[ \t]/.test(line) && out.length) {
      const f = out[out.length - 1]
      f.value = f.value ? `${f.value} ${line.trim()}` : line.trim()
    }
    else {
      const i = line.indexOf(':')
      if (i > 0) out.push({ name: line.slice(0, i), value: line.slice(i + 1).trim() })
    }
  }
  return out
}

/**
 * GET /emails/:id/headers: the header section of the email as the delivery pipeline builds it, rebuilt
 * from the stored record and content (the message itself is not kept). The DKIM-Signature, added when the
 * message is signed at delivery, and the receiving servers' own headers are not part of it; the MIME
 * boundary is drawn anew.
 */
export async function getEmailHeaders(ctx: Ctx, id: string): Promise<EmailHeaders> {
  const row = await repo.findEmail(ctx.store, ctx.projectId, id)
  if (!row) throw notFound('email')
  const [email] = await repo.loadForDelivery(ctx.store, [id])
  if (!email) throw notFound('email')
  const pruned = !email.hasContent && !email.campaignId
  if (!email.hasContent && email.campaignId) await renderDeferred(ctx.deps, [email])
  const vd = await signingKeyFor(ctx, domainOf(email.fromAddress))
  const message = outboundMessage(ctx.deps, email, [], vd?.returnPathDomain ?? domainOf(email.fromAddress))
  if (email.hasAttachments) {
    // Contents are dropped once the email is final; the structure (and so Content-Type) is the same.
    message.attachments = (await repo.loadAttachments(ctx.store, id)).map((a) => ({
      filename: a.filename, content: a.content ?? '', contentType: a.contentType, disposition: a.disposition, ...(a.contentId ? { contentId: a.contentId } : {}),
    }))
  }
  const buf = await composeMessage(message)
  const end = buf.indexOf('\r\n\r\n')
  const raw = buf.subarray(0, end < 0 ? buf.length : end).toString('utf8')
  const notes = ['Rebuilt from the stored email as the delivery pipeline builds it; the DKIM-Signature added at delivery is not kept, and the MIME boundary is drawn anew.']
  if (pruned) notes.push('The content of this email is no longer stored, so the headers of its body parts may differ.')
  if (!vd) notes.push('Its sender domain is no longer verified: List-Unsubscribe addresses use the sender\'s domain.')
  return { raw: raw.replace(/\r\n/g, '\n'), fields: headerFields(raw), note: notes.join(' ') }
}
