import { and, asc, eq, inArray, isNull, lt, ne, or } from 'drizzle-orm'
import type { Db, Store } from '../../db/client'
import type { RecordCheck } from '../../db/schema/domains'

/** The only SQL of the domains module. Every function but the recheck scan takes the project id. */

export type DomainRow = typeof import('../../db/schema').pgSchema.domains.$inferSelect

/** Columns safe to hand around: everything but the encrypted private key. */
export type DomainInfo = Omit<DomainRow, 'dkimPrivateKey'>

function infoColumns(store: Store) {
  const d = store.t.domains
  return {
    id: d.id, projectId: d.projectId, domain: d.domain, selector: d.selector, dkimPublicKey: d.dkimPublicKey,
    verified: d.verified, checks: d.checks, lastCheckedAt: d.lastCheckedAt, verifiedAt: d.verifiedAt,
    createdAt: d.createdAt, updatedAt: d.updatedAt,
  }
}

export async function insertDomain(store: Store, db: Db, row: DomainRow): Promise<void> {
  await db.insert(store.t.domains).values(row)
}

export async function findById(store: Store, db: Db, projectId: string, id: string): Promise<DomainInfo | null> {
  const d = store.t.domains
  const [row] = await db.select(infoColumns(store)).from(d).where(and(eq(d.projectId, projectId), eq(d.id, id))).limit(1)
  return row ?? null
}

export async function findByName(store: Store, db: Db, projectId: string, domain: string): Promise<DomainInfo | null> {
  const d = store.t.domains
  const [row] = await db.select(infoColumns(store)).from(d).where(and(eq(d.projectId, projectId), eq(d.domain, domain))).limit(1)
  return row ?? null
}

export async function listByProject(store: Store, db: Db, projectId: string): Promise<DomainInfo[]> {
  const d = store.t.domains
  return db.select(infoColumns(store)).from(d).where(eq(d.projectId, projectId)).orderBy(asc(d.domain))
}

/** True when another project holds `domain` verified. */
export async function verifiedElsewhere(store: Store, db: Db, projectId: string, domain: string): Promise<boolean> {
  const d = store.t.domains
  const rows = await db.select({ id: d.id }).from(d)
    .where(and(eq(d.domain, domain), eq(d.verified, true), ne(d.projectId, projectId))).limit(1)
  return rows.length > 0
}

export async function deleteById(store: Store, db: Db, projectId: string, id: string): Promise<boolean> {
  const d = store.t.domains
  const rows = await db.delete(d).where(and(eq(d.projectId, projectId), eq(d.id, id))).returning({ id: d.id })
  return rows.length > 0
}

export interface SenderRow { id: string; domain: string; selector: string; updatedAt: Date; checks: Record<string, RecordCheck> }

/** The verified domains of a project among `names` (one indexed query: the sender gate). */
export async function verifiedAmong(store: Store, db: Db, projectId: string, names: string[]): Promise<SenderRow[]> {
  const d = store.t.domains
  return db.select({ id: d.id, domain: d.domain, selector: d.selector, updatedAt: d.updatedAt, checks: d.checks }).from(d)
    .where(and(eq(d.projectId, projectId), inArray(d.domain, names), eq(d.verified, true)))
}

export async function privateKeyBlob(store: Store, db: Db, projectId: string, id: string): Promise<string | null> {
  const d = store.t.domains
  const [row] = await db.select({ blob: d.dkimPrivateKey }).from(d).where(and(eq(d.projectId, projectId), eq(d.id, id))).limit(1)
  return row?.blob ?? null
}

export interface CheckUpdate {
  verified: boolean
  checks: Record<string, RecordCheck>
  lastCheckedAt: Date
  verifiedAt: Date | null
  updatedAt: Date
}

export async function saveCheck(store: Store, db: Db, projectId: string, id: string, update: CheckUpdate): Promise<DomainInfo | null> {
  const d = store.t.domains
  const [row] = await db.update(d).set(update).where(and(eq(d.projectId, projectId), eq(d.id, id))).returning(infoColumns(store))
  return row ?? null
}

/**
 * Domains due for a background re-check, across projects (the recheck job's scan): pending ones not
 * checked since `pendingBefore`, verified ones not checked since `verifiedBefore`. Oldest first.
 */
export async function dueForRecheck(store: Store, db: Db, pendingBefore: Date, verifiedBefore: Date, limit: number): Promise<Array<{ id: string; projectId: string }>> {
  const d = store.t.domains
  return db.select({ id: d.id, projectId: d.projectId }).from(d).where(or(
    and(eq(d.verified, false), or(isNull(d.lastCheckedAt), lt(d.lastCheckedAt, pendingBefore))),
    and(eq(d.verified, true), or(isNull(d.lastCheckedAt), lt(d.lastCheckedAt, verifiedBefore))),
  )).orderBy(asc(d.lastCheckedAt)).limit(limit)
}

/** A unique-index violation on either store (drizzle wraps the driver's error in `cause`). */
export function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { code?: unknown; message?: unknown }
    if (x.code === '23505' || x.code === 'SQLITE_CONSTRAINT_UNIQUE') return true
    if (typeof x.message === 'string' && /UNIQUE constraint failed/.test(x.message)) return true
  }
  return false
}
