/**
 * System mail through the outbound pipeline (the mail layer's side, the capture store and the interfaces,
 * is src/mail/system.ts).
 *
 * - `pipelineMailOut` (unless MAILCTL_OUTBOUND=capture) queues system mail into the one outbound
 *   pipeline from MAILCTL_SYSTEM_FROM, so it is DKIM-signed, VERP-addressed, retried and bounced
 *   like any email. That address's domain must be a verified domain of some project (its most specific
 *   verified domain or parent, as the sender gate has it); the email belongs to that project
 *   (`sourceType: "system"`, no contact, not counted against its caps, plain text only so no tracking).
 *   Its content is never served by the API.
 * - MAILCTL_SYSTEM_FROM unset, or its domain not verified anywhere: captured, with a warning in the log;
 *   `mailctl doctor` reports both (systemSenderCheck).
 * - `systemSender` is the same queueing for the mail layer's reports (TLS reports, src/mail/tlsrpt/).
 */
import type { Store } from '../../db/client'
import { ctxFor, type Deps } from '../../deps'
import { errorFields } from '../../log'
import { isEmail, normalizeEmail } from '../../mail/address'
import { senderDomainCandidates } from '../../mail/names'
import { headerSafe, type MailOut, type SystemSender } from '../../mail/system'
import { verifiedOwners } from '../domains/service'

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

/** Queues system email into the outbound pipeline (src/mail/system.ts, SystemSender). */
export const systemSender: SystemSender = {
  ownerOf: systemSenderProject,
  async queue(deps, projectId, from, job, email) {
    const ctx = ctxFor(deps, projectId, { kind: 'job', name: job })
    // Imported when system mail is sent: the composition root (and so every CLI command) imports this
    // file, and the send path brings the mail libraries (test/cli/startup.test.ts).
    const [{ assertSenderAllowed }, { PRIORITY, queueEmails }, { notifyQueued }] = await Promise.all([
      import('../domains/service'), import('./service'), import('../../mail/outbound'),
    ])
    const sender = await assertSenderAllowed(ctx, from)
    const [row] = await deps.store.tx((db) => queueEmails(ctx, db, [{
      contactId: null, to: { email: email.to }, from: { email: from, name: email.fromName },
      subject: email.subject, html: null, text: email.text, headers: email.headers,
      ...(email.attachments ? { attachments: email.attachments } : {}),
      type: 'TRANSACTIONAL', sourceType: 'system', sourceId: email.sourceId, domainId: sender.domainId,
      listUnsubscribe: false, priority: PRIORITY[email.priority],
    }]))
    notifyQueued(deps)
    return row.id
  },
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
      try {
        const id = await systemSender.queue(d, owner.projectId, from, `system-mail:${mail.kind}`, {
          to, fromName: 'mailctl', subject: headerSafe(mail.subject), text: mail.text,
          headers: { 'Auto-Submitted': 'auto-generated' }, sourceId: mail.kind, priority: 'transactional',
        })
        d.log.info('system mail queued', { kind: mail.kind, emailId: id, projectId: owner.projectId })
      } catch (err) {
        d.log.error('system mail could not be queued: captured instead', { kind: mail.kind, ...errorFields(err) })
        await capture.send(mail)
      }
    },
  }
}
