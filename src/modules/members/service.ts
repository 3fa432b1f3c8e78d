import { createHash, randomBytes } from 'node:crypto'
import type { Db, Store } from '../../db/client'
import type { Deps } from '../../deps'
import { conflict, forbidden, notFound } from '../../errors'
import { headerSafe, type SystemMail } from '../../mail/system'
import * as users from '../users/service'
import { normalizeEmail, type UserRow } from '../users/service'
import { requireAccess, type Role } from './access'
import type { AcceptedOut, InvitationOut, InviteBody, MemberOut } from './model'
import * as repo from './repo'

/** How long an invitation waits for an answer. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000

/** The SHA-256 of an invitation link's token: only the hash is stored. */
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')

function activeOut(m: { userId: string; email: string; name: string | null; role: string; createdAt: Date }): MemberOut {
  return { id: m.userId, userId: m.userId, email: m.email, name: m.name ?? null, role: m.role as Role, status: 'active', createdAt: m.createdAt }
}

function invitedOut(i: repo.InvitationRow): MemberOut {
  return { id: i.id, userId: null, email: i.email, name: null, role: i.role as Role, status: 'invited', createdAt: i.createdAt, expiresAt: i.expiresAt }
}

/** Members first (oldest first), then pending invitations. Every member may read the team. */
export async function listTeam(deps: Deps, userId: string, projectId: string): Promise<MemberOut[]> {
  await requireAccess(deps, userId, projectId, 'read')
  const { store } = deps
  const [members, invites] = await Promise.all([
    repo.listMembers(store, store.db, projectId),
    repo.listInvitations(store, store.db, projectId, deps.clock.date()),
  ])
  return [...members.map(activeOut), ...invites.map(invitedOut)]
}

/**
 * Invites an address: always a pending invitation, never a membership, and the same
 * answer, queries and mail whether or not an account uses the address, so the inviter learns nothing about
 * it. The invitee accepts in the dashboard or through the emailed link. 409 only for a current member (the
 * inviter can list those anyway); an inviter whose own address is unverified may not invite (403).
 */
export async function invite(deps: Deps, userId: string, projectId: string, input: InviteBody): Promise<MemberOut> {
  const { store } = deps
  const email = normalizeEmail(input.email)
  const role = input.role ?? 'MEMBER'
  const now = deps.clock.date()
  const token = randomBytes(32).toString('base64url')
  const { out, mail } = await store.tx(async (db) => {
    await requireAccess(deps, userId, projectId, 'members', db)
    const inviter = await users.byId(store, db, userId)
    if (!inviter?.emailVerifiedAt) throw forbidden('Verify your email address before inviting anyone')
    if (await repo.memberByEmail(store, db, projectId, email)) throw conflict(`${email} is already a member of this project`)
    const name = headerSafe((await repo.projectName(store, db, projectId)) ?? '').slice(0, 100)
    const saved = await repo.upsertInvitation(store, db, {
      id: Bun.randomUUIDv7(), projectId, email, role, invitedBy: userId, createdAt: now,
      expiresAt: new Date(now.getTime() + INVITATION_TTL_MS), tokenHash: hashToken(token),
    })
    const link = `${deps.config.publicUrl}/app/invitations?token=${token}`
    // The project's name is the inviter's text: it is quoted as such and kept out of the subject, which
    // names the inviter by their verified address instead.
    const mail: SystemMail = {
      kind: 'invitation', to: email, projectId,
      subject: `${inviter.email} invited you to a project on mailctl`,
      text: `${inviter.email} invited you to join a project on mailctl as ${role}.\n` +
        `The project calls itself (its owner chose this name; mailctl does not vouch for it): "${name}"\n\n` +
        `Nothing happens unless you accept. To accept or decline, open this link and sign in, or create an account, with ${email}:\n${link}\n\n` +
        `The invitation is valid for 7 days. If you did not expect it, ignore this email.\n`,
    }
    return { out: invitedOut(saved), mail }
  })
  await deps.mail.send(mail)
  return out
}

/**
 * Changes a member's role (or a pending invitation's). Making someone OWNER transfers ownership: only the
 * owner may, and the previous owner becomes ADMIN. The owner's own role changes only by a transfer.
 */
export async function changeRole(deps: Deps, userId: string, projectId: string, targetId: string, role: Role): Promise<MemberOut> {
  const { store } = deps
  return store.tx(async (db) => {
    const actorRole = await requireAccess(deps, userId, projectId, 'members', db)
    const target = await repo.member(store, db, projectId, targetId)
    if (!target) {
      const inv = await repo.invitation(store, db, projectId, targetId)
      if (!inv) throw notFound('member')
      if (role === 'OWNER') throw conflict('An invitation cannot be made OWNER: transfer ownership once the person has joined')
      await repo.setInvitationRole(store, db, projectId, inv.id, role)
      return invitedOut({ ...inv, role })
    }
    if (target.role === role) return activeOut(target)
    if (role === 'OWNER') {
      await requireAccess(deps, userId, projectId, 'transfer', db)
      await repo.setRole(store, db, projectId, userId, 'ADMIN')
      await repo.setRole(store, db, projectId, targetId, 'OWNER')
      return activeOut({ ...target, role })
    }
    if (target.role === 'OWNER') {
      if (actorRole !== 'OWNER') throw forbidden('Only the owner can change the owner')
      throw conflict('The owner keeps the OWNER role until ownership is transferred: make another member OWNER first')
    }
    await repo.setRole(store, db, projectId, targetId, role)
    return activeOut({ ...target, role })
  })
}

/**
 * Removes a member or cancels an invitation. Anyone but the owner may leave (remove themselves); removing
 * others needs the members permission; the owner cannot be removed.
 */
export async function removeMember(deps: Deps, userId: string, projectId: string, targetId: string): Promise<void> {
  const { store } = deps
  await store.tx(async (db) => {
    if (targetId === userId) {
      const own = await requireAccess(deps, userId, projectId, 'read', db)
      if (own === 'OWNER') throw conflict('The owner cannot leave the project: transfer ownership first, or delete the project')
      await repo.deleteMember(store, db, projectId, userId)
      return
    }
    await requireAccess(deps, userId, projectId, 'members', db)
    const target = await repo.member(store, db, projectId, targetId)
    if (!target) {
      const inv = await repo.invitation(store, db, projectId, targetId)
      if (!inv) throw notFound('member')
      await repo.deleteInvitation(store, db, projectId, inv.id)
      return
    }
    if (target.role === 'OWNER') throw forbidden('The owner cannot be removed')
    await repo.deleteMember(store, db, projectId, targetId)
  })
}

function invitationOut(v: repo.InvitationView): InvitationOut {
  return { ...v, role: v.role as Role }
}

/** The signed-in user's pending invitations; none until their address is verified (it is what they are addressed to). */
export async function myInvitations(deps: Deps, userId: string): Promise<InvitationOut[]> {
  const { store } = deps
  const user = await users.byId(store, store.db, userId)
  if (!user?.emailVerifiedAt) return []
  return (await repo.invitationsFor(store, store.db, user.email, deps.clock.date())).map(invitationOut)
}

/** Makes the membership an invitation offers and ends the invitation (a member already keeps their role). */
async function join(deps: Deps, db: Db, inv: repo.InvitationRow, userId: string, now: Date): Promise<AcceptedOut> {
  const { store } = deps
  if (!(await repo.takeInvitation(store, db, inv.id))) throw notFound('invitation')
  await repo.insertMemberIfAbsent(store, db, { projectId: inv.projectId, userId, role: inv.role, createdAt: now })
  const m = await repo.member(store, db, inv.projectId, userId)
  return { projectId: inv.projectId, role: (m?.role ?? inv.role) as Role }
}

/** The user's verified account, or 404 for the invitation (an unverified address has no invitations to answer by id). */
async function verifiedInvitee(deps: Deps, db: Db, userId: string): Promise<UserRow> {
  const user = await users.byId(deps.store, db, userId)
  if (!user?.emailVerifiedAt) throw notFound('invitation')
  return user
}

/** POST /users/@me/invitations/:id/accept: only an invitation addressed to the user's verified address. */
export async function acceptInvitation(deps: Deps, userId: string, id: string): Promise<AcceptedOut> {
  const now = deps.clock.date()
  return deps.store.tx(async (db) => {
    const user = await verifiedInvitee(deps, db, userId)
    const inv = await repo.invitationForEmail(deps.store, db, id, user.email, now)
    if (!inv) throw notFound('invitation')
    return join(deps, db, inv, user.id, now)
  })
}

/**
 * POST /users/@me/invitations/accept: the emailed link. The token must name a pending invitation addressed
 * to the signed-in user's address; it came by email to that address, so it also proves the address
 * (an unverified account is marked verified, as a password reset does).
 */
export async function acceptInvitationByToken(deps: Deps, userId: string, token: string): Promise<AcceptedOut> {
  const now = deps.clock.date()
  return deps.store.tx(async (db) => {
    const user = await users.byId(deps.store, db, userId)
    const inv = await repo.invitationByTokenHash(deps.store, db, hashToken(token), now)
    if (!user || !inv || inv.email !== user.email) throw notFound('invitation')
    await users.markVerified(deps.store, db, user.id, now)
    return join(deps, db, inv, user.id, now)
  })
}

/** POST /users/@me/invitations/:id/decline: the invitation ends; the inviter sees it gone from the team list. */
export async function declineInvitation(deps: Deps, userId: string, id: string): Promise<void> {
  const now = deps.clock.date()
  await deps.store.tx(async (db) => {
    const user = await verifiedInvitee(deps, db, userId)
    const inv = await repo.invitationForEmail(deps.store, db, id, user.email, now)
    if (!inv || !(await repo.takeInvitation(deps.store, db, inv.id))) throw notFound('invitation')
  })
}

/** Deletes expired invitations (the hourly accounts sweep, src/modules/auth/jobs.ts); how many. */
export function sweepInvitations(store: Store, db: Db, now: Date): Promise<number> {
  return repo.deleteExpiredInvitations(store, db, now)
}
