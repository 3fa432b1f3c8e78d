/**
 * The subscription pages' verbs: resolve a signed contact link to its contact, and change the contact's
 * state through the contacts service (which emits contact.subscribed / contact.unsubscribed once per
 * real change). No login: holding the link is the authorisation (src/mail/links.ts).
 */
import { ctxFor, type Ctx, type Deps } from '../../deps'
import { AppError } from '../../errors'
import { LINK_PATHS, verifyLinkToken } from '../../mail/links'
import { domainOf } from '../../mail/mime'
import { getContact, updateContact, type ContactOut } from '../contacts/service'
import { getEmail } from '../emails/service'
import { notifyEvents } from '../events/stream'
import { unsubscribeThroughEmail } from '../campaigns/service'
import { findProject } from '../projects/service'
import type { PageLinks, PageSender } from './pages'

export interface LinkTarget {
  ctx: Ctx
  contact: ContactOut
  /**
   * The sender as the recipient knows it: the From name and domain of the email the link came from.
   * Null when the token carries no email id or that email is gone: the pages then say "this sender"
   * (never the project's name, which is internal).
   */
  sender: PageSender | null
  /** The email the link came from, when the token carries it. */
  emailId: string | null
  links: PageLinks
}

/** The From name and domain of the email a link came from, or null. */
async function senderOf(ctx: Ctx, emailId: string | null): Promise<PageSender | null> {
  if (!emailId) return null
  try {
    const email = await getEmail(ctx, emailId)
    const name = email.fromName?.trim() || null
    return { name, domain: domainOf(email.from) }
  } catch (err) {
    if (isNotFound(err)) return null
    throw err
  }
}

function isNotFound(err: unknown): boolean {
  return err instanceof AppError && err.code === 'NOT_FOUND'
}

/** The contact behind a token, or null for a forged, altered or stale link (deleted contact or project). */
export async function openLink(deps: Deps, token: string): Promise<LinkTarget | null> {
  const link = verifyLinkToken(deps, token, 'contact')
  if (!link) return null
  let project: Awaited<ReturnType<typeof findProject>>
  try {
    project = await findProject(deps.store, link.projectId)
  } catch (err) {
    if (isNotFound(err)) return null
    throw err
  }
  if (project.id !== link.projectId) return null
  const ctx = ctxFor(deps, link.projectId, { kind: 'link' })
  let contact: ContactOut
  try {
    contact = await getContact(ctx, link.contactId)
  } catch (err) {
    if (isNotFound(err)) return null
    throw err
  }
  const base = deps.config.publicUrl
  const emailId = link.emailId ?? null
  return {
    ctx, contact, sender: await senderOf(ctx, emailId), emailId,
    links: {
      unsubscribe: `${base}${LINK_PATHS.unsubscribe}/${token}`,
      subscribe: `${base}${LINK_PATHS.subscribe}/${token}`,
      manage: `${base}${LINK_PATHS.manage}/${token}`,
    },
  }
}

/**
 * Sets the contact's state; a no-op (and no event) when it already is in that state. Unsubscribing
 * through an email's link also records the unsubscribe on the email's campaign (counted once).
 */
export async function setSubscribed(target: LinkTarget, subscribed: boolean): Promise<ContactOut> {
  if (target.contact.subscribed === subscribed) return target.contact
  if (!subscribed) {
    const { ctx } = target
    const done = await ctx.store.tx((db) => unsubscribeThroughEmail(ctx, db, { contactId: target.contact.id, emailId: target.emailId, source: 'link' }))
    await notifyEvents(ctx, done.events)
    target.contact = await getContact(ctx, target.contact.id)
    return target.contact
  }
  const contact = await updateContact(target.ctx, target.contact.id, { subscribed })
  target.contact = contact
  return contact
}
