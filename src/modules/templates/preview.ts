import type { Ctx } from '../../deps'
import { invalidField } from '../../errors'
import { manageUrl, subscribeUrl, unsubscribeUrl } from '../../mail/links'
import { notifyQueued } from '../../mail/outbound'
import { checkTemplateSource, renderMessage, renderRefusal, templateVariables } from '../../mail/render'
import { getContact, lookupContacts } from '../contacts/service'
import { assertSenderAllowed } from '../domains/service'
import { queueEmails } from '../emails/service'
import { suppressedAmong } from '../suppressions/service'
import type { PreviewInput, PreviewResult, TemplateTestInput, TemplateTestResult, TemplateType } from './model'
import { withPreheader } from './preheader'
import { getTemplate } from './service'

/**
 * Preview as a real contact: a subject and body, saved or still in the editor, rendered
 * as one contact of the project would get them (its data, its email, its own subscription links, whose GET
 * pages only ask to confirm) by the renderer that sends them, within its budgets. Without a contact: as an
 * address that is not a contact gets them. Also lists the variables used without a fallback that render
 * empty for that contact; the ones every message provides (email, the subscription URLs) never count.
 */

/** Variables each message provides itself: never reported missing. */
export const BUILT_IN_VARIABLES = new Set(['email', 'id', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl'])
const HELPERS = new Set(['if', 'unless', 'each', 'with', 'lookup', 'else', 'this'])

/** Variables written without a fallback (`{{plan}}`, `{{address.city}}`; not `{{ plan | default: "x" }}`), helpers and built-ins left out. */
export function variablesWithoutFallback(...sources: string[]): string[] {
  const out = new Set<string>()
  for (const src of sources) {
    for (const m of src.matchAll(/\{\{\{?[#/]?\s*([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*(\|\s*default:)?[^}]*\}?\}\}/g)) {
      const root = m[1].split('.')[0]
      if (m[2] || BUILT_IN_VARIABLES.has(root) || HELPERS.has(root)) continue
      out.add(m[1])
    }
  }
  return [...out].sort()
}

function valueAt(vars: Record<string, unknown>, path: string): unknown {
  let v: unknown = vars
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined
  return v
}

/** POST /templates/preview. 404 for a contact id that is not one of the project's. */
export async function previewMessage(ctx: Ctx, input: PreviewInput): Promise<PreviewResult> {
  const contact = input.contactId ? await getContact(ctx, input.contactId) : null
  const body = withPreheader(input.body, input.preheader)
  await checkTemplateSource({ subject: input.subject, body })
  const ref = contact ? { projectId: ctx.projectId, contactId: contact.id } : null
  const vars = templateVariables({
    contact: contact ? { id: contact.id, email: contact.email, data: contact.data } : null,
    urls: ref ? { unsubscribeUrl: unsubscribeUrl(ctx.deps, ref), subscribeUrl: subscribeUrl(ctx.deps, ref), manageUrl: manageUrl(ctx.deps, ref) } : null,
  })
  let rendered: { subject: string; html: string; text: string }
  try {
    rendered = await renderMessage({ subject: input.subject, body }, vars)
  } catch (err) {
    throw renderRefusal(err)
  }
  const missing = variablesWithoutFallback(input.subject, body).filter((v) => {
    const x = valueAt(vars, v)
    return x === undefined || x === null || x === ''
  })
  return {
    subject: rendered.subject, html: rendered.html, text: rendered.text,
    contact: contact ? { id: contact.id, email: contact.email } : null,
    missing,
  }
}

/**
 * POST /templates/:id/test: the saved template to one address, marked as a test (sourceType test), with the
 * data of `contactId` when given (404 unless a contact of the project), else of the address's own contact.
 * The subscription links are only ever the address's own, so trying a test's unsubscribe link never
 * unsubscribes the contact previewed. A suppressed address answers 422; an unverified sender 403.
 */
export async function testTemplate(ctx: Ctx, id: string, input: TemplateTestInput): Promise<TemplateTestResult> {
  const tpl = await getTemplate(ctx, id)
  const email = input.email.trim().toLowerCase()
  const as = input.contactId ? await getContact(ctx, input.contactId) : null
  const sender = await assertSenderAllowed(ctx, tpl.from)
  const ownId = (await lookupContacts(ctx, [email])).results[0]?.id ?? null
  const own = ownId ? await getContact(ctx, ownId) : null
  const ref = own ? { projectId: ctx.projectId, contactId: own.id } : null
  const vars = templateVariables({
    contact: { id: own?.id ?? null, email, data: as ? as.data : own?.data ?? {} },
    urls: ref ? { unsubscribeUrl: unsubscribeUrl(ctx.deps, ref), subscribeUrl: subscribeUrl(ctx.deps, ref), manageUrl: manageUrl(ctx.deps, ref) } : null,
  })
  let rendered: { subject: string; html: string; text: string }
  try {
    rendered = await renderMessage({ subject: tpl.subject, body: tpl.body }, vars)
  } catch (err) {
    throw renderRefusal(err)
  }
  const [queued] = await ctx.store.tx(async (db) => {
    if ((await suppressedAmong(ctx, db, [email])).has(email)) {
      throw invalidField('email', `email: ${email} is on the suppression list: remove it there to send it a test`, 'suppressed', email)
    }
    return queueEmails(ctx, db, [{
      contactId: own?.id ?? null, to: { email }, from: { email: tpl.from, name: tpl.fromName }, replyTo: tpl.replyTo,
      subject: rendered.subject, html: rendered.html, text: rendered.text, type: tpl.type as TemplateType, sourceType: 'test', sourceId: tpl.id,
      templateId: tpl.id, domainId: sender.domainId, listUnsubscribe: tpl.type === 'MARKETING' && own !== null,
    }])
  })
  notifyQueued(ctx.deps)
  return { success: true, data: { id: queued.id, email }, message: `Test email queued for ${email}` }
}
