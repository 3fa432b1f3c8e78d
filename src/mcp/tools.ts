import { t, type TSchema } from 'elysia'
import type { Ctx } from '../deps'
import * as campaigns from '../modules/campaigns/service'
import * as campaignModel from '../modules/campaigns/model'
import * as contacts from '../modules/contacts/service'
import * as contactModel from '../modules/contacts/model'
import * as emails from '../modules/emails/service'
import { SendBody as EmailSendBody } from '../modules/emails/model'
import * as events from '../modules/events/service'
import { TrackBody } from '../modules/events/model'
import * as segments from '../modules/segments/service'
import * as segmentModel from '../modules/segments/model'
import * as templates from '../modules/templates/service'
import * as templateModel from '../modules/templates/model'
import * as workflows from '../modules/workflows/service'
import * as workflowModel from '../modules/workflows/model'
import { verifyWellFormed } from '../modules/verify/service'
import { VerifyBody } from '../modules/verify/model'

/**
 * The project API's verbs as MCP tools (`mailctl mcp`, src/mcp/server.ts). Each tool's input schema is
 * the route's own TypeBox model (the body, or the query, with the path id merged in), so a tool accepts
 * exactly what the HTTP route accepts; its handler calls the same service verb as the route.
 */
export interface Tool {
  name: string
  description: string
  input: TSchema
  run(ctx: Ctx, args: Record<string, unknown>): Promise<unknown>
}

// biome-ignore lint/suspicious/noExplicitAny: each handler's input was checked against the tool's schema before the call
type Checked = any

const withId = (body?: TSchema) => body ? t.Composite([t.Object({ id: t.String({ description: 'the record id' }) }), body as ReturnType<typeof t.Object>]) : t.Object({ id: t.String({ description: 'the record id' }) })
const split = (args: Record<string, unknown>) => { const { id, ...rest } = args; return { id: String(id), rest } }

export const TOOLS: Tool[] = [
  { name: 'send_email', description: 'Send a transactional email (POST /v1/send): to, from, subject and body, or a template.', input: EmailSendBody, run: (ctx, a) => emails.sendEmails(ctx, a as Checked) },
  { name: 'track_event', description: 'Track an event for a contact, creating or updating the contact (POST /v1/track).', input: TrackBody, run: (ctx, a) => events.track(ctx, a as Checked, undefined, '/v1/track') },
  { name: 'list_contacts', description: 'List contacts, a page at a time (GET /contacts).', input: contactModel.ListContactsQuery, run: (ctx, a) => contacts.listContacts(ctx, a as Checked) },
  { name: 'upsert_contact', description: 'Create a contact, or update the one with that email (POST /contacts).', input: contactModel.CreateContactBody, run: (ctx, a) => contacts.createContact(ctx, a as Checked) },
  { name: 'list_templates', description: 'List templates (GET /templates).', input: templateModel.ListTemplatesQuery, run: (ctx, a) => templates.listTemplates(ctx, a as Checked) },
  { name: 'create_template', description: 'Create a template (POST /templates).', input: templateModel.CreateTemplateBody, run: (ctx, a) => templates.createTemplate(ctx, a as Checked) },
  { name: 'list_campaigns', description: 'List campaigns (GET /campaigns).', input: campaignModel.ListCampaignsQuery, run: (ctx, a) => campaigns.listCampaigns(ctx, a as Checked) },
  { name: 'create_campaign', description: 'Create a campaign as a DRAFT (POST /campaigns).', input: campaignModel.CampaignBody, run: (ctx, a) => campaigns.createCampaign(ctx, a as Checked) },
  { name: 'send_campaign', description: 'Send a DRAFT campaign now, or at scheduledFor (POST /campaigns/:id/send).', input: withId(campaignModel.SendBody), run: (ctx, a) => { const { id, rest } = split(a); return campaigns.sendCampaign(ctx, id, rest as Checked) } },
  { name: 'campaign_stats', description: 'A campaign\'s send, delivery, open, click and bounce counts (GET /campaigns/:id/stats).', input: withId(), run: (ctx, a) => campaigns.campaignStats(ctx, split(a).id) },
  { name: 'list_segments', description: 'List segments (GET /segments).', input: t.Object({}), run: (ctx) => segments.listSegments(ctx) },
  { name: 'create_segment', description: 'Create a segment (POST /segments).', input: segmentModel.CreateSegmentBody, run: (ctx, a) => segments.createSegment(ctx, a as Checked) },
  { name: 'list_workflows', description: 'List workflows (GET /workflows).', input: workflowModel.ListWorkflowsQuery, run: (ctx, a) => workflows.listWorkflows(ctx, a as Checked) },
  { name: 'enable_workflow', description: 'Enable a workflow, or disable it with enabled: false (PATCH /workflows/:id).', input: t.Object({ id: t.String(), enabled: t.Optional(t.Boolean({ default: true })) }), run: (ctx, a) => workflows.updateWorkflow(ctx, String(a.id), { enabled: a.enabled !== false } as Checked) },
  { name: 'verify_email', description: 'Verify an email address without sending mail (POST /v1/verify).', input: VerifyBody, run: (ctx, a) => verifyWellFormed(ctx, String(a.email)) },
]
