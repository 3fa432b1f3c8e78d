import { and, eq, inArray, lt } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import { cutText } from '../../storable'

/**
 * The SQL of the inbound receiver: `inbound_messages`, and the read of `domains` that decides which
 * recipients it serves. That read spans projects (mail arrives for a domain, not a project): the
 * domain's owner is what it finds out.
 */

export type InboundRow = typeof import('../../db/schema').pgSchema.inboundMessages.$inferSelect
export type InboundStatus = 'queued' | 'processed' | 'ignored' | 'failed'

export async function insertInbound(store: Store, db: Db, row: InboundRow): Promise<void> {
  await db.insert(store.t.inboundMessages).values(row)
}

export async function loadInbound(store: Store, db: Db, id: string): Promise<InboundRow | null> {
  const m = store.t.inboundMessages
  const [row] = await db.select().from(m).where(eq(m.id, id)).limit(1)
  return row ?? null
}

/** The status of a message (null when there is no such row), without loading the message itself. */
export async function inboundStatus(store: Store, db: Db, id: string): Promise<InboundStatus | null> {
  const m = store.t.inboundMessages
  const [row] = await db.select({ status: m.status }).from(m).where(eq(m.id, id)).limit(1)
  return row ? row.status as InboundStatus : null
}

export interface InboundOutcome {
  status: InboundStatus
  kind: string | null
  /** Left as stored when undefined. */
  projectId?: string | null
  emailId: string | null
  detail: string | null
  processedAt: Date
}

/** Records the outcome; only a queued row changes (true when it did), so a repeated job is a no-op. */
export async function finishInbound(store: Store, db: Db, id: string, o: InboundOutcome): Promise<boolean> {
  const m = store.t.inboundMessages
  const { projectId, ...rest } = o
  const rows = await db.update(m).set({ ...rest, ...(projectId !== undefined ? { projectId } : {}), detail: o.detail === undefined || o.detail === null ? null : cutText(o.detail, 2000) })
    .where(and(eq(m.id, id), eq(m.status, 'queued'))).returning({ id: m.id })
  return rows.length > 0
}

/** Deletes finished messages received before `before` (queued ones are kept); returns how many. */
export async function pruneInbound(store: Store, db: Db, before: Date): Promise<number> {
  const m = store.t.inboundMessages
  const rows = await db.delete(m).where(and(lt(m.receivedAt, before), inArray(m.status, ['processed', 'ignored', 'failed']))).returning({ id: m.id })
  return rows.length
}

export interface DomainOwner { projectId: string; domain: string; verified: boolean }

/** Every registration of these domain names, in any project (verified or pending). */
export async function domainOwners(store: Store, names: string[]): Promise<DomainOwner[]> {
  if (!names.length) return []
  const d = store.t.domains
  return store.db.select({ projectId: d.projectId, domain: d.domain, verified: d.verified }).from(d).where(inArray(d.domain, names))
}

/** A contact of the project by address (read only: inbound mail never creates contacts). */
export async function contactIdByEmail(store: Store, db: Db, projectId: string, email: string): Promise<string | null> {
  const c = store.t.contacts
  const [row] = await db.select({ id: c.id }).from(c).where(and(eq(c.projectId, projectId), eq(c.email, email))).limit(1)
  return row?.id ?? null
}
