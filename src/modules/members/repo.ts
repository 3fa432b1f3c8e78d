import { and, asc, eq, gt, inArray } from 'drizzle-orm'
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

export async function insertMember(store: Store, db: Db, row: MemberRow): Promise<void> {
  await db.insert(store.t.members).values(row)
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

/** One pending invitation per (project, address): inviting again renews it with the new role. */
export async function upsertInvitation(store: Store, db: Db, row: InvitationRow): Promise<InvitationRow> {
  const { invitations } = store.t
  const [saved] = await db.insert(invitations).values(row).onConflictDoUpdate({
    target: [invitations.projectId, invitations.email],
    set: { role: row.role, invitedBy: row.invitedBy, createdAt: row.createdAt, expiresAt: row.expiresAt },
  }).returning()
  return saved
}

export async function setInvitationRole(store: Store, db: Db, projectId: string, id: string, role: string): Promise<void> {
  const { invitations } = store.t
  await db.update(invitations).set({ role }).where(and(eq(invitations.projectId, projectId), eq(invitations.id, id)))
}

export async function deleteInvitation(store: Store, db: Db, projectId: string, id: string): Promise<void> {
  const { invitations } = store.t
  await db.delete(invitations).where(and(eq(invitations.projectId, projectId), eq(invitations.id, id)))
}

/** Pending, unexpired invitations of one address across projects (accepted when the address is verified). */
export async function pendingFor(store: Store, db: Db, email: string, now: Date): Promise<InvitationRow[]> {
  const { invitations } = store.t
  return db.select().from(invitations).where(and(eq(invitations.email, email), gt(invitations.expiresAt, now)))
}

export async function deleteInvitationsByIds(store: Store, db: Db, ids: string[]): Promise<void> {
  if (!ids.length) return
  const { invitations } = store.t
  await db.delete(invitations).where(inArray(invitations.id, ids))
}

export async function projectName(store: Store, db: Db, projectId: string): Promise<string | undefined> {
  const { projects } = store.t
  const [row] = await db.select({ name: projects.name }).from(projects).where(eq(projects.id, projectId)).limit(1)
  return row?.name
}
