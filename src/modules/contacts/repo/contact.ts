import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { sqliteConnection, type Db, type Store } from '../../../db/client'
import { locked } from '../../../db/dialect'
import { CONTACT_COLS, fromPg, fromRaw, type ContactRow, type PgContact, type RawContact } from './rows'

const SQLITE_INSERT_IF_ABSENT = `INSERT INTO contacts (${CONTACT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, email) DO NOTHING`
const SQLITE_SAVE_STATE = 'UPDATE contacts SET subscribed = ?, data = ?, updated_at = ? WHERE project_id = ? AND id = ?'

/**
 * One contact, or a set of them, by id or email.
 *
 * The upsert hot path (every track, send and relay recipient): on SQLite it runs as statements compiled
 * once on the connection under `db` (inside `store.tx`: the writer; bun:sqlite caches `query()`), off
 * drizzle's query builder: building a query cost several times more than running it. PostgreSQL keeps
 * drizzle.
 */

/**
 * The contact row of (project, email); on PostgreSQL the row is locked (FOR UPDATE) so that a
 * read-modify-write of its data and subscription inside `db`'s transaction is not lost to a concurrent
 * writer. SQLite has one writer, so the transaction already excludes others.
 */
export async function findByEmailForUpdate(store: Store, db: Db, projectId: string, email: string): Promise<ContactRow | null> {
  // dialect: SQLite look-up compiled once on the connection; PostgreSQL locks the row (FOR UPDATE)
  if (store.dialect === 'sqlite') {
    const r = sqliteConnection(db).query<RawContact, [string, string]>(`SELECT ${CONTACT_COLS} FROM contacts WHERE project_id = ? AND email = ?`).get(projectId, email)
    return r ? fromRaw(r) : null
  }
  const c = store.t.contacts
  const [row] = await db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.email, email))).limit(1).for('update')
  return row ?? null
}

/**
 * Rows of these emails (already normalised), locked on PostgreSQL like `findByEmailForUpdate`, in the order
 * of their emails (two transactions locking overlapping sets wait for each other instead of deadlocking).
 * One look-up of the unique index per email (the LIMIT keeps the planner from flattening it): `IN (SELECT ...)`
 * was planned as a scan of all the project's contacts, and `= ANY(...)` could pick the trigram index.
 */
export async function findByEmailsForUpdate(store: Store, db: Db, projectId: string, emails: string[]): Promise<ContactRow[]> {
  if (!emails.length) return []
  // dialect: SQLite look-up compiled once on the connection; PostgreSQL locks the rows (FOR UPDATE)
  if (store.dialect === 'sqlite') {
    // One cached statement for any number of emails: the list travels as one JSON parameter.
    const rows = sqliteConnection(db).query<RawContact, [string, string]>(`SELECT ${CONTACT_COLS} FROM contacts WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))`)
      .all(projectId, JSON.stringify(emails))
    return rows.map(fromRaw)
  }
  const rows = await store.rows<PgContact>(sql`
    SELECT c.* FROM jsonb_array_elements_text(${JSON.stringify([...emails].sort())}::jsonb) AS e(email)
    CROSS JOIN LATERAL (SELECT ${sql.raw(CONTACT_COLS)} FROM contacts WHERE project_id = ${projectId} AND email = e.email LIMIT 1 FOR UPDATE) AS c
    ORDER BY c.email`, db)
  return rows.map(fromPg)
}

/** Inserts the contact unless (project, email) exists; null when another writer got there first. */
export async function insertIfAbsent(store: Store, db: Db, row: ContactRow): Promise<ContactRow | null> {
  // dialect: SQLite insert compiled once on the connection; PostgreSQL through drizzle
  if (store.dialect === 'sqlite') {
    const r = sqliteConnection(db).query(SQLITE_INSERT_IF_ABSENT)
      .run(row.id, row.projectId, row.email, row.subscribed ? 1 : 0, JSON.stringify(row.data), row.createdAt.getTime(), row.updatedAt.getTime())
    return r.changes === 1 ? row : null
  }
  const c = store.t.contacts
  const rows = await db.insert(c).values(row).onConflictDoNothing({ target: [c.projectId, c.email] }).returning()
  return rows[0] ?? null
}

/** Writes subscribed, data and updated_at of `row` (the upsert's update). */
export async function saveState(store: Store, db: Db, row: ContactRow): Promise<void> {
  // dialect: SQLite update compiled once on the connection; PostgreSQL through drizzle
  if (store.dialect === 'sqlite') {
    sqliteConnection(db).query(SQLITE_SAVE_STATE)
      .run(row.subscribed ? 1 : 0, JSON.stringify(row.data), row.updatedAt.getTime(), row.projectId, row.id)
    return
  }
  const c = store.t.contacts
  await db.update(c).set({ subscribed: row.subscribed, data: row.data, updatedAt: row.updatedAt }).where(and(eq(c.projectId, row.projectId), eq(c.id, row.id)))
}

/**
 * `saveState` of many rows (distinct contacts): one statement on PostgreSQL. The `= ANY(ARRAY(...))` of
 * the ids makes it look the rows up by key (the join alone was planned as a scan of every contact).
 */
export async function saveStates(store: Store, db: Db, rows: ContactRow[]): Promise<void> {
  if (!rows.length) return
  // dialect: PostgreSQL updates a batch in one statement; SQLite row by row (compiled statements, no round trips)
  if (store.dialect === 'sqlite') {
    // Each row's statement runs now, in order, before the caller's next statement (upsertManyUnsaved
    // sends this without awaiting it).
    const update = sqliteConnection(db).query(SQLITE_SAVE_STATE)
    for (const row of rows) update.run(row.subscribed ? 1 : 0, JSON.stringify(row.data), row.updatedAt.getTime(), row.projectId, row.id)
    return
  }
  const payload = JSON.stringify(rows.map((r) => ({ id: r.id, project_id: r.projectId, subscribed: r.subscribed, data: r.data, updated_at: r.updatedAt.toISOString() })))
  await store.exec(sql`
    UPDATE contacts AS c SET subscribed = x.subscribed, data = x.data, updated_at = x.updated_at
    FROM jsonb_to_recordset(${payload}::jsonb) AS x(id text, project_id text, subscribed boolean, data jsonb, updated_at timestamptz)
    WHERE c.id = ANY(ARRAY(SELECT jsonb_array_elements(${payload}::jsonb) ->> 'id')) AND c.project_id = x.project_id AND c.id = x.id`, db)
}

/** Inserts many; returns the rows actually inserted (those whose email was free). */
export async function insertManyIfAbsent(store: Store, db: Db, rows: ContactRow[]): Promise<ContactRow[]> {
  if (!rows.length) return []
  // dialect: PostgreSQL inserts a batch in one jsonb_to_recordset statement; SQLite row by row (compiled statements, no round trips)
  if (store.dialect === 'sqlite') {
    // Every row's statement runs now, before the caller's next statement (upsertManyUnsaved reads after it).
    const insert = sqliteConnection(db).query(SQLITE_INSERT_IF_ABSENT)
    return rows.filter((row) => insert.run(row.id, row.projectId, row.email, row.subscribed ? 1 : 0, JSON.stringify(row.data), row.createdAt.getTime(), row.updatedAt.getTime()).changes === 1)
  }
  // One JSON parameter instead of 7 per row: PostgreSQL expands it with jsonb_to_recordset.
  const payload = JSON.stringify(rows.map((r) => ({
    id: r.id, project_id: r.projectId, email: r.email, subscribed: r.subscribed, data: r.data,
    created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString(),
  })))
  const done = new Set((await store.rows<{ email: string }>(sql`
    INSERT INTO contacts (${sql.raw(CONTACT_COLS)})
    SELECT id, project_id, email, subscribed, data, created_at, updated_at
    FROM jsonb_to_recordset(${payload}::jsonb) AS x(id text, project_id text, email text, subscribed boolean, data jsonb, created_at timestamptz, updated_at timestamptz)
    ORDER BY email
    ON CONFLICT (project_id, email) DO NOTHING RETURNING email`, db)).map((r) => r.email))
  return rows.filter((r) => done.has(r.email))
}

export type ContactSet = Partial<Pick<ContactRow, 'email' | 'subscribed' | 'data' | 'updatedAt'>>

export async function updateById(store: Store, db: Db, projectId: string, id: string, set: ContactSet): Promise<ContactRow | null> {
  const c = store.t.contacts
  const [row] = await db.update(c).set(set).where(and(eq(c.projectId, projectId), eq(c.id, id))).returning()
  return row ?? null
}

export async function findById(store: Store, db: Db, projectId: string, id: string, forUpdate = false): Promise<ContactRow | null> {
  // dialect: SQLite look-up compiled once on the connection; PostgreSQL may lock the row (FOR UPDATE)
  if (store.dialect === 'sqlite') {
    // GET /contacts/:id runs this on every call: a statement compiled once on the connection (reader or writer).
    const r = sqliteConnection(db).query<RawContact, [string, string]>(`SELECT ${CONTACT_COLS} FROM contacts WHERE project_id = ? AND id = ?`).get(projectId, id)
    return r ? fromRaw(r) : null
  }
  const c = store.t.contacts
  let q = db.select().from(c).where(and(eq(c.projectId, projectId), eq(c.id, id))).limit(1)
  if (forUpdate) q = locked(store, q)
  const [row] = await q
  return row ?? null
}

export async function findByIds(store: Store, db: Db, projectId: string, ids: string[], forUpdate = false): Promise<ContactRow[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  let q = db.select().from(c).where(and(eq(c.projectId, projectId), inArray(c.id, ids)))
  // In id order: two transactions lock shared rows in the same order (no deadlock on PostgreSQL).
  if (forUpdate) q = locked(store, q.orderBy(asc(c.id)) as typeof q)
  return q
}

export async function deleteById(store: Store, db: Db, projectId: string, id: string): Promise<boolean> {
  const c = store.t.contacts
  const rows = await db.delete(c).where(and(eq(c.projectId, projectId), eq(c.id, id))).returning({ id: c.id })
  return rows.length > 0
}

export async function deleteByIds(store: Store, db: Db, projectId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  const rows = await db.delete(c).where(and(eq(c.projectId, projectId), inArray(c.id, ids))).returning({ id: c.id })
  return rows.map((r) => r.id)
}

/** Sets `subscribed` on those of `ids` whose state differs; returns the ids changed. */
export async function setSubscribed(store: Store, db: Db, projectId: string, ids: string[], subscribed: boolean, now: Date): Promise<string[]> {
  if (!ids.length) return []
  const c = store.t.contacts
  const rows = await db.update(c).set({ subscribed, updatedAt: now })
    .where(and(eq(c.projectId, projectId), inArray(c.id, ids), eq(c.subscribed, !subscribed)))
    .returning({ id: c.id })
  return rows.map((r) => r.id)
}

export async function lookupEmails(store: Store, projectId: string, emails: string[]): Promise<Array<Pick<ContactRow, 'id' | 'email' | 'subscribed'>>> {
  if (!emails.length) return []
  const c = store.t.contacts
  return store.db.select({ id: c.id, email: c.email, subscribed: c.subscribed }).from(c)
    .where(and(eq(c.projectId, projectId), inArray(c.email, emails)))
}

/** True when `err` is a unique-constraint violation (both stores). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown; cause?: unknown } | null
  if (!e) return false
  if (e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_UNIQUE') return true
  if (typeof e.message === 'string' && e.message.includes('UNIQUE constraint failed')) return true
  return e.cause ? isUniqueViolation(e.cause) : false
}
