/**
 * What the outbound pipeline reads and records, as an interface: `DeliveryStore`. The mail layer imports
 * nothing from the modules (src/modules); the composition root (src/main.ts, `serve`) builds the pipeline
 * with the store the emails module provides (src/modules/emails/delivery.ts), and tests do the same.
 *
 * The pipeline keeps what is its own: the outbound queue and its leases (queue-repo.ts), the captured mail
 * (capture-repo.ts), the transaction that records a commit's outcomes (recorder.ts) and the message's build
 * (the campaign body renderer, src/mail/render/campaign.ts, runs in the signer threads from the plain data
 * `load` prepares). The store reads the emails and their sender's DKIM key, and records what an outcome
 * means for the rest of the system: the email's status, its events, the suppression of a hard bounce, the
 * campaign's counters.
 */
import type { Db } from '../../db/client'
import type { StoredAttachment } from '../../db/schema/sending'
import type { Deps } from '../../deps'
import type { CampaignContent } from '../render/campaign'
import type { QueueRow } from './queue-repo'
import type { SmtpReply } from './replies'
import type { Delivery } from './types'

type EmailRow = typeof import('../../db/schema').pgSchema.emails.$inferSelect
type EmailContentRow = typeof import('../../db/schema').pgSchema.emailContents.$inferSelect

/**
 * An email as the delivery pipeline loads it: the record and its content, but not attachment contents.
 * `hasContent` is false for an email stored without content (campaign mail, rendered from its campaign
 * when it is built); `campaignContent` is what that rendering needs, and `contentError` says why such
 * content could not be made (the pipeline records the email as failed with it).
 */
export type DeliveryEmail = EmailRow & Omit<EmailContentRow, 'emailId' | 'attachments'> & {
  hasAttachments: boolean
  hasContent: boolean
  campaignContent?: CampaignContent
  contentError?: string
}

/** The verified domain that signs a sender's mail. */
export interface SigningDomain {
  /** The DKIM `d=`: the verified domain that covers the sender (its domain or a parent). */
  domain: string
  selector: string
  /** Decrypted PKCS#8 PEM. Never log it. */
  privateKeyPem: string
  /** The domain of the VERP envelope sender. */
  returnPathDomain: string
}

/** One delivery attempt's outcome, as the transport reported it. */
export interface Outcome {
  email: DeliveryEmail
  queue: QueueRow
  delivery: Delivery
  /** The envelope sender used (VERP). */
  envelopeFrom: string
  size: number | null
  at: Date
}

/** A final outcome this commit applies (its queue row was deleted by it); `expiredReply`: a deferral past the retry period. */
export interface FinalOutcome { outcome: Outcome; expiredReply?: SmtpReply }

/** A deferral this commit applies (the row is still this worker's, rescheduled to `runAt`). */
export interface DeferredOutcome { outcome: Outcome; reply: SmtpReply; runAt: Date }

export interface DeliveryStore {
  /**
   * The emails of claimed queue rows (ids across projects), ready to build: campaign mail, stored without
   * content, gets `campaignContent` (or `contentError`). A missing id is an email deleted with its project.
   */
  load(deps: Deps, ids: string[]): Promise<DeliveryEmail[]>
  /** An email's attachments (contents are null once the email is final). */
  attachments(deps: Deps, emailId: string): Promise<StoredAttachment[]>
  /** The key that signs mail from `domain` for the project; null when no verified domain covers it. */
  signingKey(deps: Deps, projectId: string, domain: string): Promise<SigningDomain | null>
  /**
   * Records one commit's outcomes in the recorder's transaction `db`. Resolves with what to run once that
   * transaction has committed (handing the new events to their consumers).
   */
  record(deps: Deps, db: Db, finals: FinalOutcome[], deferrals: DeferredOutcome[], now: Date): Promise<() => Promise<void>>
}
