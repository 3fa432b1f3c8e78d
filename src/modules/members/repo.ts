import { and, asc, eq, gt, lt } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'

export type MemberRow = typeof import('../../db/schema').pgSchema.members.$inferSelect
export type InvitationRow = typeof import('../../db/schema').pgSchema.invitations.$inferSelect

export async function listMembers(store: Store, db: Db, projectId: string) {
  const { members, users } = store.t
  return db.select({ userId: members.userId, email: users.email, name: users.name, role: members.role, createdAt: members.createdAt })
    .from(members).innerJoin(users, eq(users.id, members.userId))
    .where(eq(members.projectId, projectId)).orderBy(asc(members.createdAt), asc(members.userId))
}

export async function member(store: Store, db: Db, projectId: string, userId: string) {
  const { members, users } = store.t
  const [row] = await db.select({ userId: members.userId, email: users.email, name: users.name, role: members.role, createdAt: members.createdAt })
    .from(members).innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.projectId, projectId), eq(members.userId, userId))).limit(1)
  return row
}

export async function setRole(store: Store, db: Db, projectId: string, userId: string, role: string): Promise<void> {
  const { members } = store.t
  await db.update(members).set({ role }).where(and(eq(members.projectId, projectId), eq(members.userId, userId)))
}

export async function deleteMember(store: Store, db: Db, projectId: string, userId: string): Promise<void> {
  const { members } = store.t
  await db.delete(members).where(and(eq(members.projectId, projectId), eq(members.userId, userId)))
}

export async function listInvitations(store: Store, db: Db, projectId: string, now: Date): Promise<InvitationRow[]> {
  const { invitations } = store.t
  return db.select().from(invitations)
    .where(and(eq(invitations.projectId, projectId), gt(invitations.expiresAt, now))).orderBy(asc(invitations.createdAt))
}

export async function invitation(store: Store, db: Db, projectId: string, id: string): Promise<InvitationRow | undefined> {
  const { invitations } = store.t
  const [row] = await db.select().from(invitations).where(and(eq(invitations.projectId, projectId), eq(invitations.id, id))).limit(1)
  return row
}

/** One pending invitation per (project, address): inviting again renews it (new role, new token, new expiry). */
export async function upsertInvitation(store: Store, db: Db, row: InvitationRow): Promise<InvitationRow> {
  const { invitations } = store.t
  const [saved] = await db.insert(invitations).values(row).onConflictDoUpdate({
    target: [invitations.projectId, invitations.email],
    set: { role: row.role, invitedBy: row.invitedBy, createdAt: row.createdAt, expiresAt: row.expiresAt, tokenHash: row.tokenHash },
  }).returning()
  return saved
}

/** The member of the project with this address, if any (one query, whether or not an account exists). */
export async function memberByEmail(store: Store, db: Db, projectId: string, email: string): Promise<{ userId: string } | undefined> {
  const { members, users } = store.t
  const [row] = await db.select({ userId: members.userId }).from(members).innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.projectId, projectId), eq(users.email, email))).limit(1)
  return row
}

/** A membership made on acceptance; a concurrent acceptance of the same invitation adds nothing. */
export async function insertMemberIfAbsent(store: Store, db: Db, row: MemberRow): Promise<void> {
  await db.insert(store.t.members).values(row).onConflictDoNothing()
}

export async function setInvitationRole(store: Store, db: Db, projectId: string, id: string, role: string): Promise<void> {
  const { invitations } = store.t
  await db.update(invitations).set({ role }).where(and(eq(invitations.projectId, projectId), eq(invitations.id, id)))
}

export async function deleteInvitation(store: Store, db: Db, projectId: string, id: string): Promise<void> {
  const { invitations } = store.t
  await db.delete(invitations).where(and(eq(invitations.projectId, projectId), eq(invitations.id, id)))
}

/** An invitee's view of a pending invitation: the project's name (the inviter's text) and who invited. */
export interface InvitationView { id: string; projectId: string; projectName: string; role: string; invitedBy: string | null; createdAt: Date; expiresAt: Date }

/** Pending, unexpired invitations addressed to `email` (the invitee's own), newest first. */
export async function invitationsFor(store: Store, db: Db, email: string, now: Date): Promise<InvitationView[]> {
  const { invitations, projects, users } = store.t
  return db.select({
    id: invitations.id, projectId: invitations.projectId, projectName: projects.name, role: invitations.role,
    invitedBy: users.email, createdAt: invitations.createdAt, expiresAt: invitations.expiresAt,
  }).from(invitations).innerJoin(projects, eq(projects.id, invitations.projectId)).leftJoin(users, eq(users.id, invitations.invitedBy))
    .where(and(eq(invitations.email, email), gt(invitations.expiresAt, now))).orderBy(asc(invitations.createdAt), asc(invitations.id))
}

/** A pending, unexpired invitation addressed to `email`, by id: another address's invitation is not found. */
export async function invitationForEmail(store: Store, db: Db, id: string, email: string, now: Date): Promise<InvitationRow | undefined> {
  const { invitations } = store.t
  const [row] = await db.select().from(invitations)
    .where(and(eq(invitations.id, id), eq(invitations.email, email), gt(invitations.expiresAt, now))).limit(1)
  return row
}

/** A pending, unexpired invitation by the hash of its link's token. */
export async function invitationByTokenHash(store: Store, db: Db, tokenHash: string, now: Date): Promise<InvitationRow | undefined> {
  const { invitations } = store.t
  const [row] = await db.select().from(invitations).where(and(eq(invitations.tokenHash, tokenHash), gt(invitations.expiresAt, now))).limit(1)
  return row
}

/** Ends an invitation once answered; false when it was already gone (a concurrent answer). */
export async function takeInvitation(store: Store, db: Db, id: string): Promise<boolean> {
  const { invitations } = store.t
  const rows = await db.delete(invitations).where(eq(invitations.id, id)).returning({ id: invitations.id })
  return rows.length > 0
}

export async function projectName(store: Store, db: Db, projectId: string): Promise<string | undefined> {
  const { projects } = store.t
  const [row] = await db.select({ name: projects.name }).from(projects).where(eq(projects.id, projectId)).limit(1)
  return row?.name
}

/** The user's role on the project, or undefined when not a member. */
export async function roleOf(store: Store, db: Db, projectId: string, userId: string): Promise<string | undefined> {
  const { members } = store.t
  const [row] = await db.select({ role: members.role }).from(members)
    .where(and(eq(members.projectId, projectId), eq(members.userId, userId))).limit(1)
  return row?.role
}

/** Deletes invitations expired at `now`; how many. */
export async function deleteExpiredInvitations(store: Store, db: Db, now: Date): Promise<number> {
  const { invitations } = store.t
  const rows = await db.delete(invitations).where(lt(invitations.expiresAt, now)).returning({ id: invitations.id })
  return rows.length
}
