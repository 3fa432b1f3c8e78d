import type { Cols } from '../columns'

/** An attachment as stored with a queued email (content base64, dropped once the email is final). */
export interface StoredAttachment {
  filename: string
  /** Base64; null once the email reached a final state (the metadata stays for the record). */
  content: string | null
  contentType: string
  contentId?: string
  disposition: 'attachment' | 'inline'
  size: number
}

/** The email record, the outbound queue and the suppression list (migration 0007_sending). */
export function sendingTables(c: Cols) {
  /**
   * One row per recipient of every mail mailctl sends (send, campaigns, workflows, relay): the rendered
   * content, the delivery state (forward-only, docs/decisions.md, States) and the last SMTP outcome.
   */
  const emails = c.table('emails', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    contactId: c.text('contact_id'),
    templateId: c.text('template_id'),
    campaignId: c.text('campaign_id'),
    /** 'send' | 'campaign' | 'workflow' | 'relay' | 'test' */
    sourceType: c.text('source_type').notNull(),
    /** Workflow execution, relay session... the id of the source within its type. */
    sourceId: c.text('source_id'),
    /** TRANSACTIONAL | MARKETING | HEADLESS */
    type: c.text('type').notNull(),
    domainId: c.text('domain_id'),
    /** With angle brackets, on the sender's domain. */
    messageId: c.text('message_id').notNull(),
    fromAddress: c.text('from_address').notNull(),
    fromName: c.text('from_name'),
    toAddress: c.text('to_address').notNull(),
    toName: c.text('to_name'),
    replyTo: c.text('reply_to'),
    subject: c.text('subject').notNull(),
    /** Adds List-Unsubscribe (one-click) and List-Unsubscribe-Post. */
    listUnsubscribe: c.bool('list_unsubscribe').notNull(),
    status: c.text('status').notNull(),
    attempts: c.int('attempts').notNull(),
    /** Last SMTP reply or error text of a delivery attempt. */
    lastReply: c.text('last_reply'),
    /** The host that accepted the message (MX host, smart host, or "capture"). */
    deliveredTo: c.text('delivered_to'),
    bounceType: c.text('bounce_type'),
    size: c.int('size'),
    sentAt: c.ts('sent_at'),
    deliveredAt: c.ts('delivered_at'),
    openedAt: c.ts('opened_at'),
    clickedAt: c.ts('clicked_at'),
    bouncedAt: c.ts('bounced_at'),
    complainedAt: c.ts('complained_at'),
    failedAt: c.ts('failed_at'),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
    /**
     * NULL: the email's delivery events are rows of `events`. 0 or 1: its email.sent and email.delivery are
     * this row's (a direct delivery, read by src/modules/events/inline.ts; 1: over TLS). Migration 0027.
     */
    inlineEvents: c.int('inline_events'),
  }, (t) => [
    c.index('emails_project_created_idx').on(t.projectId, t.createdAt, t.id),
    c.index('emails_contact_idx').on(t.contactId, t.createdAt, t.id),
    c.index('emails_campaign_created_idx').on(t.campaignId, t.createdAt, t.id),
    c.index('emails_project_status_created_idx').on(t.projectId, t.status, t.createdAt, t.id),
    c.index('emails_message_id_idx').on(t.messageId),
    // Also (migration 0027, partial): emails_inline_project_idx (project_id, delivered_at, id) and
    // emails_inline_campaign_idx (campaign_id, delivered_at, id), WHERE inline_events IS NOT NULL.
  ])

  /**
   * The rendered content of an email, apart from its record: status changes rewrite only the small
   * `emails` row (SQLite rewrites a whole row on any update), never the body.
   */
  const emailContents = c.table('email_contents', {
    emailId: c.text('email_id').primaryKey(),
    html: c.text('html'),
    text: c.text('text'),
    headers: c.json<Record<string, string>>('headers').notNull(),
    attachments: c.json<StoredAttachment[]>('attachments'),
  })

  /**
   * The outbound queue: one small row per email not yet finished. Claiming pushes `run_at` forward by
   * the lease, so an abandoned claim simply becomes due again; the row is deleted with the final outcome.
   */
  const outboundQueue = c.table('outbound_queue', {
    emailId: c.text('email_id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    /** Recipient domain (routing key for direct delivery). */
    domain: c.text('domain').notNull(),
    /** Lower runs first: 0 transactional, 10 bulk (campaigns, workflows). */
    priority: c.int('priority').notNull(),
    runAt: c.ts('run_at').notNull(),
    /** Delivery attempts that reached a verdict (deferrals and throttling count, claims do not). */
    attempts: c.int('attempts').notNull(),
    lockedBy: c.text('locked_by'),
    lockedUntil: c.ts('locked_until'),
    lastError: c.text('last_error'),
    /** Give up (soft bounce) after this moment. */
    expiresAt: c.ts('expires_at').notNull(),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.index('outbound_queue_due_idx').on(t.priority, t.runAt)])

  /** Addresses a project never sends to: hard bounces, complaints, manual entries. */
  const suppressions = c.table('suppressions', {
    projectId: c.text('project_id').notNull(),
    email: c.text('email').notNull(),
    /** 'bounce' | 'complaint' | 'manual' */
    reason: c.text('reason').notNull(),
    /** The email whose bounce or complaint caused it. */
    emailId: c.text('email_id'),
    /** The SMTP reply or the note given. */
    detail: c.text('detail'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.projectId, t.email] }), c.index('suppressions_project_created_idx').on(t.projectId, t.createdAt)])

  return { emails, emailContents, outboundQueue, suppressions }
}
