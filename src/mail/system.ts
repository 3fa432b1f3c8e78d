/**
 * System mail: what the platform itself sends to its users (verification, password reset, invitations).
 *
 * This file holds the mail layer's part: the `MailOut` interface the services send through, the capture
 * store (MAILCTL_OUTBOUND=capture, or no usable sender: `captureMailOut`), the header-safe text rule, and
 * `SystemSender`, the interface through which the mail layer's own reports (TLS reports,
 * src/mail/tlsrpt/) queue an email from MAILCTL_SYSTEM_FROM. Queuing into the outbound pipeline needs the
 * domains and emails modules, so it is built above this layer (src/modules/emails/system.ts:
 * `pipelineMailOut`, `systemSender`) and handed in by the composition root (src/main.ts) or the job.
 *
 * User text in system mail (a project's name, an inviter's name) reaches only the subject and the body:
 * the subject is folded onto one line with control characters removed, the recipient must be a plain
 * address, and the message is composed by the pipeline's MIME builder, never by string concatenation of
 * header lines. No header can be injected.
 */
import type { Clock } from '../clock'
import type { Store } from '../db/client'
import type { StoredAttachment } from '../db/schema/sending'
import type { Deps } from '../deps'

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

/** Writes system mail to the outbound capture store (MAILCTL_OUTBOUND=capture, or no usable sender), at `clock`'s time. */
export function captureMailOut(store: Store, from: string, clock: Clock): MailOut {
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
        createdAt: clock.date(),
      }))
    },
  }
}

/** One line, no control characters, at most 998 characters: user text (a project's name) cannot start a header. */
export function headerSafe(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: C0 controls and DEL are exactly what must not reach a header
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 998)
}

/** An email from MAILCTL_SYSTEM_FROM, queued as an email of the project that verified its domain. */
export interface SystemEmail {
  to: string
  fromName: string
  subject: string
  text: string
  headers: Record<string, string>
  attachments?: StoredAttachment[]
  /** What the email is (its `sourceId`, `sourceType` being "system"). */
  sourceId: string
  priority: 'transactional' | 'bulk'
}

/**
 * Queues system email into the outbound pipeline (src/modules/emails/system.ts builds it on the domains
 * and emails modules).
 */
export interface SystemSender {
  /** The project whose verified domain covers `from` (the most specific one; a parent only if it allows subdomains), or null. */
  ownerOf(store: Deps['store'], from: string): Promise<{ projectId: string; domain: string } | null>
  /**
   * Queues `email` from `from` as an email of `projectId` (its domain must be verified there) and wakes the
   * pipeline; the id of the queued email. `job` names the job acting.
   */
  queue(deps: Deps, projectId: string, from: string, job: string, email: SystemEmail): Promise<string>
}
