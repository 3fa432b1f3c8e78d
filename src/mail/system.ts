import type { Store } from '../db/client'

/** Mail the platform itself sends to its users: verification, password reset, invitations. */
export interface SystemMail {
  kind: 'verify-email' | 'password-reset' | 'invitation'
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

/** Writes system mail to the outbound capture store (until, or instead of, real delivery). */
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
