import type { Statement } from 'bun:sqlite'
import { and, asc, eq, inArray, isNull, lt, ne, or } from 'drizzle-orm'
import type { RecordCheck } from '../../db/schema/domains'
import { pgConnection, sqliteConnection, type Db, type Store } from '../../db/client'

/** The only SQL of the domains module. Every function but the recheck scan takes the project id. */

export type DomainRow = typeof import('../../db/schema').pgSchema.domains.$inferSelect

/** Columns safe to hand around: everything but the encrypted private key. */
export type DomainInfo = Omit<DomainRow, 'dkimPrivateKey'>

function infoColumns(store: Store) {
  const d = store.t.domains
  return {
    id: d.id, projectId: d.projectId, domain: d.domain, selector: d.selector, dkimPublicKey: d.dkimPublicKey,
    verified: d.verified, allowSubdomains: d.allowSubdomains, checks: d.checks, lastCheckedAt: d.lastCheckedAt, verifiedAt: d.verifiedAt,
    createdAt: d.createdAt, updatedAt: d.updatedAt,
  }
}

/** A row to insert: allowSubdomains defaults to false. */
export type NewDomainRow = Omit<DomainRow, 'allowSubdomains'> & { allowSubdomains?: boolean }

export async function insertDomain(store: Store, db: Db, row: NewDomainRow): Promise<void> {
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

/** Projects holding one of `names` verified (any project: the sender of system mail, src/mail/system.ts). */
export async function verifiedOwners(store: Store, db: Db, names: string[]): Promise<Array<{ projectId: string; domain: string; allowSubdomains: boolean }>> {
  if (!names.length) return []
  const d = store.t.domains
  return db.select({ projectId: d.projectId, domain: d.domain, allowSubdomains: d.allowSubdomains }).from(d)
    .where(and(inArray(d.domain, names), eq(d.verified, true))).orderBy(asc(d.createdAt))
}

export interface SenderRow {
  id: string
  domain: string
  selector: string
  /** The row version (updated_at in ms): the key cache is valid for one version. */
  version: number
  /** Status of the RETURN_PATH_MX record at the last check, or null. */
  returnPathStatus: string | null
  /** The domain also covers senders at its subdomains. */
  allowSubdomains: boolean
}

const SENDER_SLOTS = 8
const PARAMS = Array.from({ length: SENDER_SLOTS }, () => '?').join(', ')
const SQLITE_GATE = `SELECT id, domain, selector, updated_at AS version, json_extract(checks, '$.RETURN_PATH_MX.status') AS rp, allow_subdomains AS subs
  FROM domains WHERE project_id = ? AND domain IN (${PARAMS}) AND verified = 1`
// The row version as epoch ms: drizzle's postgres.js client hands timestamps back as text, and a version
// that is not a number (NaN) never matched the signing-key cache, so every send read and decrypted the key.
const PG_GATE = `SELECT id, domain, selector, (extract(epoch FROM updated_at) * 1000)::bigint AS version, checks->'RETURN_PATH_MX'->>'status' AS rp, allow_subdomains AS subs
  FROM domains WHERE project_id = $1 AND domain IN (${Array.from({ length: SENDER_SLOTS }, (_, i) => `$${i + 2}`).join(', ')}) AND verified`

interface GateRow { id: string; domain: string; selector: string; version: number | string; rp: string | null; subs: boolean | number }

/** One prepared statement per SQLite store (the read connection). A cache, not state: compiled once, stateless. */
const sqliteGates = new WeakMap<Store, Statement<GateRow, string[]>>()
// Not state between turns: the PostgreSQL gate look-ups asked during one turn, read at the next (empty otherwise).
const pgGateAsks = new WeakMap<Store, Map<string, Promise<GateRow[]>>>()

/**
 * PostgreSQL: the gate look-ups of one turn of the event loop with the same project and names (the sends of
 * one sender arriving together) share one statement, run at the start of the next turn, instead of a round
 * trip (and a backend's execute) each: the gate was a statement per send request, as many as the rest of a
 * batch of sends together. Every request of a turn arrived before its statement started, so a domain
 * deleted or unverified by a commit that a client saw answered is refused on that client's next send, as
 * with a look-up per request.
 */
function pgGateTogether(store: Store, projectId: string, names: string[]): Promise<GateRow[]> {
  let asks = pgGateAsks.get(store)
  if (!asks) {
    asks = new Map()
    pgGateAsks.set(store, asks)
  }
  const key = `${projectId}\0${names.join('\0')}`
  const asked = asks.get(key)
  if (asked) return asked
  const turn = asks
  const read = new Promise<GateRow[]>((resolve, reject) => {
    setImmediate(() => {
      turn.delete(key)
      store.guarded(() => pgConnection(store.db).unsafe<GateRow[]>(PG_GATE, [projectId, ...names], { prepare: true }), { deadline: true }).then(resolve, reject)
    })
  })
  turn.set(key, read)
  return read
}

/**
 * The verified domains of a project among `names`: the sender gate, run once per message. One indexed
 * query (domains_project_domain_uq) as a prepared statement on the driver, off drizzle's query builder:
 * building the query cost several times more than running it; on PostgreSQL shared by the look-ups of one
 * turn (pgGateTogether).
 */
export async function verifiedAmong(store: Store, _db: Db, projectId: string, names: string[]): Promise<SenderRow[]> {
  if (!names.length) return []
  const rows: GateRow[] = []
  for (let i = 0; i < names.length; i += SENDER_SLOTS) {
    const chunk = names.slice(i, i + SENDER_SLOTS)
    const padded = Array.from({ length: SENDER_SLOTS }, (_, j) => chunk[j] ?? chunk[0])
    // dialect: the sender gate as a statement prepared once on each driver; the JSON and timestamp spellings differ
    if (store.dialect === 'sqlite') {
      let st = sqliteGates.get(store)
      if (!st) {
        st = sqliteConnection(store.db).prepare<GateRow, string[]>(SQLITE_GATE)
        sqliteGates.set(store, st)
      }
      rows.push(...st.all(projectId, ...padded))
    } else {
      rows.push(...await pgGateTogether(store, projectId, padded))
    }
  }
  return rows.map((r) => ({
    id: r.id, domain: r.domain, selector: r.selector,
    version: Number(r.version),
    returnPathStatus: r.rp ?? null,
    allowSubdomains: r.subs === true || r.subs === 1,
  }))
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

export async function setAllowSubdomains(store: Store, db: Db, projectId: string, id: string, allow: boolean, now: Date): Promise<DomainInfo | null> {
  const d = store.t.domains
  const [row] = await db.update(d).set({ allowSubdomains: allow, updatedAt: now }).where(and(eq(d.projectId, projectId), eq(d.id, id))).returning(infoColumns(store))
  return row ?? null
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
