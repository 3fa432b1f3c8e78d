/** The campaign shapes the dashboard reads, from the server's document (web/api.ts). */
import type { Answer, Input, Narrowed } from '../../api'

export const STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const
export type Status = (typeof STATUSES)[number]

export interface FilterRow { field: string; operator: string; value?: unknown; unit?: string }
export interface FilterTree { logic?: string; groups: Array<{ filters?: FilterRow[]; conditions?: FilterTree }> }

type CampaignDoc = Answer<'/campaigns/{id}'>
/** A campaign; the document types its status, audience and A/B fields loosely, so they are narrowed here. */
export type Campaign = Narrowed<CampaignDoc, {
  status: Status
  type: NonNullable<CampaignInput['type']>
  design: Record<string, unknown> | null
  audienceType: 'ALL' | 'SEGMENT' | 'FILTERED'
  audienceCondition: FilterTree | null
  abTest: AbTest | null
  abTestStatus: { phase: 'TEST' | 'WAITING' | 'WINNER'; decideAt: string | null; winner: number | null; reason: string | null } | null
  sendAt: LocalSendAt | null
}>
/** An A/B test: 2-4 variants of the subject, and optionally of the body. */
export type AbTest = NonNullable<CampaignInput['abTest']>
/** A send at one local time in each recipient's time zone. */
export type LocalSendAt = NonNullable<Input<'/campaigns/{id}/send'>['sendAt']>
export type CampaignStats = Narrowed<Answer<'/campaigns/{id}/stats'>, { status: Status }>
export type CampaignList = Narrowed<Answer<'/campaigns'>, { data: Campaign[] }>

export type AudienceCount = Answer<'/campaigns/audience/count', 'post'>
export interface Audience { type: Campaign['type']; audienceType: Campaign['audienceType']; segmentId: string | null; audienceCondition: FilterTree | null }

export type LinkStat = Answer<'/campaigns/{id}/links'>['data'][number]

export type Segment = Answer<'/segments/{id}'>
export type FieldInfo = Answer<'/workflows/fields'>['contact'][number] & { types?: string[] }

export type Timeseries = Answer<'/analytics/timeseries'>

/** The body the API takes for create and replace. */
export type CampaignInput = Input<'/campaigns'>

export const statusBadge = (s: string) => (s === 'SENT' ? 'ok' : s === 'CANCELLED' ? 'failed' : s === 'DRAFT' ? '' : 'pending')

/** GET /campaigns/:id/recipients. */
export const REPORT_FILTERS = ['all', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed', 'failed'] as const
export type ReportFilter = (typeof REPORT_FILTERS)[number]
export type RecipientsPage = Answer<'/campaigns/{id}/recipients'>
