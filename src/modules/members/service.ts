import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { conflict, forbidden, notFound } from '../../errors'
import type { SystemMail } from '../../mail/system'
import * as users from '../users/repo'
import { normalizeEmail } from '../users/email'
import type { UserRow } from '../users/repo'
import { requireAccess, type Role } from './access'
import type { InviteBody, MemberOut } from './model'
import * as repo from './repo'

/** How long an invitation waits for its address to be verified. */
export const INVITATION_TTL_MS = 7 * 24 * 3600_000

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
    repo.listInvitations(store, store.db, projectId, new Date()),
  ])
  return [...members.map(activeOut), ...invites.map(invitedOut)]
}

/**
 * Invites an address. A verified account joins at once; any other address gets an invitation that is
 * accepted when that address is verified (so nobody can claim an invitation with an address they do not own).
 */
export async function invite(deps: Deps, userId: string, projectId: string, input: InviteBody): Promise<MemberOut> {
  const { store } = deps
  const email = normalizeEmail(input.email)
  const role = input.role ?? 'MEMBER'
  const now = new Date()
  const { out, mail } = await store.tx(async (db) => {
    await requireAccess(deps, userId, projectId, 'members', db)
    const name = (await repo.projectName(store, db, projectId)) ?? projectId
    const inviter = await users.byId(store, db, userId)
    const by = inviter?.name || inviter?.email || 'A team member'
    const existing = await users.byEmail(store, db, email)
    if (existing && (await repo.member(store, db, projectId, existing.id))) throw conflict(`${email} is already a member of this project`)
    if (existing?.emailVerifiedAt) {
      const row = { projectId, userId: existing.id, role, createdAt: now }
      await repo.insertMember(store, db, row)
      const mail: SystemMail = {
        kind: 'invitation', to: email, projectId,
        subject: `You were added to the project ${name} on mailctl`,
        text: `${by} added you to the project "${name}" as ${role}.\n\nOpen ${deps.config.publicUrl}/app/ to see it.\n`,
      }
      return { out: activeOut({ ...row, email, name: existing.name }), mail }
    }
    const saved = await repo.upsertInvitation(store, db, {
      id: Bun.randomUUIDv7(), projectId, email, role, invitedBy: userId, createdAt: now, expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
    })
    const signup = `${deps.config.publicUrl}/app/signup?email=${encodeURIComponent(email)}`
    const mail: SystemMail = {
      kind: 'invitation', to: email, projectId,
      subject: `You are invited to the project ${name} on mailctl`,
      text: `${by} invited you to the project "${name}" as ${role}.\n\n` +
        (existing ? 'Verify your email address to join: request a new verification email from the login page.\n'
          : `Create your account with this address to join: ${signup}\n`) +
        `The invitation is valid for 7 days.\n`,
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

/** Turns the pending invitations of a just-verified address into memberships (inside the caller's transaction). */
export async function acceptInvitations(deps: Deps, db: Db, user: UserRow, now: Date): Promise<number> {
  const { store } = deps
  const pending = await repo.pendingFor(store, db, user.email, now)
  for (const inv of pending) {
    if (!(await repo.member(store, db, inv.projectId, user.id))) {
      await repo.insertMember(store, db, { projectId: inv.projectId, userId: user.id, role: inv.role, createdAt: now })
    }
  }
  await repo.deleteInvitationsByIds(store, db, pending.map((p) => p.id))
  return pending.length
}
