import { manageUrl, subscribeUrl, unsubscribeUrl } from '../../../mail/links'
import { notifyQueued } from '../../../mail/outbound'
import { RenderLimitError, renderMessage, templateVariables, TemplateSyntaxError } from '../../../mail/render'
import { withUnsubscribeFooter } from '../../../mail/render/campaign'
import { assertSenderAllowed } from '../../domains/service'
import { PRIORITY, queueEmails, type EmailType, type NewEmail } from '../../emails/service'
import { suppressedAmong } from '../../suppressions/service'
import { findTemplateRow } from '../../templates/service'
import { StepFailure, type StepRunner } from './types'

/**
 * SEND_EMAIL: renders the template for the contact (or a custom address) and queues it through the one
 * outbound pipeline (emails/service.ts `queueEmails`), in the transaction that records the step, so a
 * repeated run never queues it twice. A MARKETING template goes only to a subscribed contact and carries
 * the RFC 8058 unsubscribe headers (and a footer when the body does not place {{unsubscribeUrl}}); a
 * suppressed address is skipped (SKIPPED, with the reason), never sent to.
 */
export const sendEmail: StepRunner = async ({ ctx, step, exec, contact }) => {
  const templateId = String(step.config.templateId)
  const tpl = await findTemplateRow(ctx.store, ctx.store.db, ctx.projectId, templateId)
  if (!tpl) throw new StepFailure(`template ${templateId} no longer exists`)
  const recipient = step.config.recipient as { type?: string; email?: string } | undefined
  const custom = recipient?.type === 'CUSTOM' && typeof recipient.email === 'string'
  const to = custom ? String(recipient.email) : contact.email
  const type = tpl.type as EmailType
  const marketing = type === 'MARKETING'
  if (marketing && !custom && !contact.subscribed) {
    return { kind: 'next', status: 'SKIPPED', output: { skipped: 'unsubscribed', to, templateId } }
  }
  const blocked = await suppressedAmong(ctx, ctx.store.db, [to])
  if (blocked.size) return { kind: 'next', status: 'SKIPPED', output: { skipped: 'suppressed', to, templateId } }
  const sender = await assertSenderAllowed(ctx, tpl.fromEmail)

  const id = Bun.randomUUIDv7()
  // Links name a contact; mail to a custom address has none (and no one-click unsubscribe).
  const contactId = custom ? null : contact.id
  const sources = `${tpl.subject} ${tpl.body}`
  const ref = contactId ? { projectId: ctx.projectId, contactId, emailId: id } : null
  const urls = ref
    ? {
      ...(sources.includes('unsubscribeUrl') ? { unsubscribeUrl: unsubscribeUrl(ctx.deps, ref) } : {}),
      ...(/(^|[^\w])subscribeUrl/.test(sources) ? { subscribeUrl: subscribeUrl(ctx.deps, ref) } : {}),
      ...(sources.includes('manageUrl') ? { manageUrl: manageUrl(ctx.deps, ref) } : {}),
    }
    : {}
  const vars = templateVariables({ contact: { id: contact.id, email: contact.email, data: contact.data }, data: exec.context, urls })
  // Within the render budgets (a heavy template renders in a render thread); past one, this contact's
  // step fails with the reason.
  const rendered = await renderMessage({ subject: tpl.subject, body: tpl.body }, vars).catch((err: unknown) => {
    if (err instanceof RenderLimitError) throw new StepFailure(`template ${tpl.id} could not be rendered: ${err.part ?? 'body'}: ${err.message}`)
    if (err instanceof TemplateSyntaxError) throw new StepFailure(`template ${tpl.id} does not compile: ${err.message}`)
    throw err
  })
  let { html, text } = rendered
  if (marketing && ref && !tpl.body.includes('unsubscribeUrl')) ({ html, text } = withUnsubscribeFooter(html, text, unsubscribeUrl(ctx.deps, ref)))
  const email: NewEmail = {
    id, contactId, to: { email: to }, from: { email: tpl.fromEmail, name: tpl.fromName }, replyTo: tpl.replyTo,
    subject: rendered.subject, html, text, type, sourceType: 'workflow', sourceId: exec.workflowId, templateId: tpl.id,
    domainId: sender.domainId, listUnsubscribe: marketing && contactId !== null,
    priority: marketing ? PRIORITY.bulk : PRIORITY.transactional,
  }
  return {
    kind: 'next', status: 'COMPLETED', output: { emailId: id, to, templateId },
    write: async (db) => { await queueEmails(ctx, db, [email]) },
    after: () => notifyQueued(ctx.deps),
  }
}
