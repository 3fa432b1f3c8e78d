import type { Cols } from '../columns'
import type { FilterTree } from '../../filters/types'

/** A campaign's A/B test as saved. */
export interface AbTestConfig {
  variants: Array<{ subject: string; body?: string }>
  testPercent: number
  metric: 'opens' | 'clicks'
  waitMinutes: number
}

/**
 * Where an A/B test is: the test group's draw (`seed`, and `cuts`: contact draws below cuts[i] and not
 * below cuts[i-1] are variant i), the phase, when the winner is due and, once decided, which won.
 */
export interface AbTestState {
  seed: string
  cuts: number[]
  phase: 'TEST' | 'WAITING' | 'WINNER'
  decideAt: string | null
  winner: number | null
  /** Why it won: its rate by the metric, or the tie rule (docs/decisions.md). */
  reason: string | null
}

/** A send at one local time in each recipient's time zone. */
export interface LocalSendAt { date: string; localTime: string; fallbackTimeZone: string }

/**
 * Campaigns: the message (subject and body stored once), its audience, its state, and the fan-out
 * checkpoint: `lastContactId` and the counters advance in the transaction that queues a batch's emails.
 */
export function campaignTables(c: Cols) {
  const campaigns = c.table('campaigns', {
    id: c.text('id').primaryKey(),
    projectId: c.text('project_id').notNull(),
    name: c.text('name').notNull(),
    description: c.text('description'),
    subject: c.text('subject').notNull(),
    body: c.text('body').notNull(),
    /** The dashboard editor's document that produced `body`; NULL for a body written as HTML. */
    design: c.json<Record<string, unknown>>('design'),
    /** Inbox preview text; also a hidden block at the top of `body`. */
    preheader: c.text('preheader'),
    /** Lower-cased sender address; its domain was verified when it was saved (and is checked again at send). */
    fromEmail: c.text('from_email').notNull(),
    fromName: c.text('from_name'),
    replyTo: c.text('reply_to'),
    /** TRANSACTIONAL | MARKETING | HEADLESS */
    type: c.text('type').notNull(),
    /** ALL | SEGMENT | FILTERED */
    audienceType: c.text('audience_type').notNull(),
    segmentId: c.text('segment_id'),
    audienceCondition: c.json<FilterTree>('audience_condition'),
    /** DRAFT | SCHEDULED | SENDING | SENT | CANCELLED */
    status: c.text('status').notNull(),
    scheduledFor: c.ts('scheduled_for'),
    startedAt: c.ts('started_at'),
    finishedAt: c.ts('finished_at'),
    sentAt: c.ts('sent_at'),
    cancelledAt: c.ts('cancelled_at'),
    /** Fan-out checkpoint: every audience contact with a smaller id has been handled (queued or skipped). */
    lastContactId: c.text('last_contact_id'),
    totalRecipients: c.int('total_recipients').notNull(),
    /** Migration 0030: the A/B test as saved, and where it is (null: none). */
    abTest: c.json<AbTestConfig>('ab_test'),
    abState: c.json<AbTestState>('ab_state'),
    /** Migration 0030: a local-time send (null: one send at once or at scheduledFor), and its current wave. */
    sendAt: c.json<LocalSendAt>('send_at'),
    waveAt: c.ts('wave_at'),
    sentCount: c.int('sent_count').notNull(),
    skippedUnsubscribed: c.int('skipped_unsubscribed').notNull(),
    skippedSuppressed: c.int('skipped_suppressed').notNull(),
    createdAt: c.ts('created_at').notNull(),
    updatedAt: c.ts('updated_at').notNull(),
  }, (t) => [
    c.index('campaigns_project_created_idx').on(t.projectId, t.createdAt, t.id),
    c.index('campaigns_project_updated_idx').on(t.projectId, t.updatedAt, t.id),
    c.index('campaigns_project_status_idx').on(t.projectId, t.status, t.createdAt),
    c.index('campaigns_segment_idx').on(t.segmentId),
    c.index('campaigns_due_idx').on(t.scheduledFor),
  ])
  /** Unsubscribes through a campaign's mail (link or List-Unsubscribe): one per contact and campaign, counted once. */
  const campaignUnsubscribes = c.table('campaign_unsubscribes', {
    projectId: c.text('project_id').notNull(),
    campaignId: c.text('campaign_id').notNull(),
    contactId: c.text('contact_id').notNull(),
    emailId: c.text('email_id'),
    createdAt: c.ts('created_at').notNull(),
  }, (t) => [c.primaryKey({ columns: [t.campaignId, t.contactId] }), c.index('campaign_unsubscribes_project_idx').on(t.projectId, t.createdAt)])

  /**
   * Contacts an A/B test group or a local-time wave handled (queued: `emailId`; skipped: null), written with
   * the batch; the winner's send and later waves leave them out. `variant`: the A/B variant.
   */
  const campaignRecipients = c.table('campaign_recipients', {
    campaignId: c.text('campaign_id').notNull(),
    contactId: c.text('contact_id').notNull(),
    emailId: c.text('email_id'),
    variant: c.int('variant'),
  }, (t) => [c.primaryKey({ columns: [t.campaignId, t.contactId] })])

  /** A project's campaign sending rate: the next free moment for its campaign mail (outbound run_at). */
  const sendPacing = c.table('send_pacing', {
    projectId: c.text('project_id').primaryKey(),
    nextAt: c.ts('next_at').notNull(),
  })
  return { campaigns, campaignUnsubscribes, campaignRecipients, sendPacing }
}
