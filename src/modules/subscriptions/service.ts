/**
 * The subscription pages' verbs: resolve a signed contact link to its contact, and change the contact's
 * state through the contacts service (which emits contact.subscribed / contact.unsubscribed once per
 * real change). No login: holding the link is the authorisation (src/mail/links.ts).
 */
import { ctxFor, type Ctx, type Deps } from '../../deps'
import { AppError } from '../../errors'
import { LINK_PATHS, verifyLinkToken } from '../../mail/links'
import { getContact, updateContact, type ContactOut } from '../contacts/service'
import { findProject } from '../projects/service'
import type { PageLinks } from './pages'

export interface LinkTarget {
  ctx: Ctx
  contact: ContactOut
  projectName: string
  /** The email the link came from, when the token carries it. */
  emailId: string | null
  links: PageLinks
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
  return {
    ctx, contact, projectName: project.name, emailId: link.emailId ?? null,
    links: {
      unsubscribe: `${base}${LINK_PATHS.unsubscribe}/${token}`,
      subscribe: `${base}${LINK_PATHS.subscribe}/${token}`,
      manage: `${base}${LINK_PATHS.manage}/${token}`,
    },
  }
}

/** Sets the contact's state; a no-op (and no event) when it already is in that state. */
export async function setSubscribed(target: LinkTarget, subscribed: boolean): Promise<ContactOut> {
  if (target.contact.subscribed === subscribed) return target.contact
  const contact = await updateContact(target.ctx, target.contact.id, { subscribed })
  target.contact = contact
  return contact
}
