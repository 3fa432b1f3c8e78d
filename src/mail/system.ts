/**
 * System mail: what the platform itself sends to its users (verification, password reset, invitations).
 *
 * - MAILCTL_OUTBOUND=capture: written to the capture store (`captureMailOut`), like all mail there.
 * - Otherwise (`pipelineMailOut`): queued into the one outbound pipeline from MAILCTL_SYSTEM_FROM, so it
 *   is DKIM-signed, VERP-addressed, retried and bounced like any email. That address's domain must be a
 *   verified domain of some project (its most specific verified domain or parent, as the sender gate has
 *   it); the email belongs to that project (`sourceType: "system"`, no contact, not counted against its
 *   caps, plain text only so no tracking). Its content is never served by the API.
 * - MAILCTL_SYSTEM_FROM unset, or its domain not verified anywhere: captured, with a warning in the log;
 *   `mailctl doctor` reports both (systemSenderCheck).
 *
 * User text in system mail (a project's name, an inviter's name) reaches only the subject and the body:
 * the subject is folded onto one line with control characters removed, the recipient must be a plain
 * address, and the message is composed by the pipeline's MIME builder, never by string concatenation of
 * header lines. No header can be injected.
 */
import type { Store } from '../db/client'
import { ctxFor, type Deps } from '../deps'
import { errorFields } from '../log'
import { isEmail, normalizeEmail } from '../modules/contacts/data'
import { senderDomainCandidates } from '../modules/domains/names'
import { verifiedOwners } from '../modules/domains/repo'

/** Mail the platform itself sends to its users: verification, password reset, invitations. */
export interface SystemMail {
  kind: 'verify-email' | 'password-reset' | 'invitation' | 'account-exists'
  to: string
  subject: string
  text: string
  html?: string
  projectId?: string | null
}

/** The one mail-out interface for system mail. */
export interface MailOut {
  send(mail: SystemMail): Promise<void>
}

/** Writes system mail to the outbound capture store (MAILCTL_OUTBOUND=capture, or no usable sender). */
export function captureMailOut(store: Store, from: string): MailOut {
  return {
    async send(mail) {
      const { mailCapture } = store.t
      await store.tx((db) => db.insert(mailCapture).values({
        id: Bun.randomUUIDv7(),
        projectId: mail.projectId ?? null,
        kind: mail.kind,
        fromAddress: from,
        toAddress: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html ?? null,
        raw: null,
        meta: {},
        createdAt: new Date(),
      }))
    },
  }
}

/** The project whose verified domain covers `from` (the most specific one; a parent only if it allows subdomains), or null. */
export async function systemSenderProject(store: Store, from: string): Promise<{ projectId: string; domain: string } | null> {
  const candidates = senderDomainCandidates(from)
  const rows = (await verifiedOwners(store, store.db, candidates)).filter((r) => r.domain === candidates[0] || r.allowSubdomains)
  if (!rows.length) return null
  const best = rows.reduce((a, r) => (r.domain.length > a.domain.length ? r : a))
  return { projectId: best.projectId, domain: best.domain }
}

/** What `mailctl doctor` says about system mail (null when the store could not be read). */
export async function systemSenderCheck(config: Deps['config'], store: Store | null): Promise<{ status: 'ok' | 'warn'; detail: string } | null> {
  if (config.outbound === 'capture') return { status: 'ok', detail: 'captured with all other mail (MAILCTL_OUTBOUND=capture)' }
  if (!config.systemFrom) return { status: 'warn', detail: 'MAILCTL_SYSTEM_FROM is not set: verification, password-reset and invitation mail is only captured, never delivered' }
  if (!store) return null
  const owner = await systemSenderProject(store, config.systemFrom)
  if (!owner) return { status: 'warn', detail: `MAILCTL_SYSTEM_FROM ${config.systemFrom}: its domain is not a verified domain of any project, so system mail is only captured; add and verify it (mailctl domain)` }
  return { status: 'ok', detail: `from ${config.systemFrom}, DKIM-signed as ${owner.domain} (project ${owner.projectId})` }
}

/** One line, no control characters, at most 998 characters: user text (a project's name) cannot start a header. */
export function headerSafe(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: C0 controls and DEL are exactly what must not reach a header
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 998)
}

/**
 * System mail through the outbound pipeline from MAILCTL_SYSTEM_FROM (see the top of this file); `deps`
 * is read when a mail is sent (the composition root builds it after this). Falls back to `capture`,
 * with a warning, when there is no usable sender.
 */
export function pipelineMailOut(deps: () => Deps, capture: MailOut): MailOut {
  return {
    async send(mail) {
      const d = deps()
      const from = d.config.systemFrom
      const to = normalizeEmail(mail.to)
      const owner = from ? await systemSenderProject(d.store, from) : null
      if (!from || !owner || !isEmail(to)) {
        d.log.warn('system mail captured, not delivered', {
          kind: mail.kind,
          reason: !from ? 'MAILCTL_SYSTEM_FROM is not set' : !owner ? `the domain of MAILCTL_SYSTEM_FROM (${from}) is not a verified domain of any project` : 'the recipient is not a plain address',
        })
        return capture.send(mail)
      }
      const ctx = ctxFor(d, owner.projectId, { kind: 'job', name: `system-mail:${mail.kind}` })
      // Imported when system mail is sent: the composition root (and so every CLI command) imports this
      // file, and the send path brings the mail libraries (test/cli/startup.test.ts).
      const [{ assertSenderAllowed }, { PRIORITY, queueEmails }, { notifyQueued }] = await Promise.all([
        import('../modules/domains/service'), import('../modules/emails/service'), import('./outbound'),
      ])
      try {
        const sender = await assertSenderAllowed(ctx, from)
        const [row] = await d.store.tx((db) => queueEmails(ctx, db, [{
          contactId: null, to: { email: to }, from: { email: from, name: 'mailctl' },
          subject: headerSafe(mail.subject), html: null, text: mail.text,
          headers: { 'Auto-Submitted': 'auto-generated' },
          type: 'TRANSACTIONAL', sourceType: 'system', sourceId: mail.kind, domainId: sender.domainId,
          listUnsubscribe: false, priority: PRIORITY.transactional,
        }]))
        notifyQueued(d)
        d.log.info('system mail queued', { kind: mail.kind, emailId: row.id, projectId: owner.projectId })
      } catch (err) {
        d.log.error('system mail could not be queued: captured instead', { kind: mail.kind, ...errorFields(err) })
        await capture.send(mail)
      }
    },
  }
}
