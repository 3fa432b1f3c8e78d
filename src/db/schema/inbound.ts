import type { Cols } from '../columns'

/**
 * What comes back (migration 0008_inbound): raw inbound mail kept durably before the SMTP 250, the
 * open/click counters of emails and campaigns, and the receipts of provider notifications (SES via SNS)
 * that make a redelivered notification a no-op.
 */
export function inboundTables(c: Cols) {
  /**
   * Every message the inbound SMTP receiver accepted, stored before it answered 250, then processed by
   * the `inbound.process` job (bounce, complaint, or email.received). Malformed messages stay here with
   * the reason, for an operator to look at.
   */
  const inboundMessages = c.table('inbound_messages', {
    id: c.text('id').primaryKey(),
    /** The project the message belongs to, once known (the verified domain of a recipient, or the bounced email's). */
    projectId: c.text('project_id'),
    /** Envelope sender ('' for the null sender of bounces). */
    mailFrom: c.text('mail_from').notNull(),
    /** Envelope recipients accepted at RCPT. */
    rcptTo: c.json<string[]>('rcpt_to').notNull(),
    remoteAddress: c.text('remote_address'),
    /** The name the client gave in EHLO/HELO. */
    helo: c.text('helo'),
    size: c.int('size').notNull(),
    raw: c.bytes('raw').notNull(),
    /** queued -> processed | ignored | failed */
    status: c.text('status').notNull(),
    /** dsn | arf | other | unparseable, once processed. */
    kind: c.text('kind'),
    /** The email a bounce, complaint or reply was matched to. */
    emailId: c.text('email_id'),
    /** What processing did or why it did nothing (unmatched bounce, parse error...). */
    detail: c.text('detail'),
    receivedAt: c.ts('received_at').notNull(),
    processedAt: c.ts('processed_at'),
  }, (t) => [
    c.index('inbound_messages_project_received_idx').on(t.projectId, t.receivedAt),
    c.index('inbound_messages_status_received_idx').on(t.status, t.receivedAt),
  ])

  /** Opens and clicks of one email (the first ones decide isFirstOpen / isFirstClick). */
  const emailStats = c.table('email_stats', {
    emailId: c.text('email_id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    campaignId: c.text('campaign_id'),
    opens: c.int('opens').notNull(),
    clicks: c.int('clicks').notNull(),
    firstOpenAt: c.ts('first_open_at'),
    lastOpenAt: c.ts('last_open_at'),
    firstClickAt: c.ts('first_click_at'),
    lastClickAt: c.ts('last_click_at'),
  }, (t) => [c.index('email_stats_campaign_idx').on(t.campaignId)])

  /**
   * Counters of a campaign, kept as the events happen (migration 0019): total and unique (first per email)
   * opens and clicks; per email once: sent (accepted or captured), delivered, bounced, complained, failed;
   * `settled` (final outcomes of the outbound queue) and unsubscribed (campaign_unsubscribes).
   */
  const campaignStats = c.table('campaign_stats', {
    projectId: c.text('project_id').notNull(),
    campaignId: c.text('campaign_id').notNull(),
    opens: c.int('opens').notNull(),
    uniqueOpens: c.int('unique_opens').notNull(),
    clicks: c.int('clicks').notNull(),
    uniqueClicks: c.int('unique_clicks').notNull(),
    sent: c.int('sent').notNull().default(0),
    delivered: c.int('delivered').notNull().default(0),
    bounced: c.int('bounced').notNull().default(0),
    complained: c.int('complained').notNull().default(0),
    failed: c.int('failed').notNull().default(0),
    settled: c.int('settled').notNull().default(0),
    unsubscribed: c.int('unsubscribed').notNull().default(0),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.projectId, t.campaignId] })])

  /** Provider notifications already applied (SNS MessageId), so a redelivery changes nothing. */
  const notificationReceipts = c.table('notification_receipts', {
    source: c.text('source').notNull(),
    messageId: c.text('message_id').notNull(),
    receivedAt: c.ts('received_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.source, t.messageId] }), c.index('notification_receipts_received_idx').on(t.receivedAt)])

  return { inboundMessages, emailStats, campaignStats, notificationReceipts }
}
