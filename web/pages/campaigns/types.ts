/** The campaign shapes the dashboard reads (the Campaign model of /openapi.json, from src/modules/campaigns/model.ts). */

export const STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const
export type Status = (typeof STATUSES)[number]

export interface FilterRow { field: string; operator: string; value?: unknown; unit?: string }
export interface FilterTree { logic?: string; groups: Array<{ filters?: FilterRow[]; conditions?: FilterTree }> }

export interface Campaign {
  id: string; name: string; description: string | null; subject: string; body: string; design: Record<string, unknown> | null; preheader: string | null; from: string
  fromName: string | null; replyTo: string | null; type: string; status: Status
  audienceType: 'ALL' | 'SEGMENT' | 'FILTERED'; audienceCondition: FilterTree | null; segmentId: string | null
  scheduledFor: string | null; totalRecipients: number; sentCount: number; deliveredCount: number; openedCount: number
  clickedCount: number; bouncedCount: number; complainedCount: number; unsubscribedCount: number
  skippedUnsubscribed: number; skippedSuppressed: number; sentAt: string | null; createdAt: string; updatedAt: string
  abTest: AbTest | null
  abTestStatus: { phase: 'TEST' | 'WAITING' | 'WINNER'; decideAt: string | null; winner: number | null; reason: string | null } | null
  sendAt: LocalSendAt | null; nextWaveAt: string | null
}
/** An A/B test: 2-4 variants of the subject, and optionally of the body. */
export interface AbTest { variants: Array<{ subject: string; body?: string }>; testPercent: number; metric: 'opens' | 'clicks'; waitMinutes: number }
/** A send at one local time in each recipient's time zone. */
export interface LocalSendAt { date: string; localTime: string; fallbackTimeZone: string }
export interface VariantStat {
  index: number; subject: string; winner: boolean; recipients: number; delivered: number; opened: number; clicked: number; bounced: number; openRate: number; clickRate: number
}
export interface CampaignList { data: Campaign[]; page: number; pageSize: number; total: number; totalPages: number }

export interface CampaignStats {
  campaignId: string; status: Status; totalRecipients: number; queued: number; pending: number; sent: number
  delivered: number; opened: number; clicked: number; bounced: number; complained: number; failed: number
  unsubscribed: number; skippedUnsubscribed: number; skippedSuppressed: number; variants: VariantStat[]
}

export interface AudienceCount { matching: number; recipients: number; skippedUnsubscribed: number; skippedSuppressed: number }
export interface Audience { type: string; audienceType: Campaign['audienceType']; segmentId: string | null; audienceCondition: FilterTree | null }

export interface LinkStat { url: string; clicks: number; uniqueClicks: number }

export interface Segment { id: string; name: string; type: string; memberCount: number }
export interface FieldInfo { field: string; label: string; kind: string; types?: string[]; operators: string[] }

export interface TimePoint {
  start: string; label: string; sent: number; delivered: number; opened: number; uniqueOpened: number; clicked: number
  uniqueClicked: number; bounced: number; complained: number; unsubscribed: number
}
export interface Timeseries { interval: string; timezone: string; from: string; to: string; data: TimePoint[] }

/** The body the API takes for create and replace. */
export interface CampaignInput {
  name: string; subject: string; preheader: string | null; body: string; design: Record<string, unknown> | null; from: string; fromName: string | null; replyTo: string | null
  type: string; audienceType: Campaign['audienceType']; segmentId: string | null; audienceCondition?: FilterTree | null
  abTest?: AbTest
}

export const statusBadge = (s: string) => (s === 'SENT' ? 'ok' : s === 'CANCELLED' ? 'failed' : s === 'DRAFT' ? '' : 'pending')

/** GET /campaigns/:id/recipients. */
export const REPORT_FILTERS = ['all', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'failed'] as const
export type ReportFilter = (typeof REPORT_FILTERS)[number]
export interface RecipientRow {
  emailId: string; contactId: string | null; email: string; status: string; deliveredAt: string | null; openedAt: string | null
  clickedAt: string | null; bouncedAt: string | null; bounceType: string | null; complainedAt: string | null; unsubscribedAt: string | null
  opens: number; clicks: number; links: string[]
}
export interface RecipientsPage { campaignId: string; filter: string; data: RecipientRow[]; cursor: string | null; hasMore: boolean }
