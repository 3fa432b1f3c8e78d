import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import { authPlugin } from '../../http/auth'
import * as m from './model'
import { campaignRecipients, campaignRecipientsCsv } from './report'
import * as service from './service'

const tags = ['campaigns']

/** Trims the address fields before validation (emails are trimmed and lower-cased). */
function trimAddresses({ body }: { body: unknown }) {
  if (!body || typeof body !== 'object') return
  const b = body as Record<string, unknown>
  for (const k of ['from', 'replyTo', 'email']) if (typeof b[k] === 'string') b[k] = (b[k] as string).trim()
}

const AUDIENCE = 'audienceType ALL needs nothing more; SEGMENT needs `segmentId` (a segment of this project); FILTERED needs `audienceCondition`, a filter tree checked by the filter engine (422 VALIDATION_ERROR naming the bad filter). A sender whose domain is not verified answers 403 (code INTERNAL_SERVER_ERROR, kept for compatibility).'

export function campaignsRoutes(deps: Deps) {
  return new Elysia({ prefix: '/campaigns' })
    .use(authPlugin(deps))
    .onTransform(trimAddresses)
    .post('', async ({ ctx, body }) => ({ success: true as const, data: await service.createCampaign(ctx, body) }), {
      apiKey: 'secret', body: m.CampaignBody, response: { 200: m.CreateResult },
      detail: { tags, summary: 'Create a campaign', description: `\`{success: true, data}\` with the campaign, status DRAFT. \`type\` defaults to MARKETING. ${AUDIENCE}` },
    })
    .post('/audience/count', ({ ctx, body }) => service.countAudience(ctx, body), {
      apiKey: 'secret', body: m.AudienceBody, response: { 200: m.AudienceCount },
      detail: { tags, summary: 'Count an audience before sending (writes nothing)', description: 'The contacts an audience selects now, and how many a send would skip as not subscribed (MARKETING, the default `type`) or suppressed. The audience rules are those of POST /campaigns (422 VALIDATION_ERROR naming the field).' },
    })
    .get('', ({ ctx, query }) => service.listCampaigns(ctx, query), {
      apiKey: 'secret', query: m.ListCampaignsQuery, response: { 200: m.CampaignList },
      detail: { tags, summary: 'List campaigns (offset list)', description: `Pages of at most ${m.MAX_PAGE_SIZE}; an unknown \`status\` answers 400.` },
    })
    .get('/:id', ({ ctx, params }) => service.getCampaign(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Campaign },
      detail: { tags, summary: 'Get a campaign' },
    })
    .put('/:id', ({ ctx, params, body }) => service.replaceCampaign(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.CampaignBody, response: { 200: m.Campaign },
      detail: { tags, summary: 'Replace a campaign', description: `Only while DRAFT or SCHEDULED (409 CONFLICT otherwise); a SCHEDULED campaign keeps its time. ${AUDIENCE}` },
    })
    .delete('/:id', async ({ ctx, params, set }) => {
      await service.deleteCampaign(ctx, params.id)
      set.status = 204
      return ''
    }, {
      apiKey: 'secret', params: m.IdParams,
      detail: { tags, summary: 'Delete a campaign', description: '204. 409 CONFLICT while SENDING (cancel it first). Its emails still waiting in the outbound queue are not delivered (they are rendered from the campaign): they are recorded as failed.' },
    })
    .post('/:id/duplicate', ({ ctx, params }) => service.duplicateCampaign(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Campaign },
      detail: { tags, summary: 'Duplicate a campaign', description: 'A new DRAFT with the same content and audience, named "<name> (copy)".' },
    })
    .post('/:id/cancel', ({ ctx, params }) => service.cancelCampaign(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Campaign },
      detail: { tags, summary: 'Cancel a SCHEDULED or SENDING campaign', description: 'The campaign becomes CANCELLED; a fan-out in progress queues no further batch. Other states answer 409 CONFLICT.' },
    })
    .post('/:id/unschedule', ({ ctx, params }) => service.unscheduleCampaign(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.Campaign },
      detail: { tags, summary: 'Take a SCHEDULED campaign back to DRAFT', description: 'Not in the contract. The campaign becomes a DRAFT again, its scheduledFor cleared, to be edited and sent or scheduled later; cancel stays final. Other states answer 409 CONFLICT.' },
    })
    .get('/:id/stats', ({ ctx, params }) => service.campaignStats(ctx, params.id), {
      apiKey: 'secret', params: m.IdParams, response: { 200: m.CampaignStats },
      detail: { tags, summary: 'Send, delivery, open, click and bounce counts of a campaign, and the skipped contacts' },
    })
    .get('/:id/links', ({ ctx, params, query }) => service.campaignLinks(ctx, params.id, query), {
      apiKey: 'secret', params: m.IdParams, query: m.LinksQuery, response: { 200: m.CampaignLinks },
      detail: { tags, summary: 'The links clicked in a campaign\'s emails, most clicked first', description: 'Each link with its clicks and its unique clicks (emails with at least one click on it); test emails are not counted.' },
    })
    .get('/:id/recipients', ({ ctx, params, query }) => campaignRecipients(ctx, params.id, query), {
      apiKey: 'secret', params: m.IdParams, query: m.RecipientsQuery, response: { 200: m.RecipientsPage },
      detail: { tags, summary: 'Per-recipient report of a campaign (keyset pages)', description: 'Not in the contract. Each recipient\'s email in send order: delivery, first open (a click counts as an open), first click, opens, clicks and the links clicked, bounce, complaint, unsubscribe. `filter` narrows it, `link` keeps those who clicked that URL. Test emails are not listed. An unknown filter or a bad cursor answers 400.' },
    })
    .get('/:id/recipients.csv', async ({ ctx, params, query, set }) => {
      const csv = await campaignRecipientsCsv(ctx, params.id, query)
      set.headers['content-type'] = 'text/csv; charset=utf-8'
      set.headers['content-disposition'] = `attachment; filename="campaign-${params.id}-recipients.csv"`
      return csv
    }, {
      apiKey: 'secret', params: m.IdParams, query: m.RecipientsQuery,
      detail: { tags, summary: 'The per-recipient report as CSV', description: 'Every recipient matching `filter` and `link` (limit and cursor are ignored), one row each: email, status, deliveredAt, openedAt, clickedAt, opens, clicks, links (space separated), bouncedAt, bounceType, complainedAt, unsubscribedAt, contactId, emailId. Cells a spreadsheet would run as a formula are prefixed with an apostrophe.' },
    })
    .post('/:id/test', ({ ctx, params, body }) => service.testCampaign(ctx, params.id, body), {
      apiKey: 'secret', params: m.IdParams, body: m.TestBody, response: { 200: m.TestResult },
      detail: { tags, summary: 'Send a test email of the campaign to one address', description: 'In any state. Rendered with the contact data of that address when it is a contact, or with the data of `contactId` (a contact of the project, else 404; the subscription links stay those of the address); marked as a test (sourceType test) and not counted in the campaign\'s stats. A suppressed address answers 422.' },
    })
    .post('/:id/send', ({ ctx, params, body }) => service.sendCampaign(ctx, params.id, body ?? {}), {
      apiKey: 'secret', params: m.IdParams, body: t.Optional(m.SendBody), response: { 200: m.SendResult },
      detail: {
        tags, summary: 'Send a campaign now or at a set time',
        description: '`scheduledFor` omitted, null or in the past: the campaign goes SENDING at once; a future time: SCHEDULED. An unparseable value answers 400. Only a DRAFT can be sent (409 CONFLICT otherwise).',
      },
    })
}
